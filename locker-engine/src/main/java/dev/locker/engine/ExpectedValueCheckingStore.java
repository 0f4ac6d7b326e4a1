package dev.locker.engine;

import dev.locker.spi.Entry;
import dev.locker.api.KeyColumn;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.api.Locker;
import dev.locker.api.PermanentLockingException;
import dev.locker.spi.StoreTransaction;

import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * Guards a data store with locks, as JanusGraph's ExpectedValueCheckingStore does: a transaction locks the cells it
 * will change and says what value it expects each to hold; before its first mutation the locks are checked and every
 * expected value is compared with the store. Then, and only then, mutations pass through.
 *
 * <p>Invariants: the first expected value given for a cell wins; locking after the transaction started mutating is
 * refused; a mismatch fails with {@link PermanentLockingException} naming the cell; commit and rollback release the
 * transaction's locks. Transactions must come from this store's {@link #beginTransaction()}; another store's are
 * refused before any I/O.
 */
public final class ExpectedValueCheckingStore implements KeyColumnValueStore {

    private final KeyColumnValueStore data;
    private final Locker locker;

    public ExpectedValueCheckingStore(KeyColumnValueStore data, Locker locker) {
        this.data = Objects.requireNonNull(data, "data store must not be null");
        this.locker = Objects.requireNonNull(locker, "locker must not be null");
    }

    @Override
    public String name() {
        return data.name();
    }

    @Override
    public ExpectedValueCheckingTransaction beginTransaction() {
        return new ExpectedValueCheckingTransaction(this, data.beginTransaction(), locker);
    }

    @Override
    public void acquireLock(byte[] key, byte[] column, byte[] expectedValue, StoreTransaction tx) {
        ExpectedValueCheckingTransaction t = cast(tx);
        KeyColumn lock = KeyColumn.of(key, column);
        if (t.isMutationStarted()) {
            throw new PermanentLockingException("cannot lock after the transaction started mutating: lock every cell "
                    + "first, then mutate", lock);
        }
        locker.writeLock(lock, t);
        t.expect(lock, expectedValue);
    }

    @Override
    public List<Entry> getSlice(byte[] key, byte[] start, byte[] end, StoreTransaction tx) {
        return data.getSlice(key, start, end, cast(tx).inner());
    }

    @Override
    public List<byte[]> getKeys(byte[] keyPrefix, byte[] startAfter, int limit, StoreTransaction tx) {
        return data.getKeys(keyPrefix, startAfter, limit, cast(tx).inner());
    }

    @Override
    public void mutate(byte[] key, List<Entry> additions, List<byte[]> deletions, StoreTransaction tx) {
        ExpectedValueCheckingTransaction t = cast(tx);
        if (!t.isMutationStarted()) {
            checkExpectations(t);
            t.startMutation();
        }
        data.mutate(key, additions, deletions, t.inner());
    }

    private void checkExpectations(ExpectedValueCheckingTransaction t) {
        locker.checkLocks(t);
        for (var e : t.expectations().entrySet()) {
            KeyColumn cell = e.getKey();
            byte[] expected = e.getValue().orElse(null);
            byte[] actual = read(cell, t.inner());
            if (!Arrays.equals(expected, actual)) {
                throw new PermanentLockingException("expected value mismatch on cell: expected "
                        + describe(expected) + ", store has " + describe(actual), cell);
            }
        }
    }

    private byte[] read(KeyColumn cell, StoreTransaction inner) {
        byte[] col = cell.column();
        for (Entry e : data.getSlice(cell.key(), col, ConsistentKeyLocker.successor(col), inner)) {
            if (Arrays.equals(e.column(), col)) {
                return e.value();
            }
        }
        return null;
    }

    private static String describe(byte[] v) {
        return v == null ? "no value" : v.length + " bytes [" + KeyColumn.printable(v) + "]";
    }

    /** The transaction, if this very store began it: another store's would check expectations against the wrong data. */
    private ExpectedValueCheckingTransaction cast(StoreTransaction tx) {
        if (!(tx instanceof ExpectedValueCheckingTransaction) || ((ExpectedValueCheckingTransaction) tx).store() != this) {
            throw new IllegalArgumentException("transaction " + tx + " was not begun by this ExpectedValueCheckingStore ("
                    + name() + ")");
        }
        return (ExpectedValueCheckingTransaction) tx;
    }

    /** Closes the data store; the locker belongs to the caller. */
    @Override
    public void close() {
        data.close();
    }
}
