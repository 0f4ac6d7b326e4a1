package dev.locker.engine;

import dev.locker.spi.Entry;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.spi.StoreTransaction;

import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/** A store that throws a chosen Error from one read or one mutation, as a driver missing a class would. */
final class ErrorStore implements KeyColumnValueStore {
    final KeyColumnValueStore real;
    private final AtomicReference<Error> nextRead = new AtomicReference<>();
    private final AtomicReference<Error> mutationError = new AtomicReference<>();
    private final AtomicInteger mutationsToSkip = new AtomicInteger();

    ErrorStore(KeyColumnValueStore real) {
        this.real = real;
    }

    /** The next read throws {@code e} without reaching the store. */
    void failRead(Error e) {
        nextRead.set(e);
    }

    /** After {@code skip} mutations, the next one throws {@code e} without reaching the store. */
    void failMutation(int skip, Error e) {
        mutationsToSkip.set(skip);
        mutationError.set(e);
    }

    @Override
    public String name() {
        return real.name();
    }

    @Override
    public List<Entry> getSlice(byte[] key, byte[] start, byte[] end, StoreTransaction tx) {
        Error e = nextRead.getAndSet(null);
        if (e != null) {
            throw e;
        }
        return real.getSlice(key, start, end, tx);
    }

    @Override
    public void mutate(byte[] key, List<Entry> additions, List<byte[]> deletions, StoreTransaction tx) {
        if (mutationError.get() != null && mutationsToSkip.getAndDecrement() <= 0) {
            Error e = mutationError.getAndSet(null);
            if (e != null) {
                throw e;
            }
        }
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
        real.close();
    }
}
