package dev.locker.engine;

import dev.locker.spi.Entry;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.spi.PermanentStoreException;
import dev.locker.spi.StoreTransaction;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Objects;
import java.util.concurrent.ConcurrentSkipListMap;

/**
 * A thread-safe key-column-value store in memory: rows of columns sorted by unsigned byte order. Each mutation is
 * atomic for its row; reads see every completed mutation (linearizable per row). It is the store behind the
 * {@code mem:} backend, and a real store for tests (not a mock: it keeps data and answers every query).
 */
public final class InMemoryStore implements KeyColumnValueStore {

    private static final StoreTransaction NO_TX = new StoreTransaction() {
        @Override
        public void commit() {
        }

        @Override
        public void rollback() {
        }
    };

    private final String name;
    /** Rows in unsigned byte order of their keys, so that {@link #getKeys} walks them in order. */
    private final ConcurrentSkipListMap<Bytes, ConcurrentSkipListMap<byte[], byte[]>> rows = new ConcurrentSkipListMap<>();
    private volatile boolean closed;

    public InMemoryStore(String name) {
        this.name = Objects.requireNonNull(name, "name must not be null");
    }

    @Override
    public String name() {
        return "mem:" + name;
    }

    @Override
    public List<Entry> getSlice(byte[] key, byte[] start, byte[] end, StoreTransaction tx) {
        ensureOpen();
        Objects.requireNonNull(key, "key");
        ConcurrentSkipListMap<byte[], byte[]> row = rows.get(new Bytes(key));
        if (row == null) {
            return List.of();
        }
        List<Entry> out = new ArrayList<>();
        synchronized (row) {
            Map<byte[], byte[]> slice = end == null || end.length == 0 ? row.tailMap(start, true) : row.subMap(start, true, end, false);
            for (Map.Entry<byte[], byte[]> e : slice.entrySet()) {
                out.add(new Entry(e.getKey(), e.getValue()));
            }
        }
        return out;
    }

    @Override
    public void mutate(byte[] key, List<Entry> additions, List<byte[]> deletions, StoreTransaction tx) {
        ensureOpen();
        Objects.requireNonNull(key, "key");
        Bytes k = new Bytes(key.clone());
        while (true) {
            ConcurrentSkipListMap<byte[], byte[]> row = rows.computeIfAbsent(k, x -> new ConcurrentSkipListMap<>(Arrays::compareUnsigned));
            synchronized (row) {
                if (rows.get(k) != row) {
                    continue; // the row was dropped as empty while we waited: use the new one
                }
                for (byte[] d : deletions) {
                    row.remove(d);
                }
                for (Entry e : additions) {
                    row.put(e.column(), e.value());
                }
                if (row.isEmpty()) {
                    rows.remove(k, row);
                }
                return;
            }
        }
    }

    @Override
    public List<byte[]> getKeys(byte[] keyPrefix, byte[] startAfter, int limit, StoreTransaction tx) {
        ensureOpen();
        Objects.requireNonNull(keyPrefix, "keyPrefix");
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be at least 1, was " + limit);
        }
        NavigableMap<Bytes, ConcurrentSkipListMap<byte[], byte[]>> tail =
                startAfter != null && Arrays.compareUnsigned(startAfter, keyPrefix) >= 0
                        ? rows.tailMap(new Bytes(startAfter), false)
                        : rows.tailMap(new Bytes(keyPrefix), true);
        List<byte[]> out = new ArrayList<>(Math.min(limit, 64));
        for (Map.Entry<Bytes, ConcurrentSkipListMap<byte[], byte[]>> e : tail.entrySet()) {
            byte[] key = e.getKey().b;
            if (key.length < keyPrefix.length || !Arrays.equals(key, 0, keyPrefix.length, keyPrefix, 0, keyPrefix.length)) {
                break; // past the prefix: every later key sorts after it too
            }
            if (!e.getValue().isEmpty()) {
                out.add(key.clone());
                if (out.size() == limit) {
                    break;
                }
            }
        }
        return out;
    }

    @Override
    public StoreTransaction beginTransaction() {
        return NO_TX;
    }

    /** Number of non-empty rows. */
    public int rowCount() {
        return rows.size();
    }

    @Override
    public void close() {
        closed = true;
    }

    private void ensureOpen() {
        if (closed) {
            throw new PermanentStoreException("store " + name() + " is closed");
        }
    }

    @Override
    public String toString() {
        return "InMemoryStore[" + name + ", " + rows.size() + " rows]";
    }

    /** A byte array as a map key, ordered by unsigned bytes. */
    private static final class Bytes implements Comparable<Bytes> {
        final byte[] b;
        final int hash;

        Bytes(byte[] b) {
            this.b = b;
            this.hash = Arrays.hashCode(b);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Bytes && Arrays.equals(b, ((Bytes) o).b);
        }

        @Override
        public int hashCode() {
            return hash;
        }

        @Override
        public int compareTo(Bytes o) {
            return Arrays.compareUnsigned(b, o.b);
        }
    }
}
