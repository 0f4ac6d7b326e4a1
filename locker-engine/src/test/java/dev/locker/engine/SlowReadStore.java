package dev.locker.engine;

import dev.locker.spi.Entry;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.spi.StoreTransaction;

import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

/** The shared store, whose next read stays in flight while a chosen action runs (a slow network). */
final class SlowReadStore implements KeyColumnValueStore {
    final AtomicReference<Runnable> beforeNextRead = new AtomicReference<>();
    private final KeyColumnValueStore real;

    SlowReadStore(KeyColumnValueStore real) {
        this.real = real;
    }

    @Override
    public String name() {
        return real.name();
    }

    @Override
    public List<Entry> getSlice(byte[] key, byte[] start, byte[] end, StoreTransaction tx) {
        Runnable r = beforeNextRead.getAndSet(null);
        if (r != null) {
            r.run();
        }
        return real.getSlice(key, start, end, tx);
    }

    @Override
    public void mutate(byte[] key, List<Entry> additions, List<byte[]> deletions, StoreTransaction tx) {
        real.mutate(key, additions, deletions, tx);
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
        // the shared store outlives this view of it
    }
}
