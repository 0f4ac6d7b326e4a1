package dev.locker.engine;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockOwner;
import dev.locker.api.TimeSource;

import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;
import java.util.function.UnaryOperator;

/**
 * The locks of one {@code mem:NAME} store for {@link MemLocker}: one cell per lock, holding its claim and its records.
 * Every change of a lock is one atomic compute on its cell, so a grant decides the holder, the token and the expiry
 * at once.
 *
 * <h2>Invariants</h2>
 * <ul>
 *   <li>Tokens come from one counter per table, drawn inside the cell's compute. Computes on one cell run one after
 *       another, so a lock's tokens rise in the order of its grants, whatever claims were removed in between.</li>
 *   <li>A claim expires on the clock of the locker that wrote it. Every judge reads that very clock, so a holder and
 *       its contenders never disagree about its expiry, even when their lockers run on different time sources.</li>
 *   <li>A cell without a claim and without records is dropped; a record outlives releases, expiry and forced
 *       releases.</li>
 * </ul>
 */
public final class MemLockTable {

    private final String name;
    private final ConcurrentHashMap<Key, Cell> cells = new ConcurrentHashMap<>();
    private final AtomicLong tokens = new AtomicLong();

    /**
     * An empty table.
     *
     * @param name the store's name, for messages
     */
    public MemLockTable(String name) {
        this.name = Objects.requireNonNull(name, "name must not be null");
    }

    /** {@return the store's name as users write it: {@code mem:NAME}} */
    public String name() {
        return "mem:" + name;
    }

    /** {@return how many locks have a claim or a record} */
    public int size() {
        return cells.size();
    }

    /** The next token, strictly above every token drawn before; called inside a cell's compute only. */
    long nextToken() {
        return tokens.incrementAndGet();
    }

    /** The cell of {@code lock}, or null. */
    Cell get(KeyColumn lock) {
        return cells.get(new Key(lock.encoded()));
    }

    /**
     * Replaces the cell of {@code lock} by what {@code change} makes of it (null in, null out: no cell), atomically.
     * The function runs once, under the cell's lock; it must not touch another cell.
     */
    Cell update(KeyColumn lock, UnaryOperator<Cell> change) {
        return cells.compute(new Key(lock.encoded()), (k, old) -> {
            Cell next = change.apply(old);
            return next == null || next.isEmpty() ? null : next;
        });
    }

    /**
     * The cells of the smallest {@code limit} lock keys after {@code after} (null: from the first) that {@code wanted}
     * accepts, in unsigned byte order, and whether more follow. One pass over the table; at most {@code limit + 1}
     * cells kept at a time.
     */
    Page cellsAfter(byte[] after, int limit, Predicate<Cell> wanted) {
        TreeMap<byte[], Cell> kept = new TreeMap<>(Arrays::compareUnsigned);
        boolean more = false;
        for (Map.Entry<Key, Cell> e : cells.entrySet()) {
            byte[] encoded = e.getKey().bytes;
            if (after != null && Arrays.compareUnsigned(encoded, after) <= 0) {
                continue;
            }
            if (!wanted.test(e.getValue())) {
                continue;
            }
            kept.put(encoded, e.getValue());
            if (kept.size() > limit) {
                kept.pollLastEntry();
                more = true;
            }
        }
        return new Page(List.copyOf(kept.values()), more ? kept.lastKey() : null);
    }

    /** Loses everything kept for {@code lock}, claim and records: what a restart of the JVM does to every lock. */
    void forget(KeyColumn lock) {
        cells.remove(new Key(lock.encoded()));
    }

    @Override
    public String toString() {
        return "MemLockTable[" + name() + ", " + cells.size() + " locks]";
    }

    /** One page of {@link #cellsAfter}: the cells in key order, and the last key when more follow (else null). */
    record Page(List<Cell> cells, byte[] lastKey) {
    }

    /**
     * A claim: its fencing token (which also names it, being unique in the table), its holder, and its expiry on the
     * clock of the locker that wrote it.
     */
    record Claim(long token, LockOwner owner, TimeSource clock, long expiresAtNanos) {

        /** Alive until its own clock reaches its expiry. */
        boolean isAlive() {
            return clock.nanoTime() - expiresAtNanos < 0;
        }

        /** How long it lives on, in nanoseconds of its clock (0 when dead). */
        long remainingNanos() {
            return Math.max(0, expiresAtNanos - clock.nanoTime());
        }
    }

    /** What a table keeps for one lock: the claim (or null) and the records by name. Immutable. */
    record Cell(KeyColumn lock, Claim claim, Map<String, byte[]> records) {

        static Cell empty(KeyColumn lock) {
            return new Cell(lock, null, Map.of());
        }

        /** The live claim, or null. */
        Claim live() {
            return claim != null && claim.isAlive() ? claim : null;
        }

        Cell withClaim(Claim c) {
            return new Cell(lock, c, records);
        }

        Cell withRecord(String recordName, byte[] value) {
            Map<String, byte[]> next = new HashMap<>(records);
            next.put(recordName, value.clone());
            return new Cell(lock, claim, Map.copyOf(next));
        }

        boolean isEmpty() {
            return claim == null && records.isEmpty();
        }
    }

    /** A lock's encoded bytes as a map key. */
    private static final class Key {
        final byte[] bytes;
        private final int hash;

        Key(byte[] bytes) {
            this.bytes = bytes;
            this.hash = Arrays.hashCode(bytes);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Key && Arrays.equals(bytes, ((Key) o).bytes);
        }

        @Override
        public int hashCode() {
            return hash;
        }
    }
}
