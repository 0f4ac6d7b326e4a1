package dev.locker.janusgraph;

import dev.locker.api.LockInfo;
import dev.locker.api.LockPage;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.Lockers;
import dev.locker.api.LockingException;
import dev.locker.engine.LocalLockMediators;
import org.janusgraph.diskstorage.Backend;
import org.janusgraph.diskstorage.BackendException;
import org.janusgraph.diskstorage.StandardStoreManager;
import org.janusgraph.diskstorage.Entry;
import org.janusgraph.diskstorage.StaticBuffer;
import org.janusgraph.diskstorage.configuration.Configuration;
import org.janusgraph.diskstorage.keycolumnvalue.KCVMutation;
import org.janusgraph.diskstorage.keycolumnvalue.KCVSProxy;
import org.janusgraph.diskstorage.keycolumnvalue.KeyColumnValueStore;
import org.janusgraph.diskstorage.keycolumnvalue.KeyColumnValueStoreManager;
import org.janusgraph.diskstorage.keycolumnvalue.StoreManager;
import org.janusgraph.diskstorage.keycolumnvalue.StoreTransaction;
import org.janusgraph.diskstorage.keycolumnvalue.keyvalue.OrderedKeyValueStoreManager;
import org.janusgraph.diskstorage.keycolumnvalue.keyvalue.OrderedKeyValueStoreManagerAdapter;
import org.janusgraph.diskstorage.locking.PermanentLockingException;
import org.janusgraph.diskstorage.locking.consistentkey.ExpectedValueCheckingStoreManager;
import org.janusgraph.diskstorage.locking.consistentkey.ExpectedValueCheckingTransaction;
import org.janusgraph.graphdb.configuration.GraphDatabaseConfiguration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A JanusGraph store manager that keeps the graph's data in the backend it wraps and takes the graph's locks from a
 * Locker chosen by URI. Set {@code storage.backend=dev.locker.janusgraph.LockerStoreManager},
 * {@code storage.locker.backend} to the data backend and {@code storage.locker.uri} to the Locker backend. It reports
 * {@code locking=true}, so JanusGraph uses it as its locking store manager as it is; JanusGraph's expected-value
 * checking (extended here) then calls {@link JanusGraphLocker} for every lock.
 *
 * <p>Mapped from JanusGraph: {@code storage.lock.expiry-time} is the claim's expiry, {@code storage.lock.wait-time}
 * the lock-wait (wait-and-read-back backends only), {@code storage.lock.retries} the retries,
 * {@code storage.lock.local-mediator-group} the in-process arbitration shared by every graph instance of this JVM
 * naming that group (unset: the instance's own), {@code graph.unique-instance-id} the rid (a readable name; the locker
 * adds a random instance id). The URI's own query options override these.
 *
 * <p>A transaction that leaks (never committed nor rolled back) keeps its locks until its claims expire, up to one
 * {@code storage.lock.expiry-time} (300 s by default) in every instance, or, if it leaked after its check, up to
 * {@code storage.write-time} plus two expiries ({@link CommitKeepAlive}); in its own process the next transaction gets
 * the in-process record at the claim's deadline, never later. Lower the expiry if leaks are a concern.
 *
 * <p>From a transaction's check to its release its claims are kept alive, and each data write after its first checks
 * them again ({@link #mutateMany}): JanusGraph checks them only once, then may retry a write past the expiry.
 *
 * <p>Invariant: one Locker per store manager, closed with it; every lock key starts with the graph's
 * {@code storage.locker.namespace}, so {@link #clearStorage()} can release them all (only when the namespace is set:
 * the default one may be shared by other graphs).
 */
public class LockerStoreManager extends ExpectedValueCheckingStoreManager {

    private static final Logger log = LoggerFactory.getLogger(LockerStoreManager.class);

    /**
     * JanusGraph names its mediator groups process-wide ({@code storage.lock.local-mediator-group}), so the groups
     * live here, once per class loader, as JanusGraph's own do; lockers join a group's arbitration by name.
     */
    private static final LocalLockMediators GROUPS = new LocalLockMediators();

    private final Locker locker;
    private final String namespace;
    /** Whether {@code storage.locker.namespace} was set (not its shared default): only then does clearStorage release. */
    private final boolean namespaceSet;
    private final CommitKeepAlive keepAlives;
    /** The stores {@link #openDatabase} handed out, by name. Guarded by this. */
    private final Map<String, Rechecking> rechecking = new HashMap<>();

    public LockerStoreManager(Configuration config) throws BackendException {
        this(Parts.of(config));
    }

    private LockerStoreManager(Parts parts) {
        super(parts.data, Backend.LOCK_STORE_SUFFIX, parts.lockers::forName,
                parts.config.get(GraphDatabaseConfiguration.STORAGE_READ_WAITTIME));
        this.locker = parts.locker;
        this.namespace = parts.namespace;
        this.namespaceSet = parts.config.has(LockerOptions.NAMESPACE);
        this.keepAlives = parts.keepAlives;
    }

    /** The Locker this graph instance locks with (for operators: holders, listing). */
    public Locker locker() {
        return locker;
    }

    /**
     * Before each data write of a transaction after its first (a retry of a write that failed, a later chunk of a large
     * commit), checks again, without I/O, that its locks are still held: JanusGraph checks them only before the first.
     * A lock lost meanwhile (a renewal of the keep-alive that {@link JanusGraphLocker#checkLocks} started failed, a
     * forced release) fails the write for good: the transaction cannot get it back and must start again. A write that
     * goes on extends the keep-alive's end ({@link CommitKeepAlive}).
     */
    @Override
    public void mutateMany(Map<String, Map<StaticBuffer, KCVMutation>> mutations, StoreTransaction txh)
            throws BackendException {
        recheck(txh);
        super.mutateMany(mutations, txh);
    }

    /**
     * The data store {@code name} with its expected-value checks, whose writes after the first are checked again like
     * {@link #mutateMany}'s (JanusGraph's graph layer writes through mutateMany; the store API writes through these).
     */
    @Override
    public synchronized KeyColumnValueStore openDatabase(String name) throws BackendException {
        KeyColumnValueStore checked = super.openDatabase(name);
        Rechecking mine = rechecking.get(name);
        if (mine == null || mine.checked() != checked) {
            mine = new Rechecking(checked);
            rechecking.put(name, mine);
        }
        return mine;
    }

    /** See {@link #mutateMany}: after a transaction's first write, its locks are checked again before each one. */
    private void recheck(StoreTransaction txh) throws PermanentLockingException {
        if (!(txh instanceof ExpectedValueCheckingTransaction)) {
            return;
        }
        ExpectedValueCheckingTransaction etx = (ExpectedValueCheckingTransaction) txh;
        if (!etx.isMutationStarted()) {
            return; // JanusGraph checks them itself before the first write (which starts the keep-alive)
        }
        StoreTransaction tx = etx.getConsistentTx();
        try {
            locker.checkLocks(tx);
        } catch (LockingException | IllegalStateException e) {
            String message = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
            throw new PermanentLockingException("a lock of this transaction was lost before its data write went on: "
                    + message, e);
        }
        keepAlives.extend(tx);
    }

    /** A data store whose writes after a transaction's first are checked again ({@link #recheck}). */
    private final class Rechecking extends KCVSProxy {
        Rechecking(KeyColumnValueStore checked) {
            super(checked);
        }

        /** The expected-value checking store this one wraps. */
        KeyColumnValueStore checked() {
            return store;
        }

        @Override
        public void mutate(StaticBuffer key, List<Entry> additions, List<StaticBuffer> deletions, StoreTransaction txh)
                throws BackendException {
            recheck(txh);
            super.mutate(key, additions, deletions, txh);
        }
    }

    /** The keep-alive of committing transactions (for tests). */
    CommitKeepAlive commitKeepAlive() {
        return keepAlives;
    }

    /**
     * Clears the data backend and, when {@code storage.locker.namespace} is set, releases every lock of that
     * namespace. Under the default namespace nothing is released: every graph that does not set one shares it, and a
     * forced release there would take live locks from other graphs (their claims expire on their own).
     */
    @Override
    public void clearStorage() throws BackendException {
        super.clearStorage();
        if (!namespaceSet) {
            log.warn("clearStorage released no lock: storage.locker.namespace is not set, and the default namespace "
                    + "'{}' may be shared by other graphs on the same Locker backend (this graph's claims expire on "
                    + "their own within storage.lock.expiry-time; set storage.locker.namespace, distinct per graph, "
                    + "to have clearStorage release them)", namespace);
            return;
        }
        try {
            int released = releaseAll(locker, namespace);
            log.info("clearStorage released {} lock(s) of namespace '{}'", released, namespace);
        } catch (LockingException | IllegalStateException e) {
            throw JanusGraphLocker.translated(e);
        }
    }

    /** Force-releases every held lock whose key starts with the namespace; returns how many. */
    static int releaseAll(Locker locker, String namespace) {
        byte[] prefix = LockKeys.namespacePrefix(namespace);
        int released = 0;
        String cursor = null;
        do {
            LockPage page = locker.list(prefix, 1000, cursor);
            for (LockInfo info : page.locks()) {
                if (locker.forceRelease(info.lock())) {
                    released++;
                }
            }
            cursor = page.nextCursor().orElse(null);
        } while (cursor != null);
        return released;
    }

    @Override
    public void close() throws BackendException {
        try {
            super.close();
        } finally {
            keepAlives.close();
            locker.close();
        }
    }

    @Override
    public String toString() {
        return "LockerStoreManager[data=" + manager.getName() + ", locker rid=" + locker.rid() + "]";
    }

    /** What the constructor needs before {@code super(...)}: the data backend, the Locker, the per-name adapters. */
    private static final class Parts {
        final Configuration config;
        final KeyColumnValueStoreManager data;
        final Locker locker;
        final String namespace;
        final Adapters lockers;
        final CommitKeepAlive keepAlives;
        /** The configuration the Locker runs with: JanusGraph's settings with the URI's options applied. */

        private Parts(Configuration config, KeyColumnValueStoreManager data, Locker locker, String namespace) {
            this.config = config;
            this.data = data;
            this.locker = locker;
            this.namespace = namespace;
            // a commit's locks are kept alive through JanusGraph's retries of its data writes, and an expiry past them
            this.keepAlives = new CommitKeepAlive(locker,
                    config.get(GraphDatabaseConfiguration.STORAGE_WRITE_WAITTIME).plus(locker.config().expiry()));
            this.lockers = new Adapters(locker, namespace, keepAlives);
        }

        static Parts of(Configuration config) throws BackendException {
            // every input is checked before any connection is made
            String backend = required(config, LockerOptions.BACKEND);
            String uri = required(config, LockerOptions.URI);
            if (backend.equals(LockerStoreManager.class.getName())) {
                throw new IllegalArgumentException(LockerOptions.BACKEND.toStringWithoutRoot()
                        + " must name the data backend, not " + LockerStoreManager.class.getSimpleName() + " itself");
            }
            String namespace = config.get(LockerOptions.NAMESPACE);
            LockKeys.namespacePrefix(namespace); // validates it
            LockerConfig lockerConfig = lockerConfig(config);
            LockerConfig effective = Lockers.check(uri, lockerConfig); // the URI too, before the data backend's I/O
            LockKeys.requireRoom(effective.maxKeyBytes());
            KeyColumnValueStoreManager data = dataBackend(config, backend);
            Locker locker;
            try {
                locker = Lockers.open(uri, lockerConfig);
            } catch (RuntimeException e) {
                closeQuietly(data);
                if (e instanceof LockingException || e instanceof IllegalStateException) {
                    throw JanusGraphLocker.translated(e);
                }
                throw e;
            }
            log.info("JanusGraph locks on {} (rid {}), data on {}", Lockers.redact(uri), locker.rid(), data.getName());
            return new Parts(config, data, locker, namespace);
        }

        private static LockerConfig lockerConfig(Configuration config) {
            LockerConfig.Builder b = LockerConfig.builder()
                    .expiry(config.get(GraphDatabaseConfiguration.LOCK_EXPIRE))
                    .lockWait(config.get(GraphDatabaseConfiguration.LOCK_WAIT))
                    .retries(config.get(GraphDatabaseConfiguration.LOCK_RETRY))
                    .why("janusgraph transaction");
            if (config.has(GraphDatabaseConfiguration.UNIQUE_INSTANCE_ID)) {
                b.rid(config.get(GraphDatabaseConfiguration.UNIQUE_INSTANCE_ID));
            }
            if (config.has(GraphDatabaseConfiguration.LOCK_LOCAL_MEDIATOR_GROUP)) {
                b.localArbitration(GROUPS.forNamespace(config.get(GraphDatabaseConfiguration.LOCK_LOCAL_MEDIATOR_GROUP)));
            }
            return b.build();
        }

        private static KeyColumnValueStoreManager dataBackend(Configuration config, String backend) {
            Object m = Backend.getImplementationClass(config, backend, StandardStoreManager.getAllManagerClasses());
            if (m instanceof KeyColumnValueStoreManager) {
                return (KeyColumnValueStoreManager) m;
            }
            if (m instanceof OrderedKeyValueStoreManager) {
                return new OrderedKeyValueStoreManagerAdapter((OrderedKeyValueStoreManager) m);
            }
            closeQuietly((StoreManager) m);
            throw new IllegalArgumentException(LockerOptions.BACKEND.toStringWithoutRoot() + " '" + backend
                    + "' is not a key-column-value or ordered key-value store manager");
        }

        private static String required(Configuration config, org.janusgraph.diskstorage.configuration.ConfigOption<String> option) {
            if (!config.has(option) || config.get(option) == null || config.get(option).isBlank()) {
                throw new IllegalArgumentException("LockerStoreManager needs " + option.toStringWithoutRoot()
                        + " (" + option.getDescription() + ")");
            }
            return config.get(option).trim();
        }

        private static void closeQuietly(StoreManager m) {
            try {
                m.close();
            } catch (BackendException | RuntimeException e) {
                log.debug("closing the data backend after a failed start failed too: {}", e.toString());
            }
        }
    }

    /** One {@link JanusGraphLocker} per locker name, all on the one Locker. */
    private static final class Adapters {
        private final Locker locker;
        private final String namespace;
        private final CommitKeepAlive keepAlives;
        private final Map<String, JanusGraphLocker> byName = new ConcurrentHashMap<>();

        Adapters(Locker locker, String namespace, CommitKeepAlive keepAlives) {
            this.locker = locker;
            this.namespace = namespace;
            this.keepAlives = keepAlives;
        }

        org.janusgraph.diskstorage.locking.Locker forName(String lockerName) {
            return byName.computeIfAbsent(lockerName, n -> new JanusGraphLocker(locker,
                    new LockKeys(namespace, n), keepAlives));
        }
    }
}
