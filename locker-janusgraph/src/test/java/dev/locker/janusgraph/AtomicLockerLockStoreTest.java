package dev.locker.janusgraph;

import org.janusgraph.diskstorage.BackendException;
import org.janusgraph.diskstorage.KeyValueStoreUtil;
import org.janusgraph.diskstorage.StaticBuffer;
import org.janusgraph.diskstorage.keycolumnvalue.KCVSUtil;
import org.janusgraph.diskstorage.locking.TemporaryLockingException;
import org.janusgraph.diskstorage.util.StaticArrayEntry;
import org.junit.jupiter.api.Test;

import java.util.Collections;

import static org.janusgraph.diskstorage.keycolumnvalue.KeyColumnValueStore.NO_DELETIONS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * JanusGraph's lock tests on a backend that orders claims atomically on the server (Redis, MongoDB, HBase). One case
 * differs on purpose and is replaced here by the same scenario with the behaviour we promise:
 * {@code testRemoteLockContention} expects a second process's {@code acquireLock} to succeed and its mutation to fail;
 * an atomic backend decides at {@code acquireLock} (the grant is the server's answer), so the second process learns of
 * the contention there, with our exception, naming the lock, as the cause. The first process still commits.
 */
abstract class AtomicLockerLockStoreTest extends LockerLockStoreTest {

    @Override
    @Test
    public void testRemoteLockContention() throws BackendException {
        StaticBuffer k = KeyValueStoreUtil.getBuffer("testkey");
        StaticBuffer c1 = KeyValueStoreUtil.getBuffer("col1");
        StaticBuffer v1 = KeyValueStoreUtil.getBuffer("val1");
        store[0].acquireLock(k, c1, null, tx[0][0]);

        TemporaryLockingException e = assertThrows(TemporaryLockingException.class,
                () -> store[1].acquireLock(k, c1, null, tx[1][0]), "fail-fast grant: contention is known at once");
        assertInstanceOf(dev.locker.api.TemporaryLockingException.class, e.getCause(), "our exception is the cause");
        assertEquals(dev.locker.api.KeyColumn.class, ((dev.locker.api.LockingException) e.getCause()).lock().getClass());
        assertTrue(e.getMessage().contains("rid=inst0"), "the message names the holder: " + e.getMessage());

        store[0].mutate(k, Collections.singletonList(StaticArrayEntry.of(c1, v1)), NO_DELETIONS, tx[0][0]);
        tx[0][0].commit();
        tx[0][0] = newTransaction(manager[0]);
        assertEquals(v1, KCVSUtil.get(store[0], k, c1, tx[0][0]));
    }
}
