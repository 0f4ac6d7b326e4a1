package dev.locker.api;

/** A store failure a retry may overcome: timeout, unavailable server or region. */
public class TemporaryStoreException extends StoreException {

    private static final long serialVersionUID = 1L;

    public TemporaryStoreException(String message, Throwable cause) {
        super(message, cause);
    }

    public TemporaryStoreException(String message) {
        this(message, null);
    }

    @Override
    public final boolean isTemporary() {
        return true;
    }
}
