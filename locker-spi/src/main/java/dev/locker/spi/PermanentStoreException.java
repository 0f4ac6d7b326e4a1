package dev.locker.spi;

/** A store failure a retry will not fix: missing table, refused permission, corrupt data. */
public class PermanentStoreException extends StoreException {

    private static final long serialVersionUID = 1L;

    /**
     * A store failure that a retry will not cure.
     *
     * @param message what went wrong; the lock and the holder are appended
     * @param cause the underlying failure, or null
     */
    public PermanentStoreException(String message, Throwable cause) {
        super(message, cause);
    }

    /**
     * Without a cause.
     *
     * @param message what went wrong; the lock and the holder are appended
     */
    public PermanentStoreException(String message) {
        this(message, null);
    }

    @Override
    public final boolean isTemporary() {
        return false;
    }
}
