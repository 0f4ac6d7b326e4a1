package dev.locker.engine;

/**
 * What a {@link KeepAlive} asks of the locker it works for. It is all the keep-alive knows of that locker, so the
 * keep-alive never calls back into the class that owns it.
 */
interface KeepAliveHost {

    /** Is {@code tx} kept alive now? */
    boolean keptAlive(Object tx);

    /** Renews one hold; false when it is lost (the hold then told its listeners). */
    boolean renewQuietly(Hold hold);

    /** Is the locker closed? Then a failed renewal is not retried. */
    boolean isClosed();
}
