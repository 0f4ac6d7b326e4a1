package dev.locker.api;

/**
 * A locking failure that retrying will not fix: a refused permission, a wrong password, a missing table, an
 * expected value that does not match, misuse of the API.
 */
public class PermanentLockingException extends LockingException {

    private static final long serialVersionUID = 1L;

    /**
     * A permanent failure about {@code lock}.
     *
     * @param message what went wrong; the lock and the holder are appended
     * @param lock the lock
     * @param holder who holds the lock, where known, else null
     * @param cause the underlying failure, or null
     */
    public PermanentLockingException(String message, KeyColumn lock, LockOwner holder, Throwable cause) {
        super(message, lock, holder, cause);
    }

    /**
     * Without holder or cause.
     *
     * @param message what went wrong; the lock and the holder are appended
     * @param lock the lock
     */
    public PermanentLockingException(String message, KeyColumn lock) {
        this(message, lock, null, null);
    }

    @Override
    public final boolean isTemporary() {
        return false;
    }
}
