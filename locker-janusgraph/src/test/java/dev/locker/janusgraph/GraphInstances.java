package dev.locker.janusgraph;

import dev.locker.api.KeyColumn;
import dev.locker.api.Locker;
import org.janusgraph.core.JanusGraph;
import org.janusgraph.core.JanusGraphFactory;
import org.janusgraph.diskstorage.BackendException;
import org.janusgraph.diskstorage.StaticBuffer;
import org.janusgraph.diskstorage.configuration.ModifiableConfiguration;
import org.janusgraph.diskstorage.keycolumnvalue.KeyColumnValueStore;
import org.janusgraph.diskstorage.keycolumnvalue.StoreTransaction;
import org.janusgraph.diskstorage.locking.TemporaryLockingException;
import org.janusgraph.diskstorage.locking.consistentkey.ExpectedValueCheckingTransaction;
import org.janusgraph.diskstorage.util.StandardBaseTransactionConfig;
import org.janusgraph.diskstorage.util.StaticArrayBuffer;
import org.janusgraph.diskstorage.util.StaticArrayEntry;
import org.janusgraph.diskstorage.util.time.TimestampProviders;
import org.janusgraph.graphdb.configuration.GraphDatabaseConfiguration;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.fail;

/**
 * The JanusGraph tests' scaffolding, written once: the store-manager configuration of an "instance" (its own instance
 * id and mediator group) on a data share of {@link HookedStoreManager}, the managers and graphs a test opened (closed
 * last-opened first, with the share's hooks removed), and JanusGraph's store-level steps (a transaction, a
 * locked write, a lock-and-check, a whole commit).
 */
final class GraphInstances implements AutoCloseable {

    private final String share;
    /** The managers and graphs opened, in order. */
    private final List<Object> opened = new ArrayList<>();

    /** The managers and graphs of one test on the data share {@code share} (also the hooks' key). */
    GraphInstances(String share) {
        this.share = share;
    }

    /**
     * An instance of the graph {@code graph} (its data share, on {@link HookedStoreManager}) with the locks at
     * {@code uri}, its own instance id and mediator group {@code graph/instance}; {@code namespace} null leaves
     * JanusGraph's default.
     */
    static ModifiableConfiguration config(String graph, String instance, String namespace, String uri,
                                          Duration expiry) {
        return config(HookedStoreManager.class, graph, instance, graph + "/" + instance, namespace, uri, expiry);
    }

    /** The same with the data backend and the mediator group named. */
    static ModifiableConfiguration config(Class<?> backend, String graph, String instance, String mediatorGroup,
                                          String namespace, String uri, Duration expiry) {
        ModifiableConfiguration c = GraphDatabaseConfiguration.buildGraphConfiguration();
        c.set(LockerOptions.BACKEND, backend.getName());
        c.set(GraphDatabaseConfiguration.STORAGE_DIRECTORY, graph);
        c.set(LockerOptions.URI, uri);
        if (namespace != null) {
            c.set(LockerOptions.NAMESPACE, namespace);
        }
        c.set(GraphDatabaseConfiguration.UNIQUE_INSTANCE_ID, instance);
        c.set(GraphDatabaseConfiguration.LOCK_LOCAL_MEDIATOR_GROUP, mediatorGroup);
        c.set(GraphDatabaseConfiguration.LOCK_EXPIRE, expiry);
        return c;
    }

    /** A manager on {@code c}, closed with the others. */
    LockerStoreManager open(ModifiableConfiguration c) throws BackendException {
        LockerStoreManager m = new LockerStoreManager(c);
        opened.add(m);
        return m;
    }

    /** Forgets {@code m}, which the test closed itself. */
    void closed(LockerStoreManager m) {
        opened.remove(m);
    }

    /**
     * A graph instance on the share, the locks on {@code mem:} (namespace: the share), with {@code expiry}; closed
     * with the others.
     */
    JanusGraph graph(String instance, Duration expiry) {
        JanusGraph g = JanusGraphFactory.build()
                .set("storage.backend", LockerStoreManager.class.getName())
                .set("storage.locker.backend", HookedStoreManager.class.getName())
                .set("storage.directory", share)
                .set("storage.locker.uri", "mem:" + share + "?protocol=wait-and-read-back&lockWait=10ms")
                .set("storage.locker.namespace", share)
                .set("graph.unique-instance-id", instance)
                .set("storage.lock.expiry-time", expiry)
                .set("ids.authority.wait-time", Duration.ofMillis(20))
                .set("schema.default", "none")
                .open();
        opened.add(g);
        return g;
    }

    /** Removes the share's hooks, then closes what was opened, last first. */
    @Override
    public void close() throws BackendException {
        HookedStoreManager.BEFORE_MUTATE.remove(share);
        HookedStoreManager.BEFORE_MUTATE_MANY.remove(share);
        HookedStoreManager.BEFORE_TX_COMMIT.remove(share);
        HookedStoreManager.ON_CLOSE.remove(share);
        for (int i = opened.size() - 1; i >= 0; i--) {
            Object o = opened.get(i);
            if (o instanceof JanusGraph g) {
                g.close();
            } else {
                ((LockerStoreManager) o).close();
            }
        }
        opened.clear();
    }

    static ExpectedValueCheckingTransaction tx(LockerStoreManager m) throws BackendException {
        return m.beginTransaction(StandardBaseTransactionConfig.of(TimestampProviders.MICRO));
    }

    static StaticBuffer buffer(String s) {
        return StaticArrayBuffer.of(s.getBytes(StandardCharsets.UTF_8));
    }

    /** JanusGraph's steps for one locked write: acquireLock, then mutate (which checks the locks first). */
    static void lockAndWrite(KeyColumnValueStore store, StaticBuffer key, StaticBuffer column, String value,
                             StoreTransaction t) throws BackendException {
        store.acquireLock(key, column, null, t);
        store.mutate(key, List.of(StaticArrayEntry.of(column, buffer(value))), List.of(), t);
    }

    /**
     * acquireLock on {@code key}, then a mutation of another row (JanusGraph checks every lock of the transaction at
     * its first mutation): the lock is checked while the locked row's expected value (none) stays true, so only the
     * lock can stop the transaction.
     */
    static void lockAndCheck(KeyColumnValueStore store, StaticBuffer key, StaticBuffer column, StoreTransaction t)
            throws BackendException {
        store.acquireLock(key, column, null, t);
        store.mutate(buffer("data-" + System.nanoTime()), List.of(StaticArrayEntry.of(column, buffer("v"))), List.of(), t);
    }

    /** Like {@link #tryCommit}, with {@link #lockAndCheck} (the locked row keeps its value). */
    static boolean tryLockedCommit(LockerStoreManager m, KeyColumnValueStore store, StaticBuffer key,
                                   StaticBuffer column) throws BackendException {
        StoreTransaction t = tx(m);
        try {
            lockAndCheck(store, key, column, t);
            t.commit();
            return true;
        } catch (TemporaryLockingException e) {
            t.rollback();
            return false;
        }
    }

    /** One whole transaction (lock, write, commit); false when it lost with a temporary locking failure (rolled back). */
    static boolean tryCommit(LockerStoreManager m, KeyColumnValueStore store, StaticBuffer key, StaticBuffer column,
                             String value) throws BackendException {
        StoreTransaction t = tx(m);
        try {
            lockAndWrite(store, key, column, value, t);
            t.commit();
            return true;
        } catch (TemporaryLockingException e) {
            t.rollback();
            return false;
        }
    }

    /**
     * {@link #tryCommit} up to {@code attempts} times, {@code pauseMillis} apart, until it commits; true when it did.
     */
    static boolean tryCommitRepeatedly(LockerStoreManager m, KeyColumnValueStore store, StaticBuffer key,
                                       StaticBuffer column, String value, int attempts, long pauseMillis)
            throws BackendException, InterruptedException {
        boolean committed = false;
        for (int attempt = 0; attempt < attempts && !committed; attempt++) {
            committed = tryCommit(m, store, key, column, value);
            if (!committed) {
                Thread.sleep(pauseMillis);
            }
        }
        return committed;
    }

    /** The longest stretch a rerun scenario is given before its precondition counts as missed. */
    static final int MAX_STRETCH = 4;

    /** One run of a scenario with its expiries multiplied by {@code stretch}; false when its precondition was missed. */
    interface StretchedRun {
        boolean run(int stretch) throws Exception;
    }

    /**
     * Runs {@code scenario} with a stretch of 1, then 2, then 4, until it reports that {@code precondition} held.
     * A keep-alive starved past the expiry on a loaded machine leaves nothing to check. So the next run stretches
     * the expiries. Each run asserts what it pins whenever its precondition held.
     */
    static void rerunUntil(String precondition, StretchedRun scenario) throws Exception {
        for (int stretch = 1; stretch <= MAX_STRETCH; stretch *= 2) {
            if (scenario.run(stretch)) {
                return;
            }
        }
        fail(precondition + ", in no run up to a stretch of " + MAX_STRETCH);
    }

    /**
     * Whether {@code tx} still believes it holds {@code lock}: checked, with its deadline on the locker's monotonic
     * clock still ahead. Asked after another instance was granted the lock, true means two holders. A renewal counts
     * only if it answered before the former deadline, so a belief still held now was held without a gap.
     */
    static boolean stillBelieves(Locker locker, KeyColumn lock, Object tx) {
        long now = locker.config().timeSource().nanoTime();
        return locker.status(lock, tx).map(s -> s.isHeld() && s.deadlineNanos() - now > 0).orElse(false);
    }

    /** Waits until {@code condition} holds, failing after {@code patience} (a generous bound, not a timing). */
    static void await(BooleanSupplier condition, String what, Duration patience) throws InterruptedException {
        long deadline = System.nanoTime() + patience.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                fail("not within " + patience + ": " + what);
            }
            Thread.sleep(20);
        }
    }
}
