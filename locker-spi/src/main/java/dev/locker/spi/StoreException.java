package dev.locker.spi;

/** A failure of a key-column-value store; {@link #isTemporary()} says whether a retry may succeed. */
public abstract class StoreException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    /**
     * A store failure.
     *
     * @param message what went wrong; the lock and the holder are appended
     * @param cause the underlying failure, or null
     */
    protected StoreException(String message, Throwable cause) {
        super(message, cause);
    }

    /** {@return true when retrying the same operation later may succeed} */
    public abstract boolean isTemporary();
}
