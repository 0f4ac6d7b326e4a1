package dev.locker.api;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * How a bounded wait for a lock ended ({@link Locker#acquireWithin}): with the lease, or with why not. An outage does
 * not look like a busy lock: {@link Outcome#BUSY} names the holder, {@link Outcome#UNREACHABLE} keeps the backend's
 * failure, {@link Outcome#REFUSED} is a permanent refusal (credentials, permissions, configuration) that waiting
 * cannot cure. A grant slower than the lease's expiry is {@link Outcome#GRANTED_TOO_LATE}.
 */
public final class Acquisition {

    /** Why the wait ended. */
    public enum Outcome {
        /** The lock was taken: {@link #lease()} holds it. */
        ACQUIRED,
        /** Another holder kept it until the wait ran out: {@link #holder()} names it where known. */
        BUSY,
        /** The backend could not be reached (or failed temporarily) at the last attempt: {@link #failure()}. */
        UNREACHABLE,
        /** The backend refused for good: {@link #failure()}; the wait stopped at once. */
        REFUSED,
        /**
         * The lock was granted at the last attempt, but the grant reached this process after the lease's validity
         * ended, so the claim was withdrawn: {@link #failure()} is a {@link GrantedTooLateException}. The expiry is
         * shorter than a grant takes here; a longer one cures it.
         */
        GRANTED_TOO_LATE
    }

    private final Outcome outcome;
    private final Lease lease;
    private final LockingException failure;
    private final int attempts;
    private final Duration waited;

    /**
     * For {@link Locker} implementations; applications get one from {@link Locker#acquireWithin}.
     *
     * @param outcome  how the wait ended
     * @param lease    the lease when acquired, else null
     * @param failure  the last failure when not acquired, else null
     * @param attempts how many attempts were made
     * @param waited   how long the wait took
     */
    public Acquisition(Outcome outcome, Lease lease, LockingException failure, int attempts, Duration waited) {
        this.outcome = Objects.requireNonNull(outcome, "outcome");
        this.lease = lease;
        this.failure = failure;
        this.attempts = attempts;
        this.waited = waited;
    }

    /** {@return why the wait ended} */
    public Outcome outcome() {
        return outcome;
    }

    /** {@return whether the lock was taken (outcome ACQUIRED)} */
    public boolean acquired() {
        return outcome == Outcome.ACQUIRED;
    }

    /** {@return the lease when the lock was taken, else empty} */
    public Optional<Lease> lease() {
        return Optional.ofNullable(lease);
    }

    /**
     * The holder that kept the lock (BUSY), where the backend named it.
     *
     * @return the holder that kept the lock (BUSY), where the backend named it
     */
    public Optional<LockOwner> holder() {
        return failure == null ? Optional.empty() : Optional.ofNullable(failure.holder());
    }

    /**
     * The last failure (BUSY, UNREACHABLE, REFUSED, GRANTED_TOO_LATE), with its cause.
     *
     * @return the last failure (BUSY, UNREACHABLE, REFUSED, GRANTED_TOO_LATE), with its cause
     */
    public Optional<LockingException> failure() {
        return Optional.ofNullable(failure);
    }

    /**
     * The lease, or empty when the wait ran out; a permanent refusal is thrown (what {@link Locker#tryAcquire} does).
     *
     * @return the lease, or empty
     */
    public Optional<Lease> leaseOrThrowRefusal() {
        if (outcome == Outcome.REFUSED) {
            throw (PermanentLockingException) failure;
        }
        return lease();
    }

    /** {@return how many times the lock was asked for} */
    public int attempts() {
        return attempts;
    }

    /**
     * How long the wait took, on the locker's monotonic clock.
     *
     * @return how long the wait took, on the locker's monotonic clock
     */
    public Duration waited() {
        return waited;
    }

    @Override
    public String toString() {
        return "Acquisition[" + outcome + " after " + attempts + " attempt(s), " + waited
                + (failure == null ? "" : ": " + failure.getMessage()) + "]";
    }
}
