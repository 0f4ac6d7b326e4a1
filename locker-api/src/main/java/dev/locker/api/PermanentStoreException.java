package dev.locker.api;

/** A store failure a retry will not fix: missing table, refused permission, corrupt data. */
public class PermanentStoreException extends StoreException {

    private static final long serialVersionUID = 1L;

    public PermanentStoreException(String message, Throwable cause) {
        super(message, cause);
    }

    public PermanentStoreException(String message) {
        this(message, null);
    }

    @Override
    public final boolean isTemporary() {
        return false;
    }
}
