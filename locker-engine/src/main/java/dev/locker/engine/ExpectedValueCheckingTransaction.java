package dev.locker.engine;

import dev.locker.api.KeyColumn;
import dev.locker.api.Locker;
import dev.locker.spi.StoreTransaction;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * A transaction of an {@link ExpectedValueCheckingStore}: the data store's own transaction, the cells it locked with
 * the values it expects, and whether it has started mutating. It is also the lock-owning transaction handed to the
 * {@link Locker}. Commit and rollback always release its locks.
 */
public final class ExpectedValueCheckingTransaction implements StoreTransaction {

    private final ExpectedValueCheckingStore store;
    private final StoreTransaction inner;
    private final Locker locker;
    private final Map<KeyColumn, Optional<byte[]>> expected = new LinkedHashMap<>();
    private boolean mutationStarted;

    ExpectedValueCheckingTransaction(ExpectedValueCheckingStore store, StoreTransaction inner, Locker locker) {
        this.store = store;
        this.inner = inner;
        this.locker = locker;
    }

    ExpectedValueCheckingStore store() {
        return store;
    }

    StoreTransaction inner() {
        return inner;
    }

    synchronized void expect(KeyColumn cell, byte[] value) {
        expected.putIfAbsent(cell, Optional.ofNullable(value == null ? null : value.clone())); // the first expectation wins
    }

    synchronized Map<KeyColumn, Optional<byte[]>> expectations() {
        return new LinkedHashMap<>(expected);
    }

    synchronized boolean isMutationStarted() {
        return mutationStarted;
    }

    synchronized void startMutation() {
        mutationStarted = true;
    }

    @Override
    public void commit() {
        try {
            inner.commit();
        } finally {
            locker.deleteLocks(this);
        }
    }

    @Override
    public void rollback() {
        try {
            inner.rollback();
        } finally {
            locker.deleteLocks(this);
        }
    }

    @Override
    public String toString() {
        return "ExpectedValueCheckingTransaction@" + Integer.toHexString(System.identityHashCode(this))
                + "[" + expected.size() + " locked cells" + (mutationStarted ? ", mutating" : "") + "]";
    }
}
