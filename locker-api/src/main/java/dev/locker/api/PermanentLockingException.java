package dev.locker.api;

/**
 * A locking failure that retrying will not fix: a refused permission, a wrong password, a missing table, an
 * expected value that does not match, misuse of the API.
 */
public class PermanentLockingException extends LockingException {

    private static final long serialVersionUID = 1L;

    public PermanentLockingException(String message, KeyColumn lock, LockOwner holder, Throwable cause) {
        super(message, lock, holder, cause);
    }

    public PermanentLockingException(String message, KeyColumn lock) {
        this(message, lock, null, null);
    }

    @Override
    public final boolean isTemporary() {
        return false;
    }
}
