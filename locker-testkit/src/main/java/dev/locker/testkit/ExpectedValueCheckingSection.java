package dev.locker.testkit;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockingException;
import dev.locker.api.PermanentLockingException;
import dev.locker.api.TemporaryLockingException;
import dev.locker.spi.Entry;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.spi.StoreTransaction;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** Expected-value checking over the backend's locks: lock, check the cell, mutate, commit; one contender wins. */
public interface ExpectedValueCheckingSection extends ConformanceScenario {

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] value(KeyColumnValueStore store, byte[] key, byte[] col, StoreTransaction tx) {
        for (Entry e : store.getSlice(key, col, java.util.Arrays.copyOf(col, col.length + 1), tx)) {
            return e.value();
        }
        return null;
    }

    @Test
    default void expectedValueCheckingLocksChecksMutatesCommits() {
        KeyColumnValueStore store = expectedValueCheckingStore(process("a"));
        byte[] key = b(prefix() + "vertex-1");
        byte[] col = b("name");
        StoreTransaction tx = store.beginTransaction();
        store.acquireLock(key, col, null, tx); // expects the cell absent
        store.mutate(key, List.of(new Entry(col, b("alice"))), List.of(), tx);
        tx.commit();
        StoreTransaction tx2 = store.beginTransaction();
        store.acquireLock(key, col, b("alice"), tx2);
        store.acquireLock(key, col, b("ignored: the first expectation wins"), tx2);
        store.mutate(key, List.of(new Entry(col, b("bob"))), List.of(), tx2);
        tx2.commit();
        StoreTransaction read = store.beginTransaction();
        assertArrayEquals(b("bob"), value(store, key, col, read));
    }

    @Test
    default void expectedValueMismatchIsRefusedNamingTheCell() {
        KeyColumnValueStore store = expectedValueCheckingStore(process("a"));
        byte[] key = b(prefix() + "vertex-2");
        byte[] col = b("age");
        StoreTransaction tx = store.beginTransaction();
        store.acquireLock(key, col, null, tx);
        store.mutate(key, List.of(new Entry(col, b("41"))), List.of(), tx);
        tx.commit();
        StoreTransaction stale = store.beginTransaction();
        store.acquireLock(key, col, b("40"), stale);
        PermanentLockingException e = assertThrows(PermanentLockingException.class,
                () -> store.mutate(key, List.of(new Entry(col, b("42"))), List.of(), stale));
        assertEquals(KeyColumn.of(key, col), e.lock());
        stale.rollback();
        assertArrayEquals(b("41"), value(store, key, col, store.beginTransaction()));
    }

    @Test
    default void expectedValueCheckingRefusesLockingAfterMutation() {
        KeyColumnValueStore store = expectedValueCheckingStore(process("a"));
        byte[] key = b(prefix() + "vertex-3");
        StoreTransaction tx = store.beginTransaction();
        store.acquireLock(key, b("a"), null, tx);
        store.mutate(key, List.of(new Entry(b("a"), b("1"))), List.of(), tx);
        assertThrows(PermanentLockingException.class, () -> store.acquireLock(key, b("b"), null, tx));
        tx.rollback();
    }

    @Test
    default void expectedValueCheckingTwoContendersOneWins() {
        KeyColumnValueStore s1 = expectedValueCheckingStore(process("a"));
        KeyColumnValueStore s2 = expectedValueCheckingStore(process("b"));
        byte[] key = b(prefix() + "vertex-4");
        byte[] col = b("unique-name");
        StoreTransaction t1 = s1.beginTransaction();
        StoreTransaction t2 = s2.beginTransaction();
        s1.acquireLock(key, col, null, t1);
        int failures = 0;
        try {
            s2.acquireLock(key, col, null, t2);
            s2.mutate(key, List.of(new Entry(col, b("from-2"))), List.of(), t2);
            t2.commit();
        } catch (TemporaryLockingException e) {
            failures++;
            t2.rollback();
        }
        try {
            s1.mutate(key, List.of(new Entry(col, b("from-1"))), List.of(), t1);
            t1.commit();
        } catch (LockingException e) {
            failures++;
            t1.rollback();
        }
        assertEquals(1, failures, "exactly one contender wins");
    }
}
