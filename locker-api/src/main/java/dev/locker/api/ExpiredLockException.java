package dev.locker.api;

/**
 * Our own claim expired before it was checked or renewed: the lock may already belong to someone else. The
 * transaction must release its locks and start again.
 */
public class ExpiredLockException extends TemporaryLockingException {

    private static final long serialVersionUID = 1L;

    public ExpiredLockException(String message, KeyColumn lock, LockOwner holder, Throwable cause) {
        super(message, lock, holder, cause);
    }

    public ExpiredLockException(String message, KeyColumn lock) {
        this(message, lock, null, null);
    }
}
