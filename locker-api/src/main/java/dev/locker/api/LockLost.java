package dev.locker.api;

import java.util.Objects;

/** The news that a claim was lost: which lock, why, and who holds it now where known. Immutable. */
public final class LockLost {

    private final KeyColumn lock;
    private final LossReason reason;
    private final String detail;
    private final LockOwner newHolder;

    /**
     * The news of a loss.
     *
     * @param lock the lock
     * @param reason why the claim was lost
     * @param detail what was observed, for logs
     * @param newHolder who holds the lock now, or null when unknown
     */
    public LockLost(KeyColumn lock, LossReason reason, String detail, LockOwner newHolder) {
        this.lock = Objects.requireNonNull(lock, "lock must not be null");
        this.reason = Objects.requireNonNull(reason, "reason must not be null");
        this.detail = detail == null ? "" : detail;
        this.newHolder = newHolder;
    }

    /** {@return the lost lock} */
    public KeyColumn lock() {
        return lock;
    }

    /** {@return why it was lost} */
    public LossReason reason() {
        return reason;
    }

    /**
     * What was observed, for logs.
     *
     * @return what was observed, for logs
     */
    public String detail() {
        return detail;
    }

    /**
     * Who holds the lock now, when the backend said (else null).
     *
     * @return who holds the lock now, when the backend said (else null)
     */
    public LockOwner newHolder() {
        return newHolder;
    }

    @Override
    public String toString() {
        return "LockLost[" + lock + ", " + reason + (detail.isEmpty() ? "" : ": " + detail)
                + (newHolder == null ? "" : ", now held by " + newHolder) + "]";
    }
}
