package dev.locker.api;

/** A locking failure that a later retry may overcome: contention, a timeout, an unreachable server. */
public class TemporaryLockingException extends LockingException {

    private static final long serialVersionUID = 1L;

    /**
     * A temporary failure about {@code lock}; with {@code holder} it is contention.
     *
     * @param message what went wrong; the lock and the holder are appended
     * @param lock the lock
     * @param holder who holds the lock, where known, else null
     * @param cause the underlying failure, or null
     */
    public TemporaryLockingException(String message, KeyColumn lock, LockOwner holder, Throwable cause) {
        super(message, lock, holder, cause);
    }

    /**
     * Without holder or cause.
     *
     * @param message what went wrong; the lock and the holder are appended
     * @param lock the lock
     */
    public TemporaryLockingException(String message, KeyColumn lock) {
        this(message, lock, null, null);
    }

    @Override
    public final boolean isTemporary() {
        return true;
    }
}
