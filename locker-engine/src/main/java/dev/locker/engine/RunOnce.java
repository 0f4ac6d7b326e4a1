package dev.locker.engine;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockProbe;
import dev.locker.api.LockStatus;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockingException;
import dev.locker.api.Run;
import dev.locker.api.RunRecord;
import dev.locker.api.TemporaryLockingException;
import dev.locker.api.TimeSource;
import dev.locker.spi.LockRecords;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * Run-once on top of leases: a job runs under its lock, and its record is written only while the claim still holds
 * that lock. A run whose record could not be written under the lock is reported lost, never ran.
 *
 * @param <S> what the backend remembers of one claim
 */
final class RunOnce<S extends LockStatus> {

    /** The engine logs under one name, whichever of its classes writes the line. */
    private static final Logger log = LoggerFactory.getLogger(LockerEngine.class);

    /** The locker a lease is of: a lease's calls go to it. */
    private final Locker locker;
    private final LockerConfig config;
    private final TimeSource time;
    /** The driver's records, or null: run-once is then refused. */
    private final LockRecords<S> records;
    private final Steps<S> steps;
    private final Transactions transactions;
    private final Acquiring<S> acquiring;
    private final Closing closing;

    RunOnce(Locker locker, LockerConfig config, LockRecords<S> records, Steps<S> steps, Transactions transactions,
            Acquiring<S> acquiring, Closing closing) {
        this.locker = locker;
        this.config = config;
        this.time = config.timeSource();
        this.records = records;
        this.steps = steps;
        this.transactions = transactions;
        this.acquiring = acquiring;
        this.closing = closing;
    }

    /**
     * Takes the job's lock without waiting; reads the last run's record; runs the task unless that record says it is
     * done (or not due); then writes the record, only while the claim still holds the lock. {@code period} is null
     * for a job that runs once.
     */
    Run run(KeyColumn job, String why, Duration period, Consumer<Lease> task) {
        config.validate(job);
        if (task == null) {
            throw new IllegalArgumentException("task must not be null");
        }
        if (records == null) {
            throw new UnsupportedOperationException("run-once needs a backend that keeps records with its locks; this "
                    + "one keeps none");
        }
        closing.ensureOpen();
        Hold own;
        try {
            own = acquiring.attemptOne(job, why, null, null);
        } catch (TemporaryLockingException e) {
            return e.holder() != null ? new Run(Run.Outcome.BUSY, null, null, e.holder())
                    : new Run(Run.Outcome.UNREACHABLE, null, e, null);
        }
        Object tx = own; // the lease's transaction
        Lease lease = new Lease(locker, List.of(job), tx);
        try (lease) {
            Optional<RunRecord> last;
            try {
                last = steps.step(LockProbe.Step.VERIFY, job, "reading the last run's record",
                        () -> records.readRecord(job, LockRecords.DONE).map(RunRecord::fromBytes));
            } catch (TemporaryLockingException e) {
                return new Run(Run.Outcome.UNREACHABLE, null, e, null);
            }
            if (last.isPresent()) {
                if (period == null) {
                    return new Run(Run.Outcome.ALREADY_DONE, last.get(), null, null);
                }
                Duration since = Duration.between(last.get().startedAt(), time.now());
                Duration slack = period.dividedBy(10);
                if (since.negated().compareTo(slack) > 0) {
                    // dated later than our clock by more than the slack: a clock that was ahead, since corrected, must
                    // not hold the job off until that time comes
                    log.warn("The last run of {} is dated {} by {}, later than this process's clock ({}); running it",
                            job, last.get().startedAt(), last.get().ranBy().rid(), time.now());
                } else if (since.compareTo(period.minus(slack)) < 0) {
                    return new Run(Run.Outcome.NOT_DUE, last.get(), null, null);
                }
            }
            java.time.Instant started = time.now();
            long token = lease.fencingToken();
            try {
                task.accept(lease);
            } catch (RuntimeException e) {
                return new Run(Run.Outcome.FAILED, null, e, null);
            }
            RunRecord done = new RunRecord(token, started, time.now(), config.owner(Claims.whyOf(tx)));
            Hold hold = transactions.holdOf(job, tx);
            try {
                if (hold == null) {
                    throw new ExpiredLockException("the job's transaction was released while it ran", job);
                }
                S holding = steps.requireLive(hold, hold.state(), "recording the run");
                boolean written = steps.step(LockProbe.Step.VERIFY, job, "recording the run",
                        () -> records.writeRecord(job, LockRecords.DONE, done.toBytes(), holding));
                if (!written) {
                    throw new ExpiredLockException("the job's lock was no longer ours when its run was recorded", job);
                }
                // like every step, judged again after its I/O: a write that answered after our deadline (or after a
                // loss) may have landed when another process already held the job (MongoDB, wait-and-read-back check
                // then write); that run is not ours to report
                Hold.State after = hold.state();
                if (after.isFinal() || time.nanoTime() - hold.deadlineOf(after) >= 0) {
                    throw new ExpiredLockException("the job's lock was lost while its run was recorded", job);
                }
            } catch (LockingException e) {
                return new Run(Run.Outcome.LOST, null, e, null);
            }
            return new Run(Run.Outcome.RAN, done, null, null);
        }
    }
}
