package dev.locker.spi;

/** A store failure a retry may overcome: timeout, unavailable server or region. */
public class TemporaryStoreException extends StoreException {

    private static final long serialVersionUID = 1L;

    /**
     * A store failure that a retry may cure.
     *
     * @param message what went wrong; the lock and the holder are appended
     * @param cause the underlying failure, or null
     */
    public TemporaryStoreException(String message, Throwable cause) {
        super(message, cause);
    }

    /**
     * Without a cause.
     *
     * @param message what went wrong; the lock and the holder are appended
     */
    public TemporaryStoreException(String message) {
        this(message, null);
    }

    @Override
    public final boolean isTemporary() {
        return true;
    }
}
