package dev.locker.api;

/** A locking failure that a later retry may overcome: contention, a timeout, an unreachable server. */
public class TemporaryLockingException extends LockingException {

    private static final long serialVersionUID = 1L;

    public TemporaryLockingException(String message, KeyColumn lock, LockOwner holder, Throwable cause) {
        super(message, lock, holder, cause);
    }

    public TemporaryLockingException(String message, KeyColumn lock) {
        this(message, lock, null, null);
    }

    @Override
    public final boolean isTemporary() {
        return true;
    }
}
