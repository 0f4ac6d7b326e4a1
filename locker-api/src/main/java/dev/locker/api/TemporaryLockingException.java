package dev.locker.api;

/** A locking failure that a later retry may overcome: contention, a timeout, an unreachable server. */
public class TemporaryLockingException extends LockingException {

    private static final long serialVersionUID = 1L;

    /** The holder's remaining expiry as the backend said, or null. */
    private final java.time.Duration holderExpiresIn;

    /**
     * A temporary failure about {@code lock}; with {@code holder} it is contention.
     *
     * @param message what went wrong; the lock and the holder are appended
     * @param lock the lock
     * @param holder who holds the lock, where known, else null
     * @param cause the underlying failure, or null
     */
    public TemporaryLockingException(String message, KeyColumn lock, LockOwner holder, Throwable cause) {
        this(message, lock, holder, null, cause);
    }

    /**
     * A temporary failure about {@code lock}, saying how long the holder's claim lasts at most.
     *
     * @param message what went wrong; the lock and the holder are appended
     * @param lock the lock
     * @param holder who holds the lock, where known, else null
     * @param cause the underlying failure, or null
     * @param holderExpiresIn how long the holder's claim lasts at most unless it is renewed, as the backend said when
     *                        it refused (null when unknown); a waiter need not retry before it, unless told of a release
     */
    public TemporaryLockingException(String message, KeyColumn lock, LockOwner holder, java.time.Duration holderExpiresIn,
                                     Throwable cause) {
        super(message, lock, holder, cause);
        this.holderExpiresIn = holderExpiresIn == null || holderExpiresIn.isNegative() ? null : holderExpiresIn;
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

    /**
     * How long the holder's claim lasts at most unless renewed, when the backend said so with its refusal: the wait
     * loops retry no later than that.
     *
     * @return the holder's remaining expiry, or empty when unknown
     */
    public java.util.Optional<java.time.Duration> holderExpiresIn() {
        return java.util.Optional.ofNullable(holderExpiresIn);
    }

    @Override
    public final boolean isTemporary() {
        return true;
    }
}
