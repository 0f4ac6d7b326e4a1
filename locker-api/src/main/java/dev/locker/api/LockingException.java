package dev.locker.api;

/**
 * Base of every locking failure. The message names the lock and, where known, the holder; a wrapped failure is kept
 * as the cause.
 */
public abstract class LockingException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final transient KeyColumn lock;
    private final transient LockOwner holder;

    /**
     * A failure about {@code lock}; the message is completed with the lock and the holder.
     *
     * @param message what went wrong; the lock and the holder are appended
     * @param lock the lock
     * @param holder who holds the lock, where known, else null
     * @param cause the underlying failure, or null
     */
    protected LockingException(String message, KeyColumn lock, LockOwner holder, Throwable cause) {
        super(describe(message, lock, holder), cause);
        this.lock = lock;
        this.holder = holder;
    }

    private static String describe(String message, KeyColumn lock, LockOwner holder) {
        StringBuilder sb = new StringBuilder(message);
        if (lock != null) {
            sb.append(" [lock ").append(lock);
            if (holder != null) {
                sb.append(", held by ").append(holder);
            }
            sb.append(']');
        } else if (holder != null) {
            sb.append(" [held by ").append(holder).append(']');
        }
        return sb.toString();
    }

    /**
     * The lock this failure is about, or null when it concerns no single lock.
     *
     * @return the lock this failure is about, or null when it concerns no single lock
     */
    public KeyColumn lock() {
        return lock;
    }

    /**
     * Who holds the lock, when the failure is contention and the holder is known; else null.
     *
     * @return who holds the lock, when the failure is contention and the holder is known; else null
     */
    public LockOwner holder() {
        return holder;
    }

    /**
     * True when retrying the same operation later may succeed.
     *
     * @return true when retrying the same operation later may succeed
     */
    public abstract boolean isTemporary();
}
