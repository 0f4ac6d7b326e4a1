package dev.locker.janusgraph;

import org.janusgraph.diskstorage.BackendException;
import org.janusgraph.diskstorage.BaseTransactionConfig;
import org.janusgraph.diskstorage.Entry;
import org.janusgraph.diskstorage.StaticBuffer;
import org.janusgraph.diskstorage.StoreMetaData;
import org.janusgraph.diskstorage.configuration.Configuration;
import org.janusgraph.diskstorage.keycolumnvalue.KCVMutation;
import org.janusgraph.diskstorage.keycolumnvalue.KCVSProxy;
import org.janusgraph.diskstorage.keycolumnvalue.KeyColumnValueStore;
import org.janusgraph.diskstorage.keycolumnvalue.StoreTransaction;
import org.janusgraph.graphdb.configuration.GraphDatabaseConfiguration;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The tests' data backend: {@link SharedInMemoryStoreManager} (one in-memory store per {@code storage.directory}),
 * which also counts how often it was constructed per share (a real backend connects there: the "I/O" that bad input
 * must come before) and runs a hook before every store mutation of a share (to hold one transaction's data write,
 * as a slow or retried backend write does). The data itself is never faked.
 */
public class HookedStoreManager extends SharedInMemoryStoreManager {

    /** How many managers were constructed per share. */
    static final Map<String, AtomicInteger> OPENED = new ConcurrentHashMap<>();
    /** Run before every {@code mutate} of a store of the share (on the mutating thread). */
    static final Map<String, Runnable> BEFORE_MUTATE = new ConcurrentHashMap<>();

    /** A step that may fail as the data backend would. */
    interface BackendStep {
        void run() throws BackendException;
    }

    /** Run before every {@code mutateMany} of the share (JanusGraph's graph-level writes), on the writing thread. */
    static final Map<String, BackendStep> BEFORE_MUTATE_MANY = new ConcurrentHashMap<>();

    /**
     * Run when a data transaction of the share commits (before it commits), on the committing thread; only
     * transactions begun while a hook is set are wrapped (the others are the data backend's own).
     */
    static final Map<String, BackendStep> BEFORE_TX_COMMIT = new ConcurrentHashMap<>();

    /** Run when a manager of the share is closed (before it closes). */
    static final Map<String, Runnable> ON_CLOSE = new ConcurrentHashMap<>();

    private final String share;

    public HookedStoreManager(Configuration config) {
        super(config);
        this.share = config.get(GraphDatabaseConfiguration.STORAGE_DIRECTORY);
        OPENED.computeIfAbsent(share, s -> new AtomicInteger()).incrementAndGet();
    }

    static int opened(String share) {
        AtomicInteger n = OPENED.get(share);
        return n == null ? 0 : n.get();
    }

    @Override
    public void mutateMany(Map<String, Map<StaticBuffer, KCVMutation>> mutations, StoreTransaction txh)
            throws BackendException {
        BackendStep hook = BEFORE_MUTATE_MANY.get(share);
        if (hook != null) {
            hook.run();
        }
        super.mutateMany(mutations, txh);
    }

    @Override
    public StoreTransaction beginTransaction(BaseTransactionConfig config) throws BackendException {
        StoreTransaction tx = super.beginTransaction(config);
        if (!BEFORE_TX_COMMIT.containsKey(share)) {
            return tx;
        }
        return new StoreTransaction() {
            @Override
            public void commit() throws BackendException {
                BackendStep hook = BEFORE_TX_COMMIT.get(share);
                if (hook != null) {
                    hook.run();
                }
                tx.commit();
            }

            @Override
            public void rollback() throws BackendException {
                tx.rollback();
            }

            @Override
            public BaseTransactionConfig getConfiguration() {
                return tx.getConfiguration();
            }
        };
    }

    @Override
    public void close() {
        Runnable hook = ON_CLOSE.get(share);
        if (hook != null) {
            hook.run();
        }
        super.close();
    }

    @Override
    public KeyColumnValueStore openDatabase(String name, StoreMetaData.Container metaData) throws BackendException {
        KeyColumnValueStore store = super.openDatabase(name, metaData);
        return new KCVSProxy(store) {
            @Override
            public void mutate(StaticBuffer key, List<Entry> additions, List<StaticBuffer> deletions,
                               StoreTransaction txh) throws BackendException {
                Runnable hook = BEFORE_MUTATE.get(share);
                if (hook != null) {
                    hook.run();
                }
                super.mutate(key, additions, deletions, txh);
            }
        };
    }
}
