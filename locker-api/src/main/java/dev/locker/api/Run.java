package dev.locker.api;

import java.util.Objects;
import java.util.Optional;

/** How a call of {@link Locker#runOnce} or {@link Locker#runAtMostOncePer} ended. */
public final class Run {

    /** Why the task ran or did not. */
    public enum Outcome {
        /** The task ran here and finished; its record was written while the lock was still ours. */
        RAN,
        /** Not run: it already ran to the end (see {@link #record()}); {@code runOnce} runs a job once, ever. */
        ALREADY_DONE,
        /** Not run: the last run started less than the period (less a tenth, for clock differences) ago. */
        NOT_DUE,
        /** Not run: another process holds the job's lock, running it now (see {@link #holder()}). */
        BUSY,
        /** Not run: the backend could not be reached (see {@link #failure()}); try again later. */
        UNREACHABLE,
        /** The task ran here and threw (see {@link #failure()}); no record was written, so the next call runs it. */
        FAILED,
        /**
         * The task ran here, but the lock was lost before its record was written (taken over, forced, or expired
         * without renewal): another process may run it again. The task's writes carry its fencing token.
         */
        LOST
    }

    private final Outcome outcome;
    private final RunRecord record;
    private final RuntimeException failure;
    private final LockOwner holder;

    /**
     * For {@link Locker} implementations.
     *
     * @param outcome how the call ended
     * @param record  the run's record (RAN), or the last run's (ALREADY_DONE, NOT_DUE), else null
     * @param failure what went wrong (FAILED, UNREACHABLE, LOST), else null
     * @param holder  who holds the job's lock (BUSY), else null
     */
    public Run(Outcome outcome, RunRecord record, RuntimeException failure, LockOwner holder) {
        this.outcome = Objects.requireNonNull(outcome, "outcome");
        this.record = record;
        this.failure = failure;
        this.holder = holder;
    }

    /** @return how the call ended */
    public Outcome outcome() {
        return outcome;
    }

    /** @return true when the task ran here to the end and that is recorded */
    public boolean ran() {
        return outcome == Outcome.RAN;
    }

    /** @return RAN: this run's record; ALREADY_DONE, NOT_DUE: the last run's record */
    public Optional<RunRecord> record() {
        return Optional.ofNullable(record);
    }

    /** @return FAILED: what the task threw; UNREACHABLE, LOST: the locking failure */
    public Optional<RuntimeException> failure() {
        return Optional.ofNullable(failure);
    }

    /** @return BUSY: who holds the job's lock */
    public Optional<LockOwner> holder() {
        return Optional.ofNullable(holder);
    }

    @Override
    public String toString() {
        return "Run[" + outcome + (record != null ? ", " + record : "") + (holder != null ? ", held by " + holder : "")
                + (failure != null ? ", " + failure : "") + "]";
    }
}
