package dev.locker.janusgraph;

import dev.locker.api.Locker;
import org.janusgraph.diskstorage.BackendException;
import org.janusgraph.diskstorage.StaticBuffer;
import org.janusgraph.diskstorage.configuration.ModifiableConfiguration;
import org.janusgraph.diskstorage.keycolumnvalue.KeyColumnValueStore;
import org.janusgraph.diskstorage.keycolumnvalue.StoreTransaction;
import org.janusgraph.diskstorage.locking.PermanentLockingException;
import org.janusgraph.diskstorage.locking.TemporaryLockingException;
import org.janusgraph.diskstorage.locking.consistentkey.ExpectedValueCheckingTransaction;
import org.janusgraph.diskstorage.util.KeyColumn;
import org.janusgraph.diskstorage.util.StaticArrayEntry;
import org.janusgraph.graphdb.configuration.GraphDatabaseConfiguration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static dev.locker.janusgraph.GraphInstances.buffer;
import static dev.locker.janusgraph.GraphInstances.lockAndCheck;
import static dev.locker.janusgraph.GraphInstances.lockAndWrite;
import static dev.locker.janusgraph.GraphInstances.tryCommit;
import static dev.locker.janusgraph.GraphInstances.tryCommitRepeatedly;
import static dev.locker.janusgraph.GraphInstances.tryLockedCommit;
import static dev.locker.janusgraph.GraphInstances.tx;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * JanusGraph's store-level locking through LockerStoreManager on mem: (wait-and-read-back): acquireLock, then mutate
 * (checkLocks and the expected-value check), then commit or rollback. Several instances share one data store and one
 * Locker backend, and meet on every lock.
 */
class JanusGraphStoreLockingTest {

    private static final Duration LONG_EXPIRY = Duration.ofMinutes(5);
    private final String share = "jg-" + System.nanoTime();
    private final GraphInstances graphs = new GraphInstances(share);

    private String memUri() {
        return "mem:" + share + "?protocol=wait-and-read-back&lockWait=10ms";
    }

    /** An instance of the graph {@code graph} (its data share), with its own mediator group and instance id. */
    private ModifiableConfiguration config(String graph, String instance, String uri) {
        return GraphInstances.config(graph, instance, null, uri, LONG_EXPIRY);
    }

    private ModifiableConfiguration config(String instance) {
        return GraphInstances.config(share, instance, share, memUri(), LONG_EXPIRY);
    }

    private LockerStoreManager open(ModifiableConfiguration c) throws BackendException {
        return graphs.open(c);
    }

    @AfterEach
    void closeAll() throws BackendException {
        graphs.close();
    }

    /**
     * The lock of a long index value does not depend on each instance's maxKeyBytes. Instances with 8192 and the
     * default 4096 meet on it, and only one commits the unique value.
     */
    @Test
    void instancesWithDifferentMaxKeyBytesStillMeetOnALongLock() throws Exception {
        LockerStoreManager a = open(config("a"));
        ModifiableConfiguration cb = config("b");
        cb.set(LockerOptions.URI, memUri() + "&maxKeyBytes=8192");
        LockerStoreManager b = open(cb);
        KeyColumnValueStore storeA = a.openDatabase("graphindex");
        KeyColumnValueStore storeB = b.openDatabase("graphindex");
        StaticBuffer key = buffer("v".repeat(5000));
        StaticBuffer column = buffer("c");

        StoreTransaction t1 = tx(a);
        lockAndCheck(storeA, key, column, t1);
        StoreTransaction t2 = tx(b);
        assertThrows(TemporaryLockingException.class, () -> lockAndCheck(storeB, key, column, t2),
                "instance b must meet instance a's lock on the same index value");
        t2.rollback();
        t1.commit();
    }

    /**
     * With the default namespace every graph on one Locker backend would share one namespace. One graph's clearStorage
     * does not force-release the live locks of another graph.
     */
    @Test
    void clearingOneGraphDoesNotReleaseAnotherGraphsLocks() throws Exception {
        String graphX = share + "-x";
        String graphY = share + "-y";
        String uri = memUri(); // one Locker backend, default namespace everywhere
        LockerStoreManager x1 = open(config(graphX, "x1", uri));
        LockerStoreManager x2 = open(config(graphX, "x2", uri));
        LockerStoreManager y = open(config(graphY, "y1", uri));
        KeyColumnValueStore store1 = x1.openDatabase("graphindex");
        KeyColumnValueStore store2 = x2.openDatabase("graphindex");
        StaticBuffer key = buffer("unique-value");
        StaticBuffer column = buffer("c");

        StoreTransaction t1 = tx(x1);
        lockAndCheck(store1, key, column, t1); // checked: t1 may commit
        y.clearStorage(); // another graph is dropped
        StoreTransaction t2 = tx(x2);
        assertThrows(TemporaryLockingException.class, () -> lockAndCheck(store2, key, column, t2),
                "graph X's lock is still held by t1: dropping graph Y must not hand it to t2");
        t2.rollback();
        t1.commit();
    }

    /**
     * Instance a's data write is held past a 1 s expiry while b keeps trying, then goes on. Exactly one of the two
     * commits the value. A run where a's keep-alive was starved past the expiry is run again, stretched.
     */
    @Test
    void aDataWriteHeldPastTheExpiryDoesNotLetASecondInstanceCommit() throws Exception {
        GraphInstances.rerunUntil("a's keep-alive kept its claim alive while b tried", this::heldWrite);
    }

    /**
     * One run of the held write, with a {@code stretch} s expiry; false when b committed after a's claim lapsed
     * unrenewed. A lapsed claim is a's legitimate loss: a's locker gave it up before b's grant. But a's write was
     * already past its check, and JanusGraph's writes carry no fencing token to stop it (as documented).
     */
    private boolean heldWrite(int stretch) throws Exception {
        Duration expiry = Duration.ofSeconds(stretch);
        ModifiableConfiguration ca = config("a");
        ca.set(GraphDatabaseConfiguration.LOCK_EXPIRE, expiry);
        ModifiableConfiguration cb = config("b");
        cb.set(GraphDatabaseConfiguration.LOCK_EXPIRE, expiry);
        LockerStoreManager a = open(ca);
        LockerStoreManager b = open(cb);
        KeyColumnValueStore storeA = a.openDatabase("graphindex");
        KeyColumnValueStore storeB = b.openDatabase("graphindex");
        StaticBuffer key = buffer("unique-value-" + stretch);
        StaticBuffer column = buffer("c");
        dev.locker.api.KeyColumn lock = new LockKeys(share, "graphindex_lock_").lockOf(new KeyColumn(key, column));
        ExpectedValueCheckingTransaction t1 = tx(a);

        CountDownLatch aWriting = new CountDownLatch(1);
        CountDownLatch goOn = new CountDownLatch(1);
        AtomicReference<Thread> writerA = new AtomicReference<>();
        HookedStoreManager.BEFORE_MUTATE.put(share, () -> {
            if (Thread.currentThread() == writerA.get()) {
                aWriting.countDown();
                try {
                    goOn.await(60, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        });
        AtomicBoolean aCommitted = new AtomicBoolean();
        AtomicReference<Throwable> aFailed = new AtomicReference<>();
        Thread ta = new Thread(() -> aCommitted.set(commitOrRollBack(storeA, key, column, "a", t1, aFailed)),
                "instance-a-commit");
        writerA.set(ta);
        ta.start();
        assertTrue(aWriting.await(30, TimeUnit.SECONDS), "a reached its data write (its locks checked)");

        boolean bCommitted = tryCommitRepeatedly(b, storeB, key, column, "b", 60, 100L * stretch);
        boolean aStillBelieved = GraphInstances.stillBelieves(a.locker(), lock, t1.getConsistentTx());
        goOn.countDown();
        ta.join(60_000);
        System.out.printf("[locker-janusgraph] held write, stretch %d: a committed=%s (failure %s, still believed "
                + "at b's commit: %s), b committed=%s%n", stretch, aCommitted.get(), aFailed.get(), aStillBelieved,
                bCommitted);
        graphs.close();
        if (bCommitted && !aStillBelieved) {
            return false; // a's keep-alive was starved past the expiry: b's grant was legitimate
        }
        assertFalse(aCommitted.get() && bCommitted, "two instances committed under one lock");
        return true;
    }

    /** JanusGraph's steps for {@code t}: lock, write, commit; false (rolled back) on a failure, kept in {@code failed}. */
    private static boolean commitOrRollBack(KeyColumnValueStore store, StaticBuffer key, StaticBuffer column,
                                            String value, StoreTransaction t, AtomicReference<Throwable> failed) {
        try {
            lockAndWrite(store, key, column, value, t);
            t.commit();
            return true;
        } catch (Throwable e) {
            failed.set(e);
            try {
                t.rollback();
            } catch (BackendException | RuntimeException again) {
                e.addSuppressed(again);
            }
            return false;
        }
    }

    /**
     * A data write paused past its claim's expiry while a's keep-alive cannot renew, as on a starved machine. b commits
     * only after a's locker gave the claim up; a's write, already past its check, still lands, unfenced.
     */
    @Test
    void aDataWriteOutlivingItsUnrenewedClaimLandsOnlyAfterItsLockerGaveTheClaimUp() throws Exception {
        ModifiableConfiguration ca = config("a");
        ca.set(GraphDatabaseConfiguration.LOCK_EXPIRE, Duration.ofMillis(500));
        ModifiableConfiguration cb = config("b");
        cb.set(GraphDatabaseConfiguration.LOCK_EXPIRE, Duration.ofMillis(500));
        LockerStoreManager a = open(ca);
        LockerStoreManager b = open(cb);
        KeyColumnValueStore storeA = a.openDatabase("graphindex");
        KeyColumnValueStore storeB = b.openDatabase("graphindex");
        StaticBuffer key = buffer("unique-value");
        StaticBuffer column = buffer("c");
        dev.locker.api.KeyColumn lock = new LockKeys(share, "graphindex_lock_").lockOf(new KeyColumn(key, column));
        ExpectedValueCheckingTransaction t1 = tx(a);

        CountDownLatch aWriting = new CountDownLatch(1);
        CountDownLatch goOn = new CountDownLatch(1);
        AtomicReference<Thread> writerA = new AtomicReference<>();
        HookedStoreManager.BEFORE_MUTATE.put(share, () -> {
            if (Thread.currentThread() == writerA.get()) {
                // the keep-alive that checkLocks started renews no more, as a thread starved past the expiry would not
                a.locker().keepAlive(t1.getConsistentTx(), false);
                aWriting.countDown();
                try {
                    goOn.await(60, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        });
        AtomicBoolean aCommitted = new AtomicBoolean();
        AtomicReference<Throwable> aFailed = new AtomicReference<>();
        Thread ta = new Thread(() -> aCommitted.set(commitOrRollBack(storeA, key, column, "a", t1, aFailed)),
                "instance-a-commit");
        writerA.set(ta);
        ta.start();
        assertTrue(aWriting.await(30, TimeUnit.SECONDS), "a reached its data write (its locks checked)");

        boolean bCommitted = tryCommitRepeatedly(b, storeB, key, column, "b", 300, 100);
        boolean aStillBelieved = GraphInstances.stillBelieves(a.locker(), lock, t1.getConsistentTx());
        goOn.countDown();
        ta.join(60_000);
        assertTrue(bCommitted, "b commits once a's unrenewed claim expired");
        assertFalse(aStillBelieved, "b committed while a's locker still believed it held the lock");
        assertTrue(aCommitted.get(), "a's write, past its check before its claim expired, lands: JanusGraph's writes "
                + "carry no fencing token (failure: " + aFailed.get() + ")");
    }

    /**
     * A transaction whose lock on one store is contended, after it took a lock on another: its rollback (JanusGraph
     * calls deleteLocks of the stores it locked on) releases every lock it took, through the one shared Locker.
     */
    @Test
    void aTransactionFailingHalfWayReleasesWhatItTookAtRollback() throws Exception {
        LockerStoreManager a = open(config("a"));
        LockerStoreManager b = open(config("b"));
        KeyColumnValueStore indexA = a.openDatabase("graphindex");
        KeyColumnValueStore edgesB = b.openDatabase("edgestore");
        KeyColumnValueStore indexB = b.openDatabase("graphindex");
        StaticBuffer column = buffer("c");

        StoreTransaction holder = tx(a);
        lockAndWrite(indexA, buffer("taken"), column, "x", holder);

        StoreTransaction t = tx(b);
        edgesB.acquireLock(buffer("free"), column, null, t); // its first lock, on another store
        indexB.acquireLock(buffer("taken"), column, null, t);
        assertThrows(TemporaryLockingException.class,
                () -> indexB.mutate(buffer("taken"), List.of(StaticArrayEntry.of(column, buffer("y"))), List.of(), t));
        t.rollback();

        KeyColumnValueStore edgesA = a.openDatabase("edgestore");
        assertTrue(tryCommit(a, edgesA, buffer("free"), column, "z"), "the lock t took on edgestore was released");
        holder.commit();
    }

    /**
     * One Locker serves every store of an instance, so the first store's checkLocks checks all of the transaction's
     * locks; a lock written on a second store after that check is still checked by the second store's checkLocks
     * (JanusGraph's store refuses acquireLock once mutations started; the adapter checks it anyway).
     */
    @Test
    void aLockWrittenOnAnotherStoreAfterTheFirstStoresCheckIsStillChecked() throws Exception {
        LockerStoreManager a = open(config("a"));
        LockerStoreManager b = open(config("b"));
        KeyColumnValueStore edgesB = b.openDatabase("edgestore");
        StaticBuffer column = buffer("c");
        StoreTransaction holder = tx(b);
        lockAndWrite(edgesB, buffer("k"), column, "x", holder);

        Locker locker = a.locker();
        JanusGraphLocker index = new JanusGraphLocker(locker, new LockKeys(share, "graphindex_lock_"), a.commitKeepAlive());
        JanusGraphLocker edges = new JanusGraphLocker(locker, new LockKeys(share, "edgestore_lock_"), a.commitKeepAlive());
        StoreTransaction t = tx(a).getConsistentTx();
        index.writeLock(new KeyColumn(buffer("k1"), column), t);
        index.checkLocks(t);
        try {
            edges.writeLock(new KeyColumn(buffer("k"), column), t); // may be written: mem: decides at the check
            assertThrows(TemporaryLockingException.class, () -> edges.checkLocks(t));
            assertThrows(TemporaryLockingException.class, () -> index.checkLocks(t),
                    "the first store's locker checks the transaction's every lock too");
        } catch (TemporaryLockingException refusedAtOnce) {
            // a backend that decides at the write refused it there: as good
        } finally {
            index.deleteLocks(t);
            edges.deleteLocks(t);
        }
        StoreTransaction late = tx(a);
        KeyColumnValueStore indexA = a.openDatabase("graphindex");
        lockAndWrite(indexA, buffer("k2"), column, "x", late);
        PermanentLockingException e = assertThrows(PermanentLockingException.class,
                () -> a.openDatabase("edgestore").acquireLock(buffer("k3"), column, null, late));
        assertTrue(e.getMessage().contains("after mutations"), e.getMessage());
        late.rollback();
        holder.commit();
    }

    /** One graph's stores never share a lock; nor do (key, column) splits of the same bytes; nor two long values. */
    @Test
    void distinctJanusGraphLocksAreDistinctLocks() throws Exception {
        LockerStoreManager a = open(config("a"));
        LockerStoreManager b = open(config("b"));
        StaticBuffer column = buffer("c");
        StoreTransaction t1 = tx(a);
        StoreTransaction t2 = tx(b);
        String longValue = "w".repeat(6000);
        a.openDatabase("graphindex").acquireLock(buffer("k"), column, null, t1);
        a.openDatabase("graphindex").acquireLock(buffer("ab"), buffer("c"), null, t1);
        a.openDatabase("graphindex").acquireLock(buffer(longValue + "1"), column, null, t1);
        b.openDatabase("edgestore").acquireLock(buffer("k"), column, null, t2);
        b.openDatabase("graphindex").acquireLock(buffer("a"), buffer("bc"), null, t2);
        b.openDatabase("graphindex").acquireLock(buffer(longValue + "2"), column, null, t2);
        lockAndCheck(a.openDatabase("graphindex"), buffer("k0"), column, t1); // checks all of t1's locks
        lockAndCheck(b.openDatabase("graphindex"), buffer("k0b"), column, t2);
        t1.commit();
        t2.commit();
    }

    /**
     * A claim that expired (and was taken by another instance) reaches JanusGraph as its TemporaryLockingException
     * (as its own ExpiredLockException does), with ours as the cause; the transaction never commits through it, however
     * often its mutation is retried (JanusGraph's BackendOperation retries a temporary failure).
     */
    @Test
    void anExpiredClaimNeverLetsItsTransactionCommit() throws Exception {
        ModifiableConfiguration ca = config("a");
        ca.set(GraphDatabaseConfiguration.LOCK_EXPIRE, Duration.ofMillis(300));
        LockerStoreManager a = open(ca);
        LockerStoreManager b = open(config("b"));
        KeyColumnValueStore storeA = a.openDatabase("graphindex");
        KeyColumnValueStore storeB = b.openDatabase("graphindex");
        StaticBuffer key = buffer("unique-value");
        StaticBuffer column = buffer("c");

        StoreTransaction t1 = tx(a);
        storeA.acquireLock(key, column, null, t1);
        boolean bCommitted = tryCommitRepeatedly(b, storeB, key, column, "b", 100, 50); // a's claim expires meanwhile
        assertTrue(bCommitted, "b took the lock once a's claim expired");
        for (int retry = 0; retry < 3; retry++) {
            TemporaryLockingException e = assertThrows(TemporaryLockingException.class,
                    () -> storeA.mutate(key, List.of(StaticArrayEntry.of(column, buffer("a"))), List.of(), t1));
            assertInstanceOf(dev.locker.api.ExpiredLockException.class, e.getCause(), e.toString());
        }
        t1.rollback();
    }

    /**
     * Closing an instance with a transaction in flight releases its locks (another instance takes them at once) and
     * fails the transaction's next step for good; its rollback still succeeds.
     */
    @Test
    void closingAnInstanceUnderAnOpenTransactionFailsItClosed() throws Exception {
        LockerStoreManager a = new LockerStoreManager(config("a"));
        LockerStoreManager b = open(config("b"));
        KeyColumnValueStore storeA = a.openDatabase("graphindex");
        KeyColumnValueStore storeB = b.openDatabase("graphindex");
        StaticBuffer key = buffer("unique-value");
        StaticBuffer column = buffer("c");
        StoreTransaction t1 = tx(a);
        storeA.acquireLock(key, column, null, t1);
        a.close();
        PermanentLockingException e = assertThrows(PermanentLockingException.class,
                () -> storeA.mutate(key, List.of(StaticArrayEntry.of(column, buffer("a"))), List.of(), t1));
        assertInstanceOf(IllegalStateException.class, e.getCause());
        t1.rollback();
        assertTrue(tryCommit(b, storeB, key, column, "b"), "a's close released its claim");
    }

    /**
     * Contention found when the locks are checked (wait-and-read-back) reaches JanusGraph as its temporary exception,
     * with ours as the cause naming the lock and the holder.
     */
    @Test
    void contentionAtTheCheckNamesTheLockAndTheHolder() throws Exception {
        LockerStoreManager a = open(config("a"));
        LockerStoreManager b = open(config("b"));
        StaticBuffer key = buffer("unique-value");
        StaticBuffer column = buffer("c");
        StoreTransaction t1 = tx(a);
        lockAndCheck(a.openDatabase("graphindex"), key, column, t1);
        StoreTransaction t2 = tx(b);
        TemporaryLockingException e = assertThrows(TemporaryLockingException.class,
                () -> lockAndCheck(b.openDatabase("graphindex"), key, column, t2));
        dev.locker.api.TemporaryLockingException ours =
                assertInstanceOf(dev.locker.api.TemporaryLockingException.class, e.getCause());
        assertTrue(ours.lock() != null && ours.holder() != null && ours.holder().rid().startsWith("a"), e.toString());
        t2.rollback();
        t1.commit();
    }

    /** clearStorage also releases a long lock, held through its stand-in (which keeps the namespace prefix). */
    @Test
    void clearStorageReleasesALongLocksStandIn() throws Exception {
        LockerStoreManager a = open(config("a"));
        LockerStoreManager b = open(config("b"));
        StaticBuffer key = buffer("v".repeat(6000));
        StaticBuffer column = buffer("c");
        StoreTransaction leaked = tx(a);
        lockAndCheck(a.openDatabase("graphindex"), key, column, leaked);
        b.clearStorage();
        assertTrue(tryLockedCommit(b, b.openDatabase("graphindex"), key, column), "the stand-in was released");
    }

    /**
     * Closing an instance closes its data backend first, then its Locker (which releases its claims): a data write in
     * flight is ended (or refused) before another instance can take the locks it was made under.
     */
    @Test
    void closingAnInstanceClosesTheDataBackendBeforeReleasingItsLocks() throws Exception {
        LockerStoreManager a = new LockerStoreManager(config("a"));
        LockerStoreManager b = open(config("b"));
        KeyColumnValueStore storeA = a.openDatabase("graphindex");
        StaticBuffer key = buffer("unique-value");
        StaticBuffer column = buffer("c");
        StoreTransaction t1 = tx(a);
        lockAndCheck(storeA, key, column, t1);
        dev.locker.api.KeyColumn lock = new LockKeys(share, "graphindex_lock_")
                .lockOf(new KeyColumn(key, column));
        AtomicBoolean heldWhenDataClosed = new AtomicBoolean();
        HookedStoreManager.ON_CLOSE.put(share, () -> heldWhenDataClosed.set(b.locker().holder(lock).isPresent()));
        a.close();
        assertTrue(heldWhenDataClosed.get(), "a's lock was still held when its data backend closed");
        assertFalse(b.locker().holder(lock).isPresent(), "and released by the close");
    }

    /**
     * Two instances in one JVM naming one mediator group meet in-process first: the second fails at acquireLock with
     * a temporary failure, with no store I/O, and gets the lock once the first committed.
     */
    @Test
    void twoInstancesSharingAMediatorGroupMeetInProcess() throws Exception {
        ModifiableConfiguration ca = config("a");
        ModifiableConfiguration cb = config("b");
        ca.set(GraphDatabaseConfiguration.LOCK_LOCAL_MEDIATOR_GROUP, share + "/group");
        cb.set(GraphDatabaseConfiguration.LOCK_LOCAL_MEDIATOR_GROUP, share + "/group");
        LockerStoreManager a = open(ca);
        LockerStoreManager b = open(cb);
        KeyColumnValueStore storeA = a.openDatabase("graphindex");
        KeyColumnValueStore storeB = b.openDatabase("graphindex");
        StaticBuffer key = buffer("unique-value");
        StaticBuffer column = buffer("c");
        StoreTransaction t1 = tx(a);
        lockAndCheck(storeA, key, column, t1);
        StoreTransaction t2 = tx(b);
        TemporaryLockingException e = assertThrows(TemporaryLockingException.class,
                () -> storeB.acquireLock(key, column, null, t2));
        assertTrue(e.getMessage().contains("in this process"), e.getMessage());
        t2.rollback();
        t1.commit();
        assertTrue(tryLockedCommit(b, storeB, key, column));
    }

}
