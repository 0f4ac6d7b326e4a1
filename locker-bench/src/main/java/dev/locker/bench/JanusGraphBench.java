package dev.locker.bench;

import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.Lockers;
import dev.locker.bench.Table.Better;
import dev.locker.bench.Table.Row;
import dev.locker.engine.ConsistentKeyLocker;
import dev.locker.spi.Entry;
import dev.locker.spi.StoreTransaction;
import org.janusgraph.diskstorage.BackendException;
import org.janusgraph.diskstorage.StaticBuffer;
import org.janusgraph.diskstorage.inmemory.InMemoryStoreManager;
import org.janusgraph.diskstorage.keycolumnvalue.KeyColumnValueStore;
import org.janusgraph.diskstorage.keycolumnvalue.KeySliceQuery;
import org.janusgraph.diskstorage.util.BufferUtil;
import org.janusgraph.diskstorage.util.StandardBaseTransactionConfig;
import org.janusgraph.diskstorage.util.StaticArrayBuffer;
import org.janusgraph.diskstorage.util.StaticArrayEntry;
import org.janusgraph.diskstorage.util.time.TimestampProviders;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The JanusGraph rows: Locker's wait-and-read-back protocol ({@code mem:}, and {@link ConsistentKeyLocker} over
 * JanusGraph's own in-memory store) against JanusGraph 1.1.0's {@code ConsistentKeyLocker} on that in-memory store,
 * at equal settings (lockWait, expiry, retries), one thread, each pair a fresh transaction through the three phases
 * writeLock, checkLocks, deleteLocks. Rounds interleaved.
 */
final class JanusGraphBench {

    private static final Duration LOCK_WAIT = Duration.ofMillis(1);
    private static final Duration EXPIRY = Duration.ofSeconds(60);

    private final int rounds;
    private final Duration slice;

    JanusGraphBench(boolean quick, int rounds, Duration slice) {
        this.rounds = rounds;
        this.slice = slice;
    }

    void run(Table out) throws Exception {
        InMemoryStoreManager manager = new InMemoryStoreManager();
        try {
            // JanusGraph's locker, as a graph instance builds it for a store's lock store
            KeyColumnValueStore theirStore = manager.openDatabase("bench_lock_");
            org.janusgraph.diskstorage.locking.consistentkey.ConsistentKeyLocker theirs =
                    new org.janusgraph.diskstorage.locking.consistentkey.ConsistentKeyLocker
                            .Builder(theirStore, manager)
                            .times(TimestampProviders.MICRO)
                            .rid(StaticArrayBuffer.of("bench-janusgraph".getBytes(StandardCharsets.US_ASCII)))
                            .mediatorName("bench-janusgraph")
                            .lockWait(LOCK_WAIT)
                            .lockExpire(EXPIRY)
                            .lockRetryCount(3)
                            .build();
            org.janusgraph.diskstorage.util.KeyColumn theirLock = new org.janusgraph.diskstorage.util.KeyColumn(
                    StaticArrayBuffer.of(new byte[]{'v', 1}), StaticArrayBuffer.of(new byte[]{'c', 1}));
            LockerConfig config = LockerConfig.builder().lockWait(LOCK_WAIT).expiry(EXPIRY).retries(3).build();
            dev.locker.api.KeyColumn ourLock = dev.locker.api.KeyColumn.of(new byte[]{'v', 1}, new byte[]{'c', 1});
            try (Locker mem = Lockers.open("mem:bench-janusgraph?protocol=wait-and-read-back", config);
                 JanusStore adapted = new JanusStore(manager.openDatabase("bench_generic_lock_"), manager);
                 Locker generic = ConsistentKeyLocker.builder(adapted).config(config).build()) {
                Map<String, Runnable> ops = new LinkedHashMap<>();
                ops.put("mem", () -> Bench.threePhases(mem, ourLock));
                ops.put("generic", () -> Bench.threePhases(generic, ourLock));
                ops.put("janusgraph", () -> theirs(theirs, theirLock, manager));
                Map<String, Samples> rates = HBaseBench.interleaved(ops, rounds, slice);
                String settings = "lockWait 1 ms, expiry 60 s, 1 thread";
                out.add(new Row("mem: three-phase lock, " + settings, "pairs/s", rates.get("mem"),
                        "JanusGraph 1.1.0 ConsistentKeyLocker on its in-memory store", rates.get("janusgraph"),
                        Better.HIGHER, null, false));
                out.add(new Row("ConsistentKeyLocker on JanusGraph's in-memory store, " + settings, "pairs/s",
                        rates.get("generic"), "JanusGraph 1.1.0 ConsistentKeyLocker on the same store",
                        rates.get("janusgraph"), Better.HIGHER, null, false));
            }
        } finally {
            manager.close();
        }
    }

    private static void theirs(org.janusgraph.diskstorage.locking.Locker locker,
                               org.janusgraph.diskstorage.util.KeyColumn lock, InMemoryStoreManager manager) {
        try {
            org.janusgraph.diskstorage.keycolumnvalue.StoreTransaction tx =
                    manager.beginTransaction(StandardBaseTransactionConfig.of(TimestampProviders.MICRO));
            try {
                locker.writeLock(lock, tx);
                locker.checkLocks(tx);
            } finally {
                locker.deleteLocks(tx);
            }
        } catch (BackendException e) {
            throw new IllegalStateException(e);
        }
    }

    /** JanusGraph's in-memory key-column-value store seen through Locker's store SPI (the generic protocol's store). */
    static final class JanusStore implements dev.locker.spi.KeyColumnValueStore {
        private static final StaticBuffer NO_END = BufferUtil.oneBuffer(512);
        private static final StoreTransaction NO_TX = new StoreTransaction() {
            @Override
            public void commit() {
            }

            @Override
            public void rollback() {
            }
        };
        private final KeyColumnValueStore store;
        private final org.janusgraph.diskstorage.keycolumnvalue.StoreTransaction tx;

        JanusStore(KeyColumnValueStore store, InMemoryStoreManager manager) throws BackendException {
            this.store = store;
            this.tx = manager.beginTransaction(StandardBaseTransactionConfig.of(TimestampProviders.MICRO));
        }

        @Override
        public String name() {
            return store.getName();
        }

        @Override
        public synchronized List<Entry> getSlice(byte[] key, byte[] start, byte[] end, StoreTransaction ignored) {
            try {
                List<Entry> out = new ArrayList<>();
                for (org.janusgraph.diskstorage.Entry e : store.getSlice(new KeySliceQuery(StaticArrayBuffer.of(key),
                        StaticArrayBuffer.of(start), end.length == 0 ? NO_END : StaticArrayBuffer.of(end)), tx)) {
                    out.add(new Entry(e.getColumnAs(StaticBuffer.ARRAY_FACTORY),
                            e.getValueAs(StaticBuffer.ARRAY_FACTORY)));
                }
                return out;
            } catch (BackendException e) {
                throw new IllegalStateException(e);
            }
        }

        /**
         * Deletions one column per call, then the additions. JanusGraph 1.1.0's in-memory store loses deletions when
         * one mutation deletes an absent column before a present one (the present one stays), which the generic
         * protocol does when it withdraws every earlier attempt of a claim; one call per column avoids it, and this
         * adapter's lock keeps the mutation atomic for every reader through it (the only readers here).
         */
        @Override
        public synchronized void mutate(byte[] key, List<Entry> additions, List<byte[]> deletions,
                                        StoreTransaction ignored) {
            List<org.janusgraph.diskstorage.Entry> adds = new ArrayList<>(additions.size());
            for (Entry e : additions) {
                adds.add(StaticArrayEntry.of(StaticArrayBuffer.of(e.column()), StaticArrayBuffer.of(e.value())));
            }
            try {
                StaticBuffer row = StaticArrayBuffer.of(key);
                for (byte[] d : deletions) {
                    store.mutate(row, List.of(), List.of(StaticArrayBuffer.of(d)), tx);
                }
                if (!adds.isEmpty()) {
                    store.mutate(row, adds, List.of(), tx);
                }
            } catch (BackendException e) {
                throw new IllegalStateException(e);
            }
        }

        @Override
        public StoreTransaction beginTransaction() {
            return NO_TX;
        }

        @Override
        public void close() {
            // the manager closes its stores
        }
    }
}
