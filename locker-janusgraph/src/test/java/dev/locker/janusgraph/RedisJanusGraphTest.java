package dev.locker.janusgraph;

import dev.locker.api.LockingException;
import dev.locker.redis.RedisServerProcess;
import dev.locker.testkit.FaultProxy;
import org.janusgraph.diskstorage.BackendException;
import org.janusgraph.diskstorage.StaticBuffer;
import org.janusgraph.diskstorage.keycolumnvalue.KeyColumnValueStore;
import org.janusgraph.diskstorage.keycolumnvalue.StoreTransaction;
import org.janusgraph.diskstorage.locking.TemporaryLockingException;
import org.janusgraph.diskstorage.locking.consistentkey.ExpectedValueCheckingTransaction;
import org.janusgraph.diskstorage.util.KeyColumn;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static dev.locker.janusgraph.GraphInstances.buffer;
import static dev.locker.janusgraph.GraphInstances.lockAndCheck;
import static dev.locker.janusgraph.GraphInstances.lockAndWrite;
import static dev.locker.janusgraph.GraphInstances.tryCommitRepeatedly;
import static dev.locker.janusgraph.GraphInstances.tryLockedCommit;
import static dev.locker.janusgraph.GraphInstances.tx;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * locker-janusgraph on a real redis-server: an atomic backend, where a claim is granted or refused when it is written.
 */
class RedisJanusGraphTest {

    private static RedisServerProcess redis;

    private final String share = "jg-redis-" + System.nanoTime();
    private final GraphInstances graphs = new GraphInstances(share);

    @BeforeAll
    static void startRedis() {
        redis = RedisServerProcess.start();
    }

    @AfterAll
    static void stopRedis() {
        redis.close();
    }

    @AfterEach
    void closeAll() throws Exception {
        graphs.close();
    }

    private String uri(int port) {
        return "redis://127.0.0.1:" + port + "?prefix=" + share + ":&restartGuard=0ms&timeout=500ms";
    }

    private LockerStoreManager open(String graph, String instance, String namespace, String uri) throws BackendException {
        return graphs.open(GraphInstances.config(graph, instance, namespace, uri, Duration.ofMinutes(5)));
    }

    private LockerStoreManager open(String instance) throws BackendException {
        return open(share, instance, share, uri(redis.port()));
    }

    /**
     * A transaction whose first lock is refused (fail-fast grant): JanusGraph records no store for it, so its
     * rollback calls no deleteLocks; the locker keeps nothing of it and no claim is left on the server.
     */
    @Test
    void aRefusedFirstLockLeavesNothingBehind() throws Exception {
        LockerStoreManager a = open("a");
        LockerStoreManager b = open("b");
        KeyColumnValueStore storeA = a.openDatabase("graphindex");
        KeyColumnValueStore storeB = b.openDatabase("graphindex");
        StaticBuffer key = buffer("unique-value");
        StaticBuffer column = buffer("c");
        StoreTransaction t1 = tx(a);
        lockAndCheck(storeA, key, column, t1);

        ExpectedValueCheckingTransaction t2 = tx(b);
        TemporaryLockingException e = assertThrows(TemporaryLockingException.class,
                () -> storeB.acquireLock(key, column, null, t2));
        assertTrue(e.getMessage().contains("rid=a"), "names the holder: " + e.getMessage());
        dev.locker.api.KeyColumn lock = new LockKeys(share, "graphindex_lock_")
                .lockOf(new KeyColumn(key, column));
        assertFalse(b.locker().status(lock, t2.getConsistentTx()).isPresent(), "no record of the refused claim");
        t2.rollback();
        t1.commit();
        assertTrue(tryLockedCommit(b, storeB, key, column), "no claim of t2 left on the server");
    }

    /** Two graphs with distinct namespaces on one Redis: clearing one leaves the other's held locks alone. */
    @Test
    void clearStorageReleasesOnlyItsOwnNamespace() throws Exception {
        LockerStoreManager x1 = open(share + "-x", "x1", "graph-x", uri(redis.port()));
        LockerStoreManager x2 = open(share + "-x", "x2", "graph-x", uri(redis.port()));
        LockerStoreManager y = open(share + "-y", "y1", "graph-y", uri(redis.port()));
        StaticBuffer key = buffer("unique-value");
        StaticBuffer column = buffer("c");
        StoreTransaction t1 = tx(x1);
        lockAndWrite(x1.openDatabase("graphindex"), key, column, "x", t1);
        StoreTransaction ty = tx(y);
        lockAndWrite(y.openDatabase("graphindex"), key, column, "y", ty); // the same lock in graph Y: no contention
        ty.commit();
        y.clearStorage();
        StoreTransaction t2 = tx(x2);
        assertThrows(TemporaryLockingException.class,
                () -> x2.openDatabase("graphindex").acquireLock(key, column, null, t2));
        t2.rollback();
        t1.commit();
    }

    /**
     * A backend that stops answering (a frozen network path) fails the claim with JanusGraph's temporary exception,
     * ours (naming the lock) as its cause, never a permanent one.
     */
    @Test
    void anUnansweringBackendIsATemporaryFailureNamingTheLock() throws Exception {
        try (FaultProxy proxy = new FaultProxy("127.0.0.1", redis.port())) {
            LockerStoreManager a = open(share, "a", share, uri(proxy.port()));
            KeyColumnValueStore storeA = a.openDatabase("graphindex");
            StoreTransaction warm = tx(a);
            lockAndWrite(storeA, buffer("warm-up"), buffer("c"), "x", warm);
            warm.commit();
            proxy.freeze();
            StoreTransaction t = tx(a);
            TemporaryLockingException e = assertThrows(TemporaryLockingException.class,
                    () -> storeA.acquireLock(buffer("k"), buffer("c"), null, t));
            LockingException ours = assertInstanceOf(LockingException.class, e.getCause());
            assertNotNull(ours.lock(), "our cause names the lock");
            proxy.thaw();
            t.rollback();
        }
    }

    /**
     * A claim whose write timed out (the request reaches Redis later, as after a stalled network path) belongs to a
     * transaction that is gone: JanusGraph recorded no store for it, so its rollback calls no deleteLocks. The Redis
     * backend withdraws it itself (in the background, until it can), so the lock is not blocked for the whole expiry
     * ({@code storage.lock.expiry-time}, 5 minutes here).
     */
    @Test
    void aTimedOutClaimIsWithdrawnAndDoesNotBlockTheLockForTheExpiry() throws Exception {
        StaticBuffer key = buffer("unique-value");
        StaticBuffer column = buffer("c");
        LockerStoreManager b = open("b");
        KeyColumnValueStore storeB = b.openDatabase("graphindex");
        try (FaultProxy proxy = new FaultProxy("127.0.0.1", redis.port())) {
            LockerStoreManager a = open(share, "a", share, uri(proxy.port()));
            KeyColumnValueStore storeA = a.openDatabase("graphindex");
            StoreTransaction warm = tx(a);
            lockAndWrite(storeA, buffer("warm-up"), column, "x", warm);
            warm.commit();
            proxy.freeze();
            StoreTransaction t = tx(a);
            assertThrows(TemporaryLockingException.class, () -> storeA.acquireLock(key, column, null, t));
            t.rollback(); // JanusGraph's rollback: the store was never recorded, so no deleteLocks
            proxy.thaw(); // the held request reaches Redis now
            Thread.sleep(1000);
        }
        boolean committed = tryCommitRepeatedly(b, storeB, key, column, "b", 50, 100);
        assertTrue(committed, "the lock is still blocked by the claim of a transaction that failed and rolled back: "
                + b.locker().holder(new LockKeys(share, "graphindex_lock_").lockOf(new KeyColumn(key, column))));
    }
}
