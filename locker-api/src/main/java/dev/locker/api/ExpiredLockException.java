package dev.locker.api;

/**
 * Our own claim expired, was taken over or is gone before it was checked, verified or renewed: the lock may already
 * belong to someone else. The transaction must release its locks and start again. {@link #reason()} says why.
 */
public class ExpiredLockException extends TemporaryLockingException {

    private static final long serialVersionUID = 1L;

    private final LossReason reason;

    /** With {@code holder} (another claim holds the lock: {@link LossReason#TAKEN_OVER}) or without (it is gone). */
    public ExpiredLockException(String message, KeyColumn lock, LockOwner holder, Throwable cause) {
        this(message, lock, holder, cause, holder != null ? LossReason.TAKEN_OVER : LossReason.GONE);
    }

    public ExpiredLockException(String message, KeyColumn lock, LockOwner holder, Throwable cause, LossReason reason) {
        super(message, lock, holder, cause);
        this.reason = reason == null ? LossReason.GONE : reason;
    }

    public ExpiredLockException(String message, KeyColumn lock) {
        this(message, lock, null, null);
    }

    public LossReason reason() {
        return reason;
    }
}
