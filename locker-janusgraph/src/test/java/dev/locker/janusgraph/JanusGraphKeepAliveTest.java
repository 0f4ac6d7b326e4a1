package dev.locker.janusgraph;

import dev.locker.api.ExpiredLockException;
import org.apache.tinkerpop.gremlin.structure.Vertex;
import org.janusgraph.core.JanusGraph;
import org.janusgraph.core.JanusGraphTransaction;
import org.janusgraph.core.PropertyKey;
import org.janusgraph.core.schema.ConsistencyModifier;
import org.janusgraph.core.schema.JanusGraphIndex;
import org.janusgraph.core.schema.JanusGraphManagement;
import org.janusgraph.diskstorage.BackendException;
import org.janusgraph.diskstorage.StaticBuffer;
import org.janusgraph.diskstorage.configuration.ModifiableConfiguration;
import org.janusgraph.diskstorage.keycolumnvalue.KCVMutation;
import org.janusgraph.diskstorage.keycolumnvalue.KeyColumnValueStore;
import org.janusgraph.diskstorage.locking.PermanentLockingException;
import org.janusgraph.diskstorage.locking.consistentkey.ExpectedValueCheckingTransaction;
import org.janusgraph.diskstorage.util.KeyColumn;
import org.janusgraph.diskstorage.util.StaticArrayEntry;
import org.janusgraph.graphdb.configuration.GraphDatabaseConfiguration;
import org.janusgraph.graphdb.database.StandardJanusGraph;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;

import static dev.locker.janusgraph.GraphInstances.buffer;
import static dev.locker.janusgraph.GraphInstances.lockAndCheck;
import static dev.locker.janusgraph.GraphInstances.tryLockedCommit;
import static dev.locker.janusgraph.GraphInstances.tx;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The keep-alive from checkLocks to deleteLocks and the check before each later data write, on mem: (wait-and-read-
 * back, renewing in place), several instances sharing one data store. Nothing is timed: the waits are generous bounds,
 * many expiries long.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class JanusGraphKeepAliveTest {

    private static final Duration SHORT_EXPIRY = Duration.ofMillis(600);
    private static final Duration LONG_EXPIRY = Duration.ofMinutes(5);
    /** Far more expiries than a leaked claim may outlive. */
    private static final Duration PATIENCE = Duration.ofSeconds(15);

    private final String share = "jg-keepalive-" + System.nanoTime();
    private final GraphInstances graphs = new GraphInstances(share);
    private final StaticBuffer column = buffer("c");

    @AfterEach
    void closeAll() throws BackendException {
        graphs.close();
    }

    private LockerStoreManager open(String instance, Duration expiry) throws BackendException {
        return open(instance, expiry, null);
    }

    /** With {@code storage.write-time} set ({@code null}: JanusGraph's default, 100 s). */
    private LockerStoreManager open(String instance, Duration expiry, Duration writeTime) throws BackendException {
        ModifiableConfiguration c = GraphInstances.config(share, instance, share,
                "mem:" + share + "?protocol=wait-and-read-back&lockWait=10ms",
                expiry);
        if (writeTime != null) {
            c.set(GraphDatabaseConfiguration.STORAGE_WRITE_WAITTIME, writeTime);
        }
        return graphs.open(c);
    }

    private dev.locker.api.KeyColumn lockOf(String storeName, StaticBuffer key) {
        return new LockKeys(share, storeName + "_lock_").lockOf(new KeyColumn(key, column));
    }

    private Map<String, Map<StaticBuffer, KCVMutation>> write(String storeName, StaticBuffer key, String value) {
        Map<StaticBuffer, KCVMutation> rows = new HashMap<>();
        rows.put(key, new KCVMutation(new ArrayList<>(List.of(StaticArrayEntry.of(column, buffer(value)))),
                new ArrayList<>()));
        Map<String, Map<StaticBuffer, KCVMutation>> m = new HashMap<>();
        m.put(storeName, rows);
        return m;
    }

    private static void await(BooleanSupplier condition, String what) throws InterruptedException {
        GraphInstances.await(condition, what, PATIENCE);
    }

    /** Tries b's locked commit until it succeeds or {@code within} passed; true when it did. */
    private static boolean commitsWithin(LockerStoreManager b, KeyColumnValueStore store, StaticBuffer key,
                                         StaticBuffer column, Duration within) throws Exception {
        long deadline = System.nanoTime() + within.toNanos();
        while (System.nanoTime() - deadline < 0) {
            if (tryLockedCommit(b, store, key, column)) {
                return true;
            }
            Thread.sleep(100);
        }
        return false;
    }

    /**
     * A transaction that passed its check and was neither committed nor rolled back is leaked. Its claims are not kept
     * alive for ever: b gets the lock within a few expiries.
     */
    @Test
    void aTransactionLeakedAfterItsCheckLosesItsLocksWithinAFewExpiries() throws Exception {
        // the keep-alive lasts storage.write-time (JanusGraph's retries of a data write) plus an expiry past the check
        // or the last write attempt: 2 s here (100 s by default), then the claims expire
        LockerStoreManager a = open("a", SHORT_EXPIRY, Duration.ofSeconds(2));
        LockerStoreManager b = open("b", SHORT_EXPIRY);
        KeyColumnValueStore storeA = a.openDatabase("graphindex");
        KeyColumnValueStore storeB = b.openDatabase("graphindex");
        StaticBuffer key = buffer("unique-value");
        ExpectedValueCheckingTransaction leaked = tx(a);
        lockAndCheck(storeA, key, column, leaked); // checked, kept alive; then never committed nor rolled back
        try {
            assertTrue(commitsWithin(b, storeB, key, column, PATIENCE),
                    "b never got the lock of a transaction leaked after its check: its claim is renewed for ever");
        } finally {
            leaked.rollback();
        }
    }

    /**
     * A store-level write (ExpectedValueCheckingStore.mutate) after the lock was force-released is refused. Every write
     * after the first checks the transaction's locks again, not only mutateMany.
     */
    @Test
    void aStoreLevelWriteAfterTheLockWasLostIsRefused() throws Exception {
        LockerStoreManager a = open("a", SHORT_EXPIRY);
        LockerStoreManager b = open("b", SHORT_EXPIRY);
        KeyColumnValueStore storeA = a.openDatabase("graphindex");
        StaticBuffer key = buffer("unique-value");
        ExpectedValueCheckingTransaction t = tx(a);
        lockAndCheck(storeA, key, column, t);
        dev.locker.api.KeyColumn lock = lockOf("graphindex", key);
        assertTrue(a.locker().status(lock, t.getConsistentTx()).isPresent(), "a holds the lock after its check");

        assertTrue(b.locker().forceRelease(lock, "an operator frees the lock"));
        await(() -> a.locker().status(lock, t.getConsistentTx()).isEmpty(), "a's keep-alive finds its claim gone");
        try {
            PermanentLockingException e = assertThrows(PermanentLockingException.class,
                    () -> storeA.mutate(buffer("more"), List.of(StaticArrayEntry.of(column, buffer("v2"))), List.of(),
                            t), "a store-level write after the lock was lost goes on");
            assertNotNull(e.getCause());
        } finally {
            t.rollback();
        }
    }

    // ---- found sound ------------------------------------------------------------------------------------------------

    /**
     * The same loss seen through mutateMany (JanusGraph's graph-level write): the write after the first fails
     * for good, with our ExpiredLockException as the cause; a write before the loss goes on.
     */
    @Test
    void aGraphLevelWriteAfterTheLockWasLostFailsForGood() throws Exception {
        GraphInstances.rerunUntil("a's keep-alive kept its claim through three expiries", this::graphLevelWriteAfterALoss);
    }

    private boolean graphLevelWriteAfterALoss(int stretch) throws Exception {
        Duration expiry = SHORT_EXPIRY.multipliedBy(stretch);
        LockerStoreManager a = open("a", expiry);
        LockerStoreManager b = open("b", expiry);
        a.openDatabase("graphindex");
        StaticBuffer key = buffer("unique-value-" + stretch);
        ExpectedValueCheckingTransaction t = tx(a);
        a.openDatabase("graphindex").acquireLock(key, column, null, t);
        a.mutateMany(write("graphindex", buffer("first"), "v1"), t); // the check, then the keep-alive
        Thread.sleep(expiry.multipliedBy(3).toMillis()); // several renewals: the claim stays ours
        try {
            a.mutateMany(write("graphindex", buffer("second"), "v2"), t);
        } catch (PermanentLockingException starved) {
            // a's keep-alive was starved past the expiry on a loaded machine: nothing to check in this run
            t.rollback();
            graphs.close();
            return false;
        }

        dev.locker.api.KeyColumn lock = lockOf("graphindex", key);
        assertTrue(b.locker().forceRelease(lock, "an operator frees the lock"));
        await(() -> a.locker().status(lock, t.getConsistentTx()).isEmpty(), "a's keep-alive finds its claim gone");
        PermanentLockingException e = assertThrows(PermanentLockingException.class,
                () -> a.mutateMany(write("graphindex", buffer("third"), "v3"), t));
        assertInstanceOf(ExpiredLockException.class, e.getCause(), e.toString());
        t.rollback();
        graphs.close();
        return true;
    }

    /**
     * Two stores share the one Locker. A transaction with a lock on each is checked at its first mutateMany
     * (the second store's check costs nothing) and both claims are kept alive across many expiries (b is refused on
     * both all along); the commit releases both (b takes both at once). A run where a's keep-alive was starved past
     * the expiry is run again, stretched.
     */
    @Test
    void bothStoresLocksAreKeptAliveAndReleasedTogether() throws Exception {
        GraphInstances.rerunUntil("a's keep-alive kept both claims alive while b tried", this::bothKeptAlive);
    }

    /**
     * One run with the expiry stretched by {@code stretch}; false when b took a lock after a's claim on it lapsed
     * unrenewed (a's locker had given it up, so b's grant was legitimate).
     */
    private boolean bothKeptAlive(int stretch) throws Exception {
        Duration expiry = SHORT_EXPIRY.multipliedBy(stretch);
        LockerStoreManager a = open("a", expiry);
        LockerStoreManager b = open("b", expiry);
        StaticBuffer indexKey = buffer("index-key-" + stretch);
        StaticBuffer edgeKey = buffer("edge-key-" + stretch);
        ExpectedValueCheckingTransaction t = tx(a);
        a.openDatabase("graphindex").acquireLock(indexKey, column, null, t);
        a.openDatabase("edgestore").acquireLock(edgeKey, column, null, t);
        Map<String, Map<StaticBuffer, KCVMutation>> both = write("graphindex", buffer("i"), "v");
        both.putAll(write("edgestore", buffer("e"), "v"));
        a.mutateMany(both, t);

        KeyColumnValueStore indexB = b.openDatabase("graphindex");
        KeyColumnValueStore edgesB = b.openDatabase("edgestore");
        long until = System.nanoTime() + expiry.multipliedBy(5).toNanos();
        while (System.nanoTime() - until < 0) {
            if (tookWhileKeptAlive(b, indexB, indexKey, a, lockOf("graphindex", indexKey), t, "index")
                    || tookWhileKeptAlive(b, edgesB, edgeKey, a, lockOf("edgestore", edgeKey), t, "edge")) {
                t.rollback();
                graphs.close();
                return false;
            }
            Thread.sleep(100);
        }
        t.commit();
        assertTrue(tryLockedCommit(b, indexB, indexKey, column), "a's commit released the index lock");
        assertTrue(tryLockedCommit(b, edgesB, edgeKey, column), "a's commit released the edge lock");
        graphs.close();
        return true;
    }

    /**
     * b's locked commit on {@code key}: false when refused; true when granted after a's claim lapsed unrenewed. A grant
     * while a's locker still believed in its claim fails the test: two holders.
     */
    private boolean tookWhileKeptAlive(LockerStoreManager b, KeyColumnValueStore store, StaticBuffer key,
                                       LockerStoreManager a, dev.locker.api.KeyColumn lock,
                                       ExpectedValueCheckingTransaction t, String which) throws Exception {
        if (!tryLockedCommit(b, store, key, column)) {
            return false;
        }
        boolean aStillBelieved = GraphInstances.stillBelieves(a.locker(), lock, t.getConsistentTx());
        System.out.printf("[locker-janusgraph] b took the %s lock; a still believed in its claim: %s%n", which,
                aStillBelieved);
        assertFalse(aStillBelieved, "b took the " + which + " lock a keeps alive");
        return true;
    }

    /**
     * A checked transaction whose renewals stop, as a keep-alive starved past the expiry makes no renewal: b takes the
     * lock only after a's locker gave its claim up, and a's next write fails for good.
     */
    @Test
    void aLockWhoseRenewalsStopGoesToAnotherInstanceOnlyAfterItsHolderGaveItUp() throws Exception {
        LockerStoreManager a = open("a", SHORT_EXPIRY);
        LockerStoreManager b = open("b", SHORT_EXPIRY);
        StaticBuffer key = buffer("index-key");
        ExpectedValueCheckingTransaction t = tx(a);
        a.openDatabase("graphindex").acquireLock(key, column, null, t);
        a.mutateMany(write("graphindex", buffer("first"), "v1"), t); // the check, then the keep-alive
        a.locker().keepAlive(t.getConsistentTx(), false);

        KeyColumnValueStore indexB = b.openDatabase("graphindex");
        boolean took = false;
        long deadline = System.nanoTime() + PATIENCE.toNanos();
        while (!took && System.nanoTime() - deadline < 0) {
            took = tookWhileKeptAlive(b, indexB, key, a, lockOf("graphindex", key), t, "index");
            Thread.sleep(50);
        }
        assertTrue(took, "b took the lock once a's unrenewed claim expired");
        PermanentLockingException e = assertThrows(PermanentLockingException.class,
                () -> a.mutateMany(write("graphindex", buffer("second"), "v2"), t));
        assertNotNull(e.getCause(), e.toString());
        t.rollback();
    }

    /**
     * Closing an instance after its transaction's check (keep-alive running) releases the claims at once (b,
     * while a's claims would live 5 minutes, commits right away) and the transaction's next write fails for good.
     */
    @Test
    void closingAnInstanceAfterTheCheckStopsTheKeepAliveAndReleases() throws Exception {
        LockerStoreManager a = open("a", LONG_EXPIRY);
        LockerStoreManager b = open("b", LONG_EXPIRY);
        StaticBuffer key = buffer("unique-value");
        ExpectedValueCheckingTransaction t = tx(a);
        a.openDatabase("graphindex").acquireLock(key, column, null, t);
        a.mutateMany(write("graphindex", buffer("first"), "v1"), t);
        a.close();
        graphs.closed(a);
        assertTrue(tryLockedCommit(b, b.openDatabase("graphindex"), key, column), "a's close released its claim");
        PermanentLockingException e = assertThrows(PermanentLockingException.class,
                () -> a.mutateMany(write("graphindex", buffer("second"), "v2"), t));
        assertInstanceOf(IllegalStateException.class, e.getCause(), e.toString());
        t.rollback();
    }

    private JanusGraph graph(String instance, Duration expiry) {
        return graphs.graph(instance, expiry);
    }

    /**
     * A commit whose data write fails after the check, even with an Error,
     * is rolled back by JanusGraph (BackendOperation turns any Throwable of the write into a PermanentBackendException,
     * and StandardJanusGraphTx.commit rolls back on an Exception), so its kept-alive claims are released at once: b,
     * while a's claim would live 5 minutes, commits the same unique value right after.
     */
    @Test
    void aCommitWhoseDataWriteFailsWithAnErrorIsRolledBackAndReleased() throws Exception {
        JanusGraph a = graph("instance-a", LONG_EXPIRY);
        JanusGraphManagement m = a.openManagement();
        PropertyKey name = m.makePropertyKey("name").dataType(String.class).make();
        JanusGraphIndex byName = m.buildIndex("byName", Vertex.class).addKey(name).unique().buildCompositeIndex();
        m.setConsistency(byName, ConsistencyModifier.LOCK);
        m.commit();
        JanusGraph b = graph("instance-b", LONG_EXPIRY);

        Thread writer = Thread.currentThread();
        HookedStoreManager.BEFORE_MUTATE_MANY.put(share, () -> {
            if (Thread.currentThread() == writer) {
                throw new OutOfMemoryError("the data write ran out of memory");
            }
        });
        JanusGraphTransaction tx = a.newTransaction();
        tx.addVertex("name", "v");
        AtomicReference<Throwable> failed = new AtomicReference<>();
        try {
            tx.commit();
        } catch (Throwable e) {
            failed.set(e);
        }
        HookedStoreManager.BEFORE_MUTATE_MANY.remove(share);
        assertNotNull(failed.get(), "a's commit failed");
        assertInstanceOf(RuntimeException.class, failed.get(), "JanusGraph turned the Error into an exception");
        assertFalse(tx.isOpen());

        JanusGraphTransaction tb = b.newTransaction();
        tb.addVertex("name", "v");
        tb.commit(); // the lock is free at once: a's rollback released it
        JanusGraphTransaction read = b.newTransaction();
        assertEquals(1L, read.traversal().V().has("name", "v").count().next());
        read.rollback();
    }

    /**
     * The graph layer cannot leak a checked transaction this way: a's commit checks its
     * unique-index lock and writes its data, then the data backend's transaction commit fails with an Error (an
     * OutOfMemoryError here), outside JanusGraph's BackendOperation: ExpectedValueCheckingTransaction.commit commits
     * the data transaction before it deletes the locks, and StandardJanusGraphTx.commit catches Exception only. But
     * StandardJanusGraph.commit catches every Throwable of its commit, logs it and rolls the backend transaction back
     * (deleteLocks), so the lock is gone at once although the Error reaches the caller as it is.
     */
    @Test
    void aCommitFailingWithAnErrorOutsideTheWriteRetryIsStillRolledBack() throws Exception {
        JanusGraph a = graph("instance-a", SHORT_EXPIRY);
        JanusGraphManagement m = a.openManagement();
        PropertyKey name = m.makePropertyKey("name").dataType(String.class).make();
        JanusGraphIndex byName = m.buildIndex("byName", Vertex.class).addKey(name).unique().buildCompositeIndex();
        m.setConsistency(byName, ConsistencyModifier.LOCK);
        m.commit();
        LockerStoreManager lockers = (LockerStoreManager) ((StandardJanusGraph) a).getBackend().getStoreManager();
        byte[] namespace = LockKeys.namespacePrefix(share);

        Thread writer = Thread.currentThread();
        AtomicBoolean once = new AtomicBoolean();
        AtomicBoolean heldAtTheError = new AtomicBoolean();
        HookedStoreManager.BEFORE_TX_COMMIT.put(share, () -> {
            if (Thread.currentThread() == writer && once.compareAndSet(false, true)) {
                heldAtTheError.set(!lockers.locker().list(namespace, 10, null).locks().isEmpty());
                throw new OutOfMemoryError("the data transaction's commit ran out of memory");
            }
        });
        JanusGraphTransaction tx = a.newTransaction();
        tx.addVertex("name", "v");
        AtomicReference<Throwable> failed = new AtomicReference<>();
        try {
            tx.commit();
        } catch (Throwable e) {
            failed.set(e);
        }
        assertInstanceOf(OutOfMemoryError.class, failed.get(), "the Error reached the caller as it is");
        assertFalse(tx.isOpen(), "JanusGraph closed the transaction: nobody can roll it back now");
        assertTrue(heldAtTheError.get(), "the lock was held (checked, kept alive) when the Error was thrown");
        assertTrue(lockers.locker().list(namespace, 10, null).locks().isEmpty(),
                "JanusGraph's rollback after the Error released the lock at once");
    }
}
