package dev.locker.local;

import dev.locker.api.Acquisition;
import dev.locker.api.ExpiredLockException;
import dev.locker.api.ForcedRelease;
import dev.locker.api.Lease;
import dev.locker.api.KeyColumn;
import dev.locker.api.LocalArbitration;
import dev.locker.api.LockInfo;
import dev.locker.api.LockLost;
import dev.locker.api.LockOwner;
import dev.locker.api.LockPage;
import dev.locker.api.LockProbe;
import dev.locker.api.LockStatus;
import dev.locker.api.LockTransaction;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockingException;
import dev.locker.api.PermanentLockingException;
import dev.locker.spi.StoreException;
import dev.locker.api.TemporaryLockingException;
import dev.locker.api.TimeSource;
import dev.locker.api.LossReason;
import dev.locker.api.Run;
import dev.locker.api.RunRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.TreeMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The three-phase template every backend shares. It arbitrates the transactions of this JVM through a
 * {@link LocalLockMediator}, keeps one {@link Hold} per claimed lock, and calls the backend only through a few hooks.
 *
 * <p>Invariants kept here, for every backend:
 * <ul>
 *   <li>one record per claimed lock: the hold is the mediator's entry and the transaction's bookkeeping at once, and
 *       its state (the backend's status, the deadline) is the only truth about whether this process holds the lock;</li>
 *   <li>one clock for validity: a hold's deadline is on the monotonic clock, computed by the backend from one reading
 *       taken before the request that wrote or renewed the claim ({@link #deadline}); it is compared before a step
 *       and again after the step's I/O, so a step that outlived the claim never reports it held;</li>
 *   <li>a hold lost once (taken over locally after its deadline, told by the backend, released, or its locker closed)
 *       stays lost: a write or renewal that completes after that withdraws its claim and fails;</li>
 *   <li>{@link #writeLock} is idempotent per (transaction, lock): the second call does no I/O and does not extend;</li>
 *   <li>{@link #deleteLocks} tries to delete every claim, always frees the mediator, and never throws for a backend
 *       failure (it logs it once; the claim then expires);</li>
 *   <li>every backend failure reaches the caller as a {@link TemporaryLockingException} or
 *       {@link PermanentLockingException} naming the lock, with the original failure as its cause.</li>
 * </ul>
 *
 * @param <S> what the backend remembers of one claim
 */
public abstract class AbstractLocker<S extends LockStatus> implements Locker {

    private static final Logger log = LoggerFactory.getLogger(AbstractLocker.class);

    protected final LockerConfig config;
    protected final TimeSource time;
    protected final LocalLockMediator mediator;
    private final LockProbe probe;
    /** The configured expiry in nanoseconds (read on every claim). */
    private final long expiryNanos;
    /**
     * Told once by each hold when it is lost: one instance for every hold, not a method reference per claim. It names
     * this locker's clock, on which a shared mediator judges our holds' deadlines.
     */
    private final Consumer<Hold> lostSink = new Hold.ClockedSink() {
        @Override
        public void accept(Hold hold) {
            lost(hold);
        }

        @Override
        public TimeSource time() {
            return time;
        }
    };

    /**
     * The holds of each transaction, keyed by the transaction's identity ({@link #keyOf}), in the order they were
     * claimed; not the holds of single-lock leases, which are their own transactions ({@link Hold#ownTransaction}):
     * while one is live it is its lock's mediator entry, which is how {@link #close} finds it.
     */
    private final ConcurrentHashMap<Object, TxHolds> txs = new ConcurrentHashMap<>();
    /**
     * The holds of single-lock leases that were lost and are not finished yet: a lost hold may have stopped being its
     * lock's mediator entry (taken over locally), and {@link #close} must still find it to delete its claim. Losses are
     * rare, so this stays small.
     */
    private final java.util.Set<Hold> lostLeases = ConcurrentHashMap.newKeySet();
    private final AtomicBoolean closed = new AtomicBoolean();

    /**
     * @param config   the settings; the locker runs with {@link LockerConfig#forNewInstance()} of it, so its rid is its own
     * @param mediator the JVM-local arbitration to share with other lockers of this process on the same backend, or
     *                 null for a mediator of this locker's own
     */
    protected AbstractLocker(LockerConfig config, LocalLockMediator mediator) {
        this.config = Objects.requireNonNull(config, "config must not be null").forNewInstance();
        this.time = this.config.timeSource();
        this.probe = this.config.probe();
        this.expiryNanos = saturatedNanos(this.config.expiry());
        this.mediator = mediator != null ? mediator : mediatorOf(this.config);
    }

    /**
     * {@code d} in nanoseconds, saturated at a quarter of the long range (~73 years) either way, so that a monotonic
     * reading plus it cannot overflow (an expiry may be up to {@link LockerConfig#MAX_EXPIRY}, 100 years, beyond it; a
     * holder then believes in its claim for ~73 years, never longer than the claim lives).
     */
    protected static long saturatedNanos(Duration d) {
        try {
            return Math.max(Long.MIN_VALUE / 4, Math.min(Long.MAX_VALUE / 4, d.toNanos()));
        } catch (ArithmeticException overflow) {
            return d.isNegative() ? Long.MIN_VALUE / 4 : Long.MAX_VALUE / 4;
        }
    }

    private static LocalLockMediator mediatorOf(LockerConfig config) {
        LocalArbitration shared = config.localArbitration();
        if (shared == null) {
            return LocalLockMediator.standalone("locker-" + config.rid(), config.timeSource());
        }
        if (!(shared instanceof LocalLockMediator)) {
            throw new IllegalArgumentException("localArbitration must come from another locker of this library "
                    + "(Locker.arbitration()), was " + shared.getClass().getName());
        }
        return (LocalLockMediator) shared;
    }

    @Override
    public LocalArbitration arbitration() {
        return mediator;
    }

    /** From a backend's builder: its effective configuration and mediator. */
    protected AbstractLocker(LockerBuilder<?> builder) {
        this(builder.effectiveConfig(), builder.mediator);
    }

    // ---- the backend's hooks ---------------------------------------------------------------------------------

    /**
     * Writes a claim on {@code lock} in the backend. An atomic backend decides seniority in the same step and returns a
     * held status (then the first checkLocks costs no I/O); when it sees another live holder it removes its own claim
     * and throws {@link TemporaryLockingException} naming that holder. The status's deadline comes from
     * {@link #deadline} with a monotonic reading taken before the request that wrote the claim.
     */
    protected abstract S writeSingleLock(KeyColumn lock, LockOwner owner);

    /**
     * Confirms that the claim {@code status} is the senior live claim on {@code lock}; returns the held status with
     * its fencing token (and the same deadline). Throws {@link TemporaryLockingException} naming the holder when
     * another claim is senior, and {@link ExpiredLockException} when our own claim is dead or gone. Atomic backends,
     * whose {@link #writeSingleLock} always returns a held status or throws, never reach it and need not override it.
     */
    protected S checkSingleLock(KeyColumn lock, S status) {
        throw new IllegalStateException(getClass().getSimpleName() + " grants a claim when it writes it, so a claim that "
                + "is not held cannot be checked: " + status);
    }

    /**
     * For {@link #verifyLocks}: asks the backend, in one round trip and without changing anything, whether the held
     * claim {@code status} is still ours and alive; returns the status (the same deadline) or throws {@link ExpiredLockException} naming the
     * new holder where known.
     */
    protected abstract S verifySingleLock(KeyColumn lock, S status);

    /**
     * Extends the claim's expiry in place (same seniority, same token), only if it is still ours and alive; the
     * returned status carries the new deadline from a reading taken before the renewing request.
     */
    protected abstract S renewSingleLock(KeyColumn lock, S status);

    /** Deletes our claim, only if it is still ours (compare-and-delete). */
    protected abstract void deleteSingleLock(KeyColumn lock, S status);

    /** The owner of the senior live claim on {@code lock}, or empty when it is free. */
    protected abstract Optional<LockOwner> readHolder(KeyColumn lock);

    /** Removes every claim on {@code lock}; true if there was any. */
    protected abstract boolean deleteAllClaims(KeyColumn lock);

    /**
     * For {@link #holding} and a conditional forced release: the senior live claim on {@code lock} as
     * {@link #readHolder} decides it, with its fencing token (0 for a wait-and-read-back claim not confirmed yet) and
     * expiry; empty when the lock is free.
     */
    protected abstract Optional<LockInfo> readHolding(KeyColumn lock);

    /**
     * For a conditional forced release: removes the claim on {@code lock} that carries fencing token {@code token},
     * and no other, and writes {@code record} as the record {@link #FORCED} only if that claim is there; true if it
     * removed it. Atomic with the check where the backend can (then the record is written exactly when the claim is
     * removed); elsewhere the record is written just before a removal conditional on that claim, and may then name a
     * claim that ended on its own in between (never another one).
     */
    protected abstract boolean deleteClaimWithToken(KeyColumn lock, long token, byte[] record);

    /**
     * For {@link #list}: up to {@code limit} live held locks whose key starts with {@code keyPrefix}, after
     * {@code cursor} (null: from the start; else a cursor this backend issued, decoded before any I/O, an
     * {@link IllegalArgumentException} when it is not one). Bounded: O(limit) entries in memory and a bounded number of
     * round trips per call; a page may be short, or empty, with a next cursor. Arguments are validated already.
     */
    protected abstract LockPage listHeld(byte[] keyPrefix, int limit, String cursor);

    /**
     * Writes a claim like {@link #writeSingleLock(KeyColumn, LockOwner)}, for an attempt of the wait {@code waiting}
     * (null for an attempt that does not wait). A backend that queues waiters (Redis) overrides it to put a refused
     * waiter in the lock's queue and to grant no one who arrived later while it waits.
     */
    protected S writeSingleLock(KeyColumn lock, LockOwner owner, Waiting waiting) {
        return writeSingleLock(lock, owner);
    }

    /** A wait begins, before its first attempt: a backend that tells of releases starts listening for them here. */
    protected void startWaiting(Waiting waiting) {
    }

    /**
     * Pauses a waiter after the backend refused {@code refusal}, for at most {@code maxNanos}: returns early where the
     * backend tells of a release. The default sleeps {@code maxNanos} on the time source.
     */
    protected void awaitRelease(Waiting waiting, TemporaryLockingException refusal, long maxNanos)
            throws InterruptedException {
        time.sleep(Duration.ofNanos(maxNanos));
    }

    /**
     * A wait ended ({@code acquired}: with a grant). A backend that queued it removes what is left of it (best
     * effort: a queue entry nobody refreshes lapses on its own).
     */
    protected void stopWaiting(Waiting waiting, boolean acquired) {
    }

    /**
     * True when {@link #awaitRelease} wakes on a release, so a waiter may pause until the holder's claim expires
     * instead of polling with back-off.
     */
    protected boolean toldOfReleases() {
        return false;
    }

    /**
     * Reads the record {@code name} kept with {@code lock}, or empty. A record is not a claim: releases, expiry and
     * forced releases leave it alone; it is gone only when the backend loses the lock's data. {@code name} is one of
     * this library's constants (lower-case letters), never a user's string.
     */
    protected abstract Optional<byte[]> readRecord(KeyColumn lock, String name);

    /**
     * Writes the record {@code name} of {@code lock}, only while {@code holding} (a held status of this locker on
     * {@code lock}) is still the holder, and never over a record written under a higher fencing token; false when
     * the claim no longer holds the lock (nothing written). Atomic with that check where the backend can (Redis,
     * HBase); elsewhere checked just before, with the token guard against a late writer.
     */
    protected abstract boolean writeRecord(KeyColumn lock, String name, byte[] value, S holding);

    /** Writes the record {@code name} of {@code lock} whoever holds it (an operator's record: a forced release). */
    protected abstract void putRecord(KeyColumn lock, String name, byte[] value);

    /** Releases connections and threads of the backend; called once by {@link #close()}. */
    protected void closeBackend() {
    }

    /**
     * Maps a backend's own failure to the exception hierarchy. Backends override it for their client's exception
     * types and call {@code super} for the rest.
     */
    protected LockingException translate(RuntimeException e, KeyColumn lock, String action) {
        if (e instanceof LockingException) {
            return (LockingException) e;
        }
        if (e instanceof StoreException) {
            return ((StoreException) e).isTemporary()
                    ? new TemporaryLockingException(action + " failed temporarily: " + e.getMessage(), lock, null, e)
                    : new PermanentLockingException(action + " failed: " + e.getMessage(), lock, null, e);
        }
        return new PermanentLockingException(action + " failed unexpectedly: " + e, lock, null, e);
    }

    /**
     * The deadline of a claim whose lifetime on the deciding clock is {@code validity}, counted from {@code startNanos},
     * a monotonic reading of this locker's time source taken before the request that wrote or renewed the claim. One
     * percent of the validity is kept back for the rate at which two hosts' clocks may drift apart meanwhile.
     */
    protected final long deadline(long startNanos, Duration validity) {
        long nanos = saturatedNanos(validity);
        return startNanos + Math.max(0, nanos - nanos / 100);
    }

    // ---- the contract -----------------------------------------------------------------------------------------

    @Override
    public void writeLock(KeyColumn lock, Object tx) {
        config.validate(lock);
        if (tx == null) {
            throw new IllegalArgumentException("tx must not be null");
        }
        if (leaseHold(tx) != null) {
            throw new IllegalArgumentException("transaction " + tx + " belongs to a single-lock lease, which holds its "
                    + "one lock only; claim locks under a transaction of your own");
        }
        ensureOpen();
        claim(lock, tx, null);
    }

    /** {@link #writeLock} of a validated lock, for an attempt of the wait {@code waiting} (null: no wait). */
    private void claim(KeyColumn lock, Object tx, Waiting waiting) {
        Object key = keyOf(tx);
        TxHolds holds = txs.get(key);
        if (holds == null) { // get, then putIfAbsent: no reservation node and no lambda when the transaction is new
            TxHolds fresh = new TxHolds();
            holds = txs.putIfAbsent(key, fresh);
            if (holds == null) {
                holds = fresh;
            }
        }
        if (holds.find(lock) != null) {
            return; // idempotent: no I/O, no extension
        }
        Hold hold = new Hold(lock, tx, time.nanoTime() + expiryNanos, lostSink, time.now());
        claim(hold, key, holds, waiting);
    }

    /**
     * The steps of {@link #writeLock} once the hold is made: takes the mediator entry, writes the claim, records the
     * status. {@code holds} is null for a hold that is its own transaction (it is in no transaction's record).
     */
    private void claim(Hold hold, Object key, TxHolds holds, Waiting waiting) {
        KeyColumn lock = hold.lock;
        Object tx = hold.tx;
        if (!takeLocal(hold, expiryNanos)) {
            if (holds != null) {
                forgetIfEmpty(key, holds);
            }
            Object other = mediator.holder(lock).orElse("another transaction");
            LockOwner localHolder = new LockOwner(config.rid(), config.host(), config.pid(), "", whyOf(other), null);
            throw new TemporaryLockingException("lock is held by " + other + " in this process (local contention, "
                    + "no store I/O done)", lock, localHolder, null);
        }
        if (holds != null) {
            holds.add(hold);
        }
        // deleteLocks of this transaction, or close, ran meanwhile (close finds a lease's own hold by its mediator
        // entry, taken above: it either saw the entry or closed before this read)
        if ((holds != null && txs.get(key) != holds) || closed.get()) {
            hold.release();
            mediator.release(hold);
            throw new IllegalStateException(closed.get() ? this + " was closed while " + tx + " claimed " + lock
                    : "transaction " + tx + " was released while it claimed " + lock);
        }
        Hold.State claiming = hold.state();
        S status;
        try {
            status = write(lock, whyOf(tx), waiting);
        } catch (RuntimeException | Error e) { // a locking failure, a probe's, a backend's Error: the entry goes too
            drop(key, holds, hold);
            throw e;
        }
        String problem = null;
        if (status.isHeld() && time.nanoTime() - status.deadlineNanos() >= 0) {
            problem = "our claim's validity ended before the grant reached us (the write took longer than the expiry "
                    + config.expiry() + ")";
        } else if (!hold.update(claiming, status, false)) {
            problem = "while our claim was written, " + hold.state().lostWhy();
        }
        if (problem != null) {
            hold.lose(LossReason.EXPIRED, problem);
            withdraw(lock, status, problem);
            drop(key, holds, hold);
            throw new ExpiredLockException(problem + "; our claim was withdrawn", lock, null, null);
        }
        if (status.isHeld()) {
            probe.acquired(lock, config.rid());
        }
        KeepAlive k = background;
        if (k != null) {
            k.watch(hold); // a listener added while the claim was written watched the provisional deadline
        }
    }

    // ---- leases: acquire, and wait -------------------------------------------------------------------------------

    @Override
    public Lease acquire(KeyColumn lock, String why) {
        config.validate(lock);
        return attempt(List.of(lock), why, null);
    }

    @Override
    public Lease acquireAll(Collection<KeyColumn> locks, String why) {
        return attempt(canonical(locks), why, null);
    }

    @Override
    public Optional<Lease> tryAcquire(KeyColumn lock, String why, Duration maxWait) {
        return acquireWithin(lock, why, maxWait).leaseOrThrowRefusal();
    }

    @Override
    public Acquisition acquireWithin(KeyColumn lock, String why, Duration maxWait) {
        config.validate(lock);
        return waitFor(List.of(lock), why, maxWait);
    }

    @Override
    public Optional<Lease> tryAcquireAll(Collection<KeyColumn> locks, String why, Duration maxWait) {
        return waitFor(canonical(locks), why, maxWait).leaseOrThrowRefusal();
    }

    // ---- run once, and at most once per period -------------------------------------------------------------------

    /** The name of the record a finished run leaves with its job's lock. */
    protected static final String DONE = "done";
    /** The name of the record a forced release leaves. */
    protected static final String FORCED = "forced";
    /** The longest reason a forced release records. */
    private static final int MAX_REASON_CHARS = 1000;

    @Override
    public Run runOnce(KeyColumn job, String why, Consumer<Lease> task) {
        return run(job, why, null, task);
    }

    @Override
    public Run runAtMostOncePer(KeyColumn job, Duration period, String why, Consumer<Lease> task) {
        if (period == null || period.isZero() || period.isNegative()) {
            throw new IllegalArgumentException("period must be positive, was " + period);
        }
        return run(job, why, period, task);
    }

    /**
     * Takes the job's lock without waiting; reads the last run's record; runs the task unless that record says it is
     * done (or not due); then writes the record, only while the claim still holds the lock.
     */
    private Run run(KeyColumn job, String why, Duration period, Consumer<Lease> task) {
        config.validate(job);
        if (task == null) {
            throw new IllegalArgumentException("task must not be null");
        }
        ensureOpen();
        Hold own;
        try {
            own = attemptOne(job, why, null);
        } catch (TemporaryLockingException e) {
            return e.holder() != null ? new Run(Run.Outcome.BUSY, null, null, e.holder())
                    : new Run(Run.Outcome.UNREACHABLE, null, e, null);
        }
        Object tx = own; // the lease's transaction
        Lease lease = new Lease(this, List.of(job), tx);
        try (lease) {
            Optional<RunRecord> last;
            try {
                last = step(LockProbe.Step.VERIFY, job, "reading the last run's record",
                        () -> readRecord(job, DONE).map(RunRecord::fromBytes));
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
            RunRecord done = new RunRecord(token, started, time.now(), config.owner(whyOf(tx)));
            Hold hold = holdOf(job, tx);
            try {
                if (hold == null) {
                    throw new ExpiredLockException("the job's transaction was released while it ran", job);
                }
                S holding = requireLive(hold, hold.state(), "recording the run");
                boolean written = step(LockProbe.Step.VERIFY, job, "recording the run",
                        () -> writeRecord(job, DONE, done.toBytes(), holding));
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

    /** The locks in one canonical order (encoded bytes, unsigned), validated, without repeats. */
    private List<KeyColumn> canonical(Collection<KeyColumn> locks) {
        if (locks == null || locks.isEmpty()) {
            throw new IllegalArgumentException("locks must not be empty");
        }
        TreeMap<byte[], KeyColumn> ordered = new TreeMap<>(Arrays::compareUnsigned);
        for (KeyColumn l : locks) {
            config.validate(l);
            ordered.put(l.encoded(), l);
        }
        return List.copyOf(ordered.values());
    }

    /**
     * One attempt of a new lease on {@code locks} (validated, canonical), for the wait {@code waiting} (null: none):
     * a single lock's lease is its hold ({@link #attemptOne}), several are claimed under a {@link LockTransaction}.
     */
    private Lease attempt(List<KeyColumn> locks, String why, Waiting waiting) {
        if (locks.size() == 1) {
            return new Lease(this, locks, attemptOne(locks.get(0), why, waiting));
        }
        return attempt(locks, new LockTransaction(why), waiting);
    }

    /** One attempt: claims every lock for {@code tx}, checks them, keeps them alive; all or nothing. */
    private Lease attempt(List<KeyColumn> locks, LockTransaction tx, Waiting waiting) {
        try {
            for (int i = 0, n = locks.size(); i < n; i++) { // no iterator per attempt
                ensureOpen(); // as writeLock
                claim(locks.get(i), tx, waiting);
            }
            checkLocks(tx);
            keepAlive(tx, true);
        } catch (RuntimeException e) {
            deleteLocks(tx);
            throw e;
        }
        return new Lease(this, locks, tx);
    }

    /**
     * {@link #attempt} for one lock: the same steps (claim, check, keep alive; all or nothing), with a hold that is
     * its own transaction, so the lease costs no transaction object, no record of its holds and no map entry.
     */
    private Hold attemptOne(KeyColumn lock, String why, Waiting waiting) {
        ensureOpen();
        Hold hold = Hold.forLease(lock, why, time.nanoTime() + expiryNanos, lostSink, time.now());
        try {
            claim(hold, null, null, waiting);
            ensureOpen(); // as checkLocks
            hold.lockSteps();
            try {
                confirm(hold, false);
            } finally {
                hold.unlockSteps();
            }
            ensureOpen(); // as keepAlive
            KeepAlive k = background();
            k.start(hold);
            k.watch(hold);
        } catch (RuntimeException e) {
            deleteLocks(hold);
            throw e;
        }
        return hold;
    }

    /**
     * The one waiting loop: attempts of one transaction, which a queueing backend knows as one waiter, while they
     * fail temporarily and {@code maxWait} lasts; a permanent failure ends it at once. Between attempts it pauses
     * until the backend tells of a release, or else for a jittered back-off doubling from 5 to 200 ms, never past
     * the moment the holder's claim expires (when the refusal said) nor past {@code maxWait}. A refusal from another
     * transaction of this process waits for its release here, in the process.
     */
    private Acquisition waitFor(List<KeyColumn> locks, String why, Duration maxWait) {
        Acquisition acquisition = waitLoop(locks, why, maxWait);
        probe.waited(acquisition, config.rid());
        return acquisition;
    }

    private Acquisition waitLoop(List<KeyColumn> locks, String why, Duration maxWait) {
        if (maxWait == null || maxWait.isNegative()) {
            throw new IllegalArgumentException("maxWait must be zero or positive, was " + maxWait);
        }
        ensureOpen();
        long start = time.nanoTime();
        long deadline = start + saturatedNanos(maxWait); // a wait of centuries means "until granted", not overflow
        // several locks: one transaction for every attempt (one waiter to a backend that queues waiters); one lock:
        // a lease's own hold per attempt, the same waiter
        LockTransaction tx = locks.size() == 1 ? null : new LockTransaction(why);
        Waiting waiting = new Waiting(locks, maxWait.isZero());
        boolean acquired = false;
        try {
            if (!waiting.once) {
                startWaiting(waiting);
            }
            long pauseMillis = 5;
            for (int attempts = 1; ; attempts++) {
                TemporaryLockingException last;
                try {
                    Lease lease = tx == null ? attempt(locks, why, waiting) : attempt(locks, tx, waiting);
                    acquired = true;
                    return new Acquisition(Acquisition.Outcome.ACQUIRED, lease, null, attempts, since(start));
                } catch (PermanentLockingException e) {
                    return new Acquisition(Acquisition.Outcome.REFUSED, null, e, attempts, since(start));
                } catch (TemporaryLockingException e) {
                    last = e;
                }
                long left = deadline - time.nanoTime();
                boolean interrupted = false;
                if (left > 0) {
                    long jittered = ThreadLocalRandom.current().nextLong(pauseMillis / 2, pauseMillis + 1);
                    long pause = Math.min(left, Duration.ofMillis(jittered).toNanos());
                    Optional<Duration> expires = last.holderExpiresIn();
                    boolean local = last.lock() != null && mediator.holder(last.lock()).isPresent();
                    if (!local && toldOfReleases() && expires.isPresent()) {
                        // woken by a release before (saturated: a holder whose clock runs far ahead may report
                        // an expiry beyond the nanosecond range)
                        pause = Math.min(left, saturatedNanos(expires.get()) + 1_000_000);
                    } else if (expires.isPresent()) {
                        pause = Math.min(pause, saturatedNanos(expires.get()) + 1_000_000);
                    }
                    try {
                        if (local) {
                            mediator.awaitRelease(last.lock(), pause);
                        } else {
                            awaitRelease(waiting, last, pause);
                        }
                    } catch (InterruptedException ie) {
                        Thread.currentThread().interrupt();
                        interrupted = true;
                    }
                    pauseMillis = Math.min(pauseMillis * 2, 200);
                }
                if (left <= 0 || interrupted || isClosed()) {
                    Acquisition.Outcome outcome = last.holder() != null ? Acquisition.Outcome.BUSY
                            : Acquisition.Outcome.UNREACHABLE;
                    return new Acquisition(outcome, null, last, attempts, since(start));
                }
            }
        } finally {
            if (!waiting.once) {
                try {
                    stopWaiting(waiting, acquired);
                } catch (RuntimeException e) {
                    log.debug("Could not end the wait for {} cleanly (locker {}): {}", locks, config.rid(), e.toString());
                }
            }
        }
    }

    private Duration since(long startNanos) {
        return Duration.ofNanos(time.nanoTime() - startNanos);
    }

    /**
     * One wait of {@link #tryAcquire}, {@link #acquireWithin} or {@link #tryAcquireAll}: its attempts, under one
     * transaction, are one waiter to a backend that queues waiters. {@link #id()} is unique in this JVM; a backend
     * adds its own instance id to make it unique across processes.
     */
    protected static final class Waiting {
        private static final AtomicLong SEQ = new AtomicLong();

        private final long id = SEQ.incrementAndGet();
        private final List<KeyColumn> locks;
        private final boolean once;
        /** What the backend keeps for this wait between its hooks (e.g. its release listeners). */
        public volatile Object backendState;

        Waiting(List<KeyColumn> locks, boolean once) {
            this.locks = locks;
            this.once = once;
        }

        public long id() {
            return id;
        }

        /** The locks waited for, in canonical order. */
        public List<KeyColumn> locks() {
            return locks;
        }

        /** True when the wait makes one attempt only (no time to wait): nothing needs to be queued. */
        public boolean once() {
            return once;
        }
    }

    @Override
    public void checkLocks(Object tx) {
        confirm(tx, false);
    }

    @Override
    public void verifyLocks(Object tx) {
        confirm(tx, true);
    }

    /** checkLocks (confirmed claims cost no I/O) or verifyLocks (they are asked about again). */
    private void confirm(Object tx, boolean askAgain) {
        ensureOpen();
        for (Hold hold : holdsOf(tx)) { // a snapshot: the array is never changed in place
            hold.lockSteps();
            try {
                confirm(hold, askAgain);
            } finally {
                hold.unlockSteps();
            }
        }
    }

    private void confirm(Hold hold, boolean askAgain) {
        Hold.State s = hold.state();
        S status = requireLive(hold, s, "checking");
        if (status.isHeld() && !askAgain) {
            if (!s.reported() && !hold.update(s, status, true)) {
                requireLive(hold, hold.state(), "checking");
            }
            return; // confirmed (or granted when written): no I/O
        }
        S checked = status.isHeld()
                ? step(LockProbe.Step.VERIFY, hold.lock, "verifying a claim", () -> verifySingleLock(hold.lock, status), hold)
                : step(LockProbe.Step.CHECK, hold.lock, "checking a claim", () -> checkSingleLock(hold.lock, status), hold);
        String problem = null;
        if (time.nanoTime() - hold.deadlineOf(s) >= 0) {
            problem = "our claim's validity ended while it was checked";
        } else if (!hold.update(s, checked, true)) { // only a final state gets in between (steps are serialised)
            problem = "while our claim was checked, " + hold.state().lostWhy();
        }
        if (problem != null) {
            hold.lose(LossReason.EXPIRED, problem);
            if (!status.isHeld()) {
                withdraw(hold.lock, checked, problem); // the check may have (re)written our claim with a token
            }
            throw new ExpiredLockException(problem + "; release the transaction's locks and start again", hold.lock,
                    null, null, hold.state().reason());
        }
        if (!status.isHeld() && checked.isHeld()) {
            probe.acquired(hold.lock, config.rid());
        }
    }

    @Override
    public void renewLocks(Object tx) {
        ensureOpen();
        for (Hold hold : holdsOf(tx)) {
            renew(hold);
        }
    }

    private void renew(Hold hold) {
        hold.lockSteps();
        try {
            renewLocked(hold);
        } finally {
            hold.unlockSteps();
        }
    }

    private void renewLocked(Hold hold) {
        Hold.State s = hold.state();
        S status = requireLive(hold, s, "renewing");
        S renewed = step(LockProbe.Step.RENEW, hold.lock, "renewing a claim", () -> renewSingleLock(hold.lock, status), hold);
        String problem = null;
        long now = time.nanoTime();
        if (now - hold.deadlineOf(s) >= 0) {
            // Answered after our former deadline: the claim may have been judged dead meanwhile (and a claimant may be
            // about to scrub it), so the renewal cannot count, even if the backend accepted it. A renewal that answers
            // before it landed while the claim was alive on every clock that agrees with ours.
            problem = "the renewal answered after our former deadline";
        } else if (now - renewed.deadlineNanos() >= 0) {
            problem = "the renewal's validity ended before its answer reached us";
        } else if (!hold.update(s, renewed, s.reported())) { // only a final state gets in between (steps are serialised)
            problem = "while our claim was renewed, " + hold.state().lostWhy();
        }
        if (problem != null) {
            hold.lose(LossReason.EXPIRED, problem);
            withdraw(hold.lock, renewed, problem);
            throw new ExpiredLockException(problem + "; release the transaction's locks and start again", hold.lock,
                    null, null, LossReason.EXPIRED);
        }
        KeepAlive k = background;
        if (k != null) {
            k.watch(hold);
        }
    }

    @Override
    public void deleteLocks(Object tx) {
        if (tx == null) {
            return;
        }
        Hold own = leaseHold(tx);
        if (own != null) {
            if (own.markDone()) { // as the removal of a transaction's record below: once
                KeepAlive keepAlive = this.background;
                if (keepAlive != null) {
                    keepAlive.stop(own);
                }
                finish(own, own.release());
                lostLeases.remove(own);
            }
            return;
        }
        TxHolds holds = txs.remove(keyOf(tx));
        if (holds == null) {
            return;
        }
        KeepAlive keepAlive = this.background;
        if (keepAlive != null) {
            keepAlive.stop(holds);
        }
        for (Hold hold : holds.all()) {
            finish(hold, hold.release());
        }
    }

    /**
     * Deletes the claim of a hold just made final. A step in flight on it (a keep-alive renewal, a check) ends first,
     * so that a rewrite it sends cannot land after our delete and revive the claim; that step then finds the hold
     * final and withdraws what it wrote.
     */
    private void finish(Hold hold, Hold.State before) {
        hold.lockSteps();
        try {
            releaseHold(hold, before);
        } finally {
            hold.unlockSteps();
        }
    }

    /**
     * Deletes the claim a hold had (if any) and frees its mediator entry, unless its claim is still being written (then
     * the claiming thread frees it); logs a backend failure.
     */
    @SuppressWarnings("unchecked")
    private void releaseHold(Hold hold, Hold.State before) {
        try {
            if (before.status() != null && before.phase() != Hold.Phase.RELEASED) {
                S status = (S) before.status();
                // step(RELEASE, ...) written out: no capturing lambda per release
                probe.before(LockProbe.Step.RELEASE, hold.lock, config.rid());
                try {
                    deleteSingleLock(hold.lock, status);
                    probe.after(LockProbe.Step.RELEASE, hold.lock, config.rid(), null);
                } catch (RuntimeException e) {
                    LockingException t = translate(e, hold.lock, "deleting a claim");
                    probe.after(LockProbe.Step.RELEASE, hold.lock, config.rid(), t);
                    throw t;
                }
            }
        } catch (LockingException ex) {
            log.warn("Could not delete our claim on {} (locker {}); it expires on its own: {}", hold.lock, config.rid(),
                    ex.getMessage(), ex);
        } finally {
            if (before.phase() != Hold.Phase.CLAIMING) {
                mediator.release(hold);
            } // else its claim is being written: the claiming thread drops the entry once the write answered (after
              // withdrawing what it wrote), and a close waits for that (awaitOperationsInFlight)
            KeepAlive k = background;
            if (k != null) { // made on first use: without it nothing watches this hold
                k.unwatch(hold);
            }
        }
    }

    @Override
    public Optional<LockStatus> status(KeyColumn lock, Object tx) {
        ensureOpen();
        Hold hold = holdOf(lock, tx);
        if (hold == null) {
            return Optional.empty();
        }
        Hold.State s = hold.state();
        return s.isFinal() ? Optional.empty() : Optional.ofNullable(s.status());
    }

    @Override
    public long fencingToken(KeyColumn lock, Object tx) {
        ensureOpen();
        Hold hold = holdOf(lock, tx);
        if (hold == null) {
            throw new IllegalStateException("transaction " + tx + " has not claimed lock " + lock);
        }
        S status = requireLive(hold, hold.state(), "reading the fencing token of");
        if (!status.isHeld()) {
            throw new IllegalStateException("lock " + lock + " is claimed but not checked yet: call checkLocks first");
        }
        return status.fencingToken();
    }

    @Override
    public Optional<LockOwner> holder(KeyColumn lock) {
        config.validate(lock);
        ensureOpen();
        try {
            return readHolder(lock);
        } catch (RuntimeException e) {
            throw translate(e, lock, "reading the holder");
        }
    }

    @Override
    public Optional<LockInfo> holding(KeyColumn lock) {
        config.validate(lock);
        ensureOpen();
        try {
            return readHolding(lock);
        } catch (RuntimeException e) {
            throw translate(e, lock, "reading the holder");
        }
    }

    /**
     * Reads the holder, writes the record of the release, then removes every claim: a failure before the removal
     * leaves the lock as it was. Not atomic: a holder that came in between is released too, and learns GONE.
     */
    @Override
    public boolean forceRelease(KeyColumn lock, String reason) {
        return forceRelease(lock, reason, null);
    }

    /** The conditional form: see {@link #deleteClaimWithToken} for what is atomic. */
    @Override
    public boolean forceRelease(KeyColumn lock, String reason, long expectedToken) {
        if (expectedToken < 1) {
            throw new IllegalArgumentException("expectedToken must be a holder's fencing token (positive), was "
                    + expectedToken);
        }
        return forceRelease(lock, reason, Long.valueOf(expectedToken));
    }

    /** Both forms of forceRelease: {@code expected} null removes every claim, else only the claim with that token. */
    private boolean forceRelease(KeyColumn lock, String reason, Long expected) {
        config.validate(lock);
        String why = reason == null ? "" : reason;
        if (why.length() > MAX_REASON_CHARS) {
            throw new IllegalArgumentException("reason must be at most " + MAX_REASON_CHARS + " characters, was "
                    + why.length());
        }
        ensureOpen();
        String said = why.isEmpty() ? "(no reason given)" : why.replaceAll("\\p{Cntrl}", " ");
        try {
            // the holder and its token go into the record: the token tells the claim taken from that holder's others
            Optional<LockInfo> holding = readHolding(lock);
            if (expected != null && (holding.isEmpty() || holding.get().fencingToken() != expected)) {
                log.info("Did not force-release lock {} by locker {}: its holder is {}, not the claim with token {} "
                        + "({})", lock, config.rid(), holding.map(h -> h.holder().rid() + " (token "
                        + h.fencingToken() + ")").orElse("none"), expected, said);
                return false;
            }
            LockOwner released = holding.map(LockInfo::holder).orElse(null);
            long releasedToken = holding.map(h -> Math.max(0, h.fencingToken())).orElse(0L); // 0: not confirmed yet
            byte[] record = new ForcedRelease(config.owner(why), why, time.now(), released, releasedToken).toBytes();
            boolean any;
            if (expected == null) {
                putRecord(lock, FORCED, record);
                any = deleteAllClaims(lock);
            } else {
                any = deleteClaimWithToken(lock, expected, record);
            }
            log.warn("Force-released lock {} ({}: {}, holder: {}) by locker {}: {}", lock,
                    expected == null ? "claims found" : "claim with token " + expected + " removed", any,
                    released == null ? "none" : released.rid(), config.rid(), said);
            return any;
        } catch (RuntimeException e) {
            throw translate(e, lock, "force-releasing");
        }
    }

    @Override
    public Optional<ForcedRelease> lastForcedRelease(KeyColumn lock) {
        config.validate(lock);
        ensureOpen();
        try {
            return readRecord(lock, FORCED).map(ForcedRelease::fromBytes);
        } catch (RuntimeException e) {
            throw translate(e, lock, "reading the last forced release");
        }
    }

    @Override
    public Optional<RunRecord> lastRun(KeyColumn job) {
        config.validate(job);
        ensureOpen();
        try {
            return readRecord(job, DONE).map(RunRecord::fromBytes);
        } catch (RuntimeException e) {
            throw translate(e, job, "reading the last run's record");
        }
    }

    /**
     * Validates the arguments (before any I/O), checks that the locker is open, and asks the backend's
     * {@link #listHeld}; a backend failure is translated like every other call's.
     */
    @Override
    public final LockPage list(byte[] keyPrefix, int limit, String cursor) {
        if (keyPrefix == null) {
            throw new IllegalArgumentException("keyPrefix must not be null (use an empty prefix to list every lock)");
        }
        if (limit < 1 || limit > MAX_LIST_LIMIT) {
            throw new IllegalArgumentException("limit must be 1.." + MAX_LIST_LIMIT + ", was " + limit);
        }
        if (keyPrefix.length > config.maxKeyBytes()) {
            throw new IllegalArgumentException("keyPrefix is " + keyPrefix.length + " bytes; no lock key is longer than "
                    + "maxKeyBytes=" + config.maxKeyBytes());
        }
        if (cursor != null && cursor.isEmpty()) {
            throw new IllegalArgumentException("cursor must be null (first page) or a cursor a page returned, not empty");
        }
        ensureOpen();
        try {
            return listHeld(keyPrefix.clone(), limit, cursor);
        } catch (IllegalArgumentException badCursor) {
            throw badCursor; // the caller's argument, refused by the backend before any I/O
        } catch (RuntimeException e) {
            throw translate(e, null, "listing held locks");
        }
    }

    @Override
    public String rid() {
        return config.rid();
    }

    @Override
    public LockerConfig config() {
        return config;
    }

    /**
     * Marks every open hold lost ("the locker was closed"), deletes their claims (best effort), then closes the
     * backend. Idempotent.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        for (Object key : new ArrayList<>(txs.keySet())) {
            TxHolds holds = txs.remove(key);
            if (holds != null) {
                for (Hold hold : holds.all()) {
                    finish(hold, hold.lose(LossReason.LOCKER_CLOSED, "the locker was closed"));
                }
            }
        }
        // the holds of single-lock leases: each live one is its lock's mediator entry (a claim under way saw the flag
        // above after taking its entry, or took it before this looks), a lost one may be in lostLeases instead
        mediator.forEachHold(hold -> {
            if (hold.ownTransaction() && hold.reportsTo(lostSink)) {
                closeLease(hold);
            }
        });
        for (Hold hold : lostLeases.toArray(new Hold[0])) {
            closeLease(hold);
        }
        awaitOperationsInFlight();
        synchronized (this) {
            if (background != null) {
                background.close(); // after the losses above were handed to it: their listeners are told, then it stops
            }
        }
        closeBackend();
    }

    /** How long {@link #close} waits for other threads' operations in flight on this locker's claims. */
    static final long CLOSE_WAIT_NANOS = TimeUnit.SECONDS.toNanos(5);

    /**
     * Part of {@link #close}: waits, a bounded time ({@link #CLOSE_WAIT_NANOS}, on the system clock: a wall-time bound
     * whatever time source the locker runs on), until no mediator entry of this locker is left. Once close released
     * what it could, an entry left is an operation of another thread in flight: a release it finishes (a lease's close
     * or a deleteLocks that started first), or a claim under way that will withdraw on seeing the locker closed. Each
     * removes its entry only after its backend I/O, so waiting for the entries keeps closeBackend from cutting the
     * ground from under them (the claim would stay in the store until it expired). Waits on each hold's steps lock
     * (reentrant: a probe or listener closing the locker from inside a step of its own does not wait for itself).
     */
    private void awaitOperationsInFlight() {
        long end = System.nanoTime() + CLOSE_WAIT_NANOS;
        List<Hold> left = new ArrayList<>();
        try {
            while (true) {
                left.clear();
                mediator.forEachHold(hold -> {
                    if (hold.reportsTo(lostSink)) {
                        left.add(hold);
                    }
                });
                left.removeIf(Hold::stepsHeldByMe); // this thread's own step, closing from inside it
                long now = System.nanoTime();
                if (left.isEmpty() || now - end >= 0) {
                    if (!left.isEmpty()) {
                        log.warn("Locker {} closed with {} operation(s) on its claims still in flight after {}: their "
                                + "claims are left to expire ({})", config.rid(), left.size(),
                                Duration.ofNanos(CLOSE_WAIT_NANOS), left.get(0).lock);
                    }
                    return;
                }
                for (Hold hold : left) {
                    long wait = end - System.nanoTime();
                    if (wait > 0 && hold.lockSteps(wait)) {
                        hold.unlockSteps(); // a step in flight on it ended
                    }
                }
                Thread.sleep(1); // its entry goes after the step: look again
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // close goes on: what is in flight is left to expire
        }
    }

    /** {@link #close} for a hold that is its own transaction, unless a release or close finishes it already. */
    private void closeLease(Hold hold) {
        if (hold.markDone()) {
            finish(hold, hold.lose(LossReason.LOCKER_CLOSED, "the locker was closed"));
            lostLeases.remove(hold);
        }
    }

    protected boolean isClosed() {
        return closed.get();
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "[rid=" + config.rid() + "]";
    }

    // ---- helpers ------------------------------------------------------------------------------------------------

    /**
     * {@link ClaimStatus#granted} without copying {@code claimId}, for a backend on a hot path that made the bytes for
     * this claim alone and never changes them afterwards.
     */
    protected static ClaimStatus grantedOwning(byte[] claimId, long fencingToken, long deadlineNanos) {
        return ClaimStatus.grantedOwning(claimId, fencingToken, deadlineNanos);
    }

    /**
     * A granted claim whose id is {@link #countedClaimId countedClaimId(sharedPrefix, counter)}, kept without bytes of
     * its own (see {@link ClaimStatus}): {@code sharedPrefix} is never changed afterwards.
     */
    protected static ClaimStatus grantedCounted(byte[] sharedPrefix, long counter, long fencingToken,
                                                long deadlineNanos) {
        return ClaimStatus.grantedCounted(sharedPrefix, counter, fencingToken, deadlineNanos);
    }

    /** The claim id {@code prefix} followed by {@code counter} as 16 lower-case hex digits (a new array). */
    protected static byte[] countedClaimId(byte[] prefix, long counter) {
        return ClaimStatus.countedId(prefix, counter);
    }

    /**
     * {@link ClaimStatus#claimId} without the copy where it can, for a backend that only sends the bytes (and never
     * changes them).
     */
    protected static byte[] claimIdOf(ClaimStatus status) {
        return status.claimIdShared();
    }

    /**
     * The reason recorded with a transaction's claims: the {@link LockTransaction}'s (or a single-lock lease's), or the
     * configured default.
     */
    protected static String whyOf(Object tx) {
        if (tx instanceof LockTransaction) {
            return ((LockTransaction) tx).why();
        }
        return tx instanceof Hold && ((Hold) tx).ownTransaction() ? ((Hold) tx).why : "";
    }

    /** Takes the mediator entry, waiting up to {@code localWait} (on the monotonic clock) for another transaction. */
    private boolean takeLocal(Hold hold, long expiryNanos) {
        if (mediator.take(hold)) {
            return true; // the common case reads no clock
        }
        long deadline = time.nanoTime() + saturatedNanos(config.localWait());
        long pauseMillis = 1;
        while (true) {
            long left = deadline - time.nanoTime();
            if (left <= 0) {
                return false;
            }
            try {
                time.sleep(Duration.ofNanos(Math.min(left, Duration.ofMillis(pauseMillis).toNanos())));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
            pauseMillis = Math.min(pauseMillis * 2, 50);
            // the hold's deadline counts from the take that makes it the entry, not from before the wait: a hold
            // that waited longer than the expiry would be the entry already past it, and taken over at once
            hold.restartProvisionalDeadline(time.nanoTime() + expiryNanos);
            if (mediator.take(hold)) {
                return true;
            }
        }
    }

    /** The write step of {@link #writeLock}: {@link #step} written out, so the hot path makes no lambda per claim. */
    private S write(KeyColumn lock, String why, Waiting waiting) {
        probe.before(LockProbe.Step.WRITE, lock, config.rid());
        try {
            S result = writeSingleLock(lock, config.owner(why), waiting);
            probe.after(LockProbe.Step.WRITE, lock, config.rid(), null);
            return result;
        } catch (RuntimeException e) {
            LockingException t = translate(e, lock, "writing a claim");
            probe.after(LockProbe.Step.WRITE, lock, config.rid(), t);
            throw t;
        }
    }

    /** Runs one backend step between the probe's two calls, translating its failure. */
    private <T> T step(LockProbe.Step step, KeyColumn lock, String action, Supplier<T> op) {
        probe.before(step, lock, config.rid());
        try {
            T result = op.get();
            probe.after(step, lock, config.rid(), null);
            return result;
        } catch (RuntimeException e) {
            LockingException t = translate(e, lock, action);
            probe.after(step, lock, config.rid(), t);
            throw t;
        }
    }

    /** Like {@link #step(LockProbe.Step, KeyColumn, String, Supplier)}; an {@link ExpiredLockException} loses the hold. */
    private <T> T step(LockProbe.Step step, KeyColumn lock, String action, Supplier<T> op, Hold hold) {
        try {
            return step(step, lock, action, op);
        } catch (ExpiredLockException e) {
            ExpiredLockException told = forcedAway(hold, e);
            hold.lose(told.reason(), told.getMessage(), told.holder());
            throw told;
        }
    }

    /**
     * A claim found gone or taken over: if the record of the last forced release took this claim, the loss is
     * {@link LossReason#FORCE_RELEASED}, naming who and why. The record took it when it names this locker as the holder
     * and the claim's fencing token; a record without a token (an earlier build's, or of a claim not confirmed yet)
     * or a hold whose token is not known matches by time instead: not older than this claim, less one expiry for the
     * operator's clock. One read, on this path only.
     */
    private ExpiredLockException forcedAway(Hold hold, ExpiredLockException e) {
        if (e.reason() != LossReason.GONE && e.reason() != LossReason.TAKEN_OVER) {
            return e;
        }
        try {
            Optional<ForcedRelease> forced = readRecord(hold.lock, FORCED).map(ForcedRelease::fromBytes);
            if (forced.isPresent() && tookThisClaim(forced.get(), hold)) {
                return new ExpiredLockException("our claim was " + forced.get(), hold.lock, e.holder(), e,
                        LossReason.FORCE_RELEASED);
            }
        } catch (RuntimeException ignored) {
            // the loss stands as the backend reported it
        }
        return e;
    }

    /** Did the forced release {@code forced} take {@code hold}'s claim? (See {@link #forcedAway}.) */
    private boolean tookThisClaim(ForcedRelease forced, Hold hold) {
        if (!forced.released().map(o -> o.rid().equals(config.rid())).orElse(false)) {
            return false;
        }
        LockStatus status = hold.state().status();
        long ours = status == null ? 0 : status.fencingToken();
        if (forced.releasedToken().isPresent() && ours > 0) {
            return forced.releasedToken().getAsLong() == ours;
        }
        java.time.Instant claimed = hold.claimedAt();
        return claimed == null || forced.at().isAfter(claimed.minus(config.expiry()));
    }

    /** The status of a hold that is neither lost nor past its deadline; otherwise marks it lost and throws. */
    @SuppressWarnings("unchecked")
    private S requireLive(Hold hold, Hold.State s, String action) {
        if (s.isFinal()) {
            throw new ExpiredLockException("lock lost before " + action + " it: " + s.lostWhy()
                    + "; release the transaction's locks and start again", hold.lock, null, null);
        }
        if (s.status() == null) {
            throw new IllegalStateException("the claim on " + hold.lock + " is still being written by another thread");
        }
        if (time.nanoTime() - hold.deadlineOf(s) >= 0) {
            throw lost(hold, "our claim's validity ended (by this process's monotonic clock)");
        }
        return (S) s.status();
    }

    private ExpiredLockException lost(Hold hold, String why) {
        hold.lose(LossReason.EXPIRED, why);
        return new ExpiredLockException(why + "; release the transaction's locks and start again", hold.lock, null, null,
                LossReason.EXPIRED);
    }

    // ---- keep-alive and the lost signal ---------------------------------------------------------------------------

    private volatile KeepAlive background;

    private KeepAlive background() {
        KeepAlive k = background;
        if (k == null) {
            synchronized (this) {
                if (background == null) {
                    ensureOpen(); // never start background threads for a closed locker (they would never stop)
                    background = new KeepAlive(this, config, time);
                }
                k = background;
            }
        }
        return k;
    }

    /** Called once by a hold when it is lost: its listeners are told (on the locker's notifier thread). */
    private void lost(Hold hold) {
        if (hold.ownTransaction() && !hold.isDone()) {
            lostLeases.add(hold);
            if (hold.isDone()) { // finished meanwhile: its finisher may have looked before the add
                lostLeases.remove(hold);
            }
        }
        Hold.State s = hold.state();
        LockLost loss = new LockLost(hold.lock, s.reason() == null ? LossReason.GONE : s.reason(), s.lostWhy(), s.newHolder());
        probe.lost(loss, config.rid());
        List<java.util.function.Consumer<LockLost>> listeners = hold.takeListeners(loss);
        if (!listeners.isEmpty()) {
            log.info("Lost lock {} (locker {}): {}", hold.lock, config.rid(), loss);
            KeepAlive k = background;
            if (k != null) {
                k.tell(hold.tx, listeners, loss);
            } else {
                KeepAlive.tellHere(listeners, loss);
            }
        }
    }

    @Override
    public void whenLost(KeyColumn lock, Object tx, java.util.function.Consumer<LockLost> listener) {
        Objects.requireNonNull(listener, "listener must not be null");
        ensureOpen();
        Hold hold = holdOf(lock, tx);
        if (hold == null) {
            throw new IllegalStateException("transaction " + tx + " has not claimed lock " + lock);
        }
        KeepAlive k = background();
        LockLost already = hold.addListener(listener);
        if (already != null) {
            k.tell(hold.tx, List.of(listener), already);
        } else {
            k.watch(hold);
        }
    }

    @Override
    public void keepAlive(Object tx, boolean on) {
        ensureOpen();
        Hold own = leaseHold(tx);
        KeepAlive.Kept kept = own != null ? (own.isDone() ? null : own) : tx == null ? null : txs.get(keyOf(tx));
        if (!on) {
            KeepAlive k = background;
            if (k != null && kept != null) {
                k.stop(kept);
            }
            return;
        }
        Hold[] holds = kept == null ? NO_HOLDS : kept.holds();
        if (holds.length == 0) {
            throw new IllegalStateException("transaction " + tx + " holds no lock to keep alive");
        }
        KeepAlive k = background();
        k.start(kept);
        for (Hold hold : holds) {
            k.watch(hold);
        }
    }

    /** For the keep-alive: renews one hold; false when it is lost (the hold then told its listeners). */
    boolean renewQuietly(Hold hold) {
        if (!hold.tryLockSteps()) { // a step is in flight on this hold: never block the keep-alive of other holds
            throw new TemporaryLockingException("a step is in flight on this hold; renewal postponed", hold.lock);
        }
        try {
            renewLocked(hold);
            return true;
        } catch (ExpiredLockException e) {
            return false;
        } finally {
            hold.unlockSteps();
        }
    }

    /** Runs {@code task} once after {@code delay} on this locker's background thread (backends' retries). */
    protected final void later(Runnable task, Duration delay) {
        if (!closed.get()) {
            background().later(task, delay);
        }
    }

    /** Deletes a claim this process will not use (compare-and-delete); if that fails, it expires. */
    private void withdraw(KeyColumn lock, S status, String why) {
        try {
            step(LockProbe.Step.RELEASE, lock, "withdrawing a claim", () -> {
                deleteSingleLock(lock, status);
                return status;
            });
        } catch (LockingException e) {
            log.warn("Could not withdraw our claim on {} ({}); it expires on its own: {}", lock, why, e.getMessage());
        }
    }

    /** Gives up a hold whose claim was not written (or was withdrawn); {@code holds} null for a lease's own hold. */
    private void drop(Object key, TxHolds holds, Hold hold) {
        hold.release();
        mediator.release(hold);
        if (holds != null) {
            holds.remove(hold);
            forgetIfEmpty(key, holds);
        }
    }

    private void ensureOpen() {
        if (closed.get()) {
            throw new IllegalStateException(this + " is closed");
        }
    }

    /** The holds of {@code tx} when this is called, in claim order (an array nobody changes: iterate it freely). */
    private Hold[] holdsOf(Object tx) {
        Hold own = leaseHold(tx);
        if (own != null) {
            return own.isDone() ? NO_HOLDS : own.holds();
        }
        TxHolds holds = tx == null ? null : txs.get(keyOf(tx));
        return holds == null ? NO_HOLDS : holds.all();
    }

    /** For the keep-alive: is {@code tx} kept alive now? */
    boolean keptAlive(Object tx) {
        Hold own = leaseHold(tx);
        KeepAlive.Kept kept = own != null ? own : tx == null ? null : txs.get(keyOf(tx));
        return kept != null && kept.keptAlive();
    }

    private Hold holdOf(KeyColumn lock, Object tx) {
        Hold own = leaseHold(tx);
        if (own != null) {
            return !own.isDone() && own.lock.equals(lock) ? own : null;
        }
        TxHolds holds = tx == null || lock == null ? null : txs.get(keyOf(tx));
        return holds == null ? null : holds.find(lock);
    }

    private void forgetIfEmpty(Object key, TxHolds holds) {
        synchronized (holds) {
            if (holds.isEmpty()) {
                txs.remove(key, holds);
            }
        }
    }

    private static final Hold[] NO_HOLDS = new Hold[0];

    /**
     * The key of a transaction in {@link #txs} and {@link #waits}: transactions are compared by identity, whatever
     * their own equals says. A {@link LockTransaction} (what leases use) is its own key: it keeps Object's identity
     * equals and hash, and it never equals a {@link TxKey}; any other transaction is wrapped.
     */
    /** {@code tx} as the hold of one of this locker's single-lock leases (its own transaction), else null. */
    private Hold leaseHold(Object tx) {
        if (tx instanceof Hold) {
            Hold h = (Hold) tx;
            return h.ownTransaction() && h.reportsTo(lostSink) ? h : null;
        }
        return null;
    }

    private static Object keyOf(Object tx) {
        return tx instanceof LockTransaction ? tx : new TxKey(tx);
    }

    /**
     * The holds of one transaction, in the order they were claimed. Its identity tells {@link #writeLock} whether the
     * transaction was released (removed from {@link #txs}) while it claimed. Changes take this object's monitor.
     * Up to {@link #SMALL} holds (nearly every transaction) live in an array that is replaced, never changed in place,
     * so a reader takes a snapshot by reading one volatile field; beyond that, in a map (claim order kept), so a
     * transaction with thousands of locks does not pay a copy and a scan per lock. It is also the transaction's
     * keep-alive record and renewal entry ({@link KeepAlive.Kept}).
     */
    private static final class TxHolds extends KeepAlive.Slot implements KeepAlive.Kept {
        private static final int SMALL = 8;

        private volatile Hold[] small = NO_HOLDS;
        /** Non-null once the transaction claimed more than {@link #SMALL} locks (then {@link #small} is unused). */
        private LinkedHashMap<KeyColumn, Hold> large;
        private volatile boolean keptAlive;

        @Override
        public boolean keptAlive() {
            return keptAlive;
        }

        @Override
        public void keptAlive(boolean on) {
            keptAlive = on;
        }

        @Override
        public Hold[] holds() {
            return all();
        }

        Hold[] all() {
            Hold[] a = small;
            if (a != null) {
                return a;
            }
            synchronized (this) {
                return large.values().toArray(NO_HOLDS);
            }
        }

        Hold find(KeyColumn lock) {
            Hold[] a = small;
            if (a != null) {
                for (Hold h : a) {
                    if (h.lock.equals(lock)) {
                        return h;
                    }
                }
                return null;
            }
            synchronized (this) {
                return large.get(lock);
            }
        }

        boolean isEmpty() {
            Hold[] a = small;
            if (a != null) {
                return a.length == 0;
            }
            synchronized (this) {
                return large.isEmpty();
            }
        }

        synchronized void add(Hold hold) {
            Hold[] a = small;
            if (a != null) {
                for (int i = 0; i < a.length; i++) {
                    if (a[i].lock.equals(hold.lock)) { // a takeover within the transaction: the new hold replaces it
                        Hold[] b = a.clone();
                        b[i] = hold;
                        small = b;
                        return;
                    }
                }
            }
            if (a == null) {
                large.put(hold.lock, hold);
            } else if (a.length < SMALL) {
                Hold[] b = Arrays.copyOf(a, a.length + 1);
                b[a.length] = hold;
                small = b;
            } else {
                large = new LinkedHashMap<>();
                for (Hold h : a) {
                    large.put(h.lock, h);
                }
                large.put(hold.lock, hold);
                small = null;
            }
        }

        synchronized void remove(Hold hold) {
            Hold[] a = small;
            if (a == null) {
                large.remove(hold.lock, hold);
                return;
            }
            for (int i = 0; i < a.length; i++) {
                if (a[i] == hold) {
                    if (a.length == 1) {
                        small = NO_HOLDS;
                    } else {
                        Hold[] b = new Hold[a.length - 1];
                        System.arraycopy(a, 0, b, 0, i);
                        System.arraycopy(a, i + 1, b, i, a.length - i - 1);
                        small = b;
                    }
                    return;
                }
            }
        }
    }

    /** A transaction compared by identity, whatever its own equals says. */
    private static final class TxKey {
        final Object tx;

        TxKey(Object tx) {
            this.tx = tx;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof TxKey && ((TxKey) o).tx == tx;
        }

        @Override
        public int hashCode() {
            return System.identityHashCode(tx);
        }
    }
}
