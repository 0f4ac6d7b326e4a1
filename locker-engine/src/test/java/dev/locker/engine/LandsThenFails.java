package dev.locker.engine;

import dev.locker.spi.Entry;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.spi.StoreTransaction;
import dev.locker.spi.TemporaryStoreException;

import java.util.List;

/**
 * A real store whose chosen write lands and whose answer then fails: the read after it times out, or the write itself
 * ends in an Error. The caller cannot tell whether the write took effect; the store holds it.
 */
final class LandsThenFails implements KeyColumnValueStore {

    private final KeyColumnValueStore real;
    private volatile int writesToPass = -1;
    private volatile boolean failNextRead;
    private volatile Error error;

    LandsThenFails(KeyColumnValueStore real) {
        this.real = real;
    }

    /** The read after the next write that adds a column times out. */
    void failTheReadAfterTheNextWrite() {
        failTheReadAfterWrites(0);
    }

    /** Lets {@code pass} writes that add columns go by, then the read after the next one times out. */
    void failTheReadAfterWrites(int pass) {
        writesToPass = pass;
    }

    /** The next write that adds a column lands, then throws {@code e}. */
    void errAfterTheNextWrite(Error e) {
        error = e;
    }

    @Override
    public String name() {
        return real.name();
    }

    @Override
    public List<Entry> getSlice(byte[] key, byte[] start, byte[] end, StoreTransaction tx) {
        if (failNextRead) {
            failNextRead = false;
            throw new TemporaryStoreException("read timed out", null);
        }
        return real.getSlice(key, start, end, tx);
    }

    @Override
    public void mutate(byte[] key, List<Entry> additions, List<byte[]> deletions, StoreTransaction tx) {
        real.mutate(key, additions, deletions, tx);
        if (additions.isEmpty()) {
            return;
        }
        Error e = error;
        if (e != null) {
            error = null;
            throw e;
        }
        if (writesToPass == 0) {
            failNextRead = true;
        }
        if (writesToPass >= 0) {
            writesToPass--;
        }
    }

    @Override
    public List<byte[]> getKeys(byte[] keyPrefix, byte[] startAfter, int limit, StoreTransaction tx) {
        return real.getKeys(keyPrefix, startAfter, limit, tx);
    }

    @Override
    public StoreTransaction beginTransaction() {
        return real.beginTransaction();
    }

    @Override
    public void close() {
    }
}
