package dev.locker.api;

/** A failure of a key-column-value store; {@link #isTemporary()} says whether a retry may succeed. */
public abstract class StoreException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    protected StoreException(String message, Throwable cause) {
        super(message, cause);
    }

    public abstract boolean isTemporary();
}
