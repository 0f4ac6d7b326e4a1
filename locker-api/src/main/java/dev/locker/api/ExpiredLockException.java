package dev.locker.api;

/**
 * Our own claim expired, was taken over or is gone before it was checked, verified or renewed: the lock may already
 * belong to someone else. The transaction must release its locks and start again. {@link #reason()} says why.
 */
public class ExpiredLockException extends TemporaryLockingException {

    private static final long serialVersionUID = 1L;

    /** Why the claim was lost. */
    private final LossReason reason;

    /**
     * With {@code holder} (another claim holds the lock: {@link LossReason#TAKEN_OVER}) or without (it is gone).
     *
     * @param message what went wrong; the lock and the holder are appended
     * @param lock the lock
     * @param holder who holds the lock, where known, else null
     * @param cause the underlying failure, or null
     */
    public ExpiredLockException(String message, KeyColumn lock, LockOwner holder, Throwable cause) {
        this(message, lock, holder, cause, holder != null ? LossReason.TAKEN_OVER : LossReason.GONE);
    }

    /**
     * With the reason given (null is taken as {@link LossReason#GONE}).
     *
     * @param message what went wrong; the lock and the holder are appended
     * @param lock the lock
     * @param holder who holds the lock, where known, else null
     * @param cause the underlying failure, or null
     * @param reason why the claim was lost
     */
    public ExpiredLockException(String message, KeyColumn lock, LockOwner holder, Throwable cause, LossReason reason) {
        super(message, lock, holder, cause);
        this.reason = reason == null ? LossReason.GONE : reason;
    }

    /**
     * Without a known holder: the claim is gone ({@link LossReason#GONE}).
     *
     * @param message what went wrong; the lock and the holder are appended
     * @param lock the lock
     */
    public ExpiredLockException(String message, KeyColumn lock) {
        this(message, lock, null, null);
    }

    /** {@return why the claim was lost} */
    public LossReason reason() {
        return reason;
    }
}
