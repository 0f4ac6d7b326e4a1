package dev.locker.spi;

import dev.locker.api.KeyColumn;
import dev.locker.api.Locker;
import dev.locker.api.PermanentLockingException;

import java.util.List;

/**
 * The store SPI storage-layer developers already know from JanusGraph: rows of sorted columns. The generic
 * wait-and-read-back locker and the expected-value-checking wrapper run on any implementation.
 *
 * <p>Failures are reported as {@link StoreException}: {@link TemporaryStoreException} when a retry may succeed,
 * {@link PermanentStoreException} when it will not.
 */
public interface KeyColumnValueStore extends AutoCloseable {

    /**
     * The store's name, for messages.
     *
     * @return the store's name, for messages
     */
    String name();

    /**
     * The columns of row {@code key} in {@code [start, end)}, sorted by unsigned byte order; an empty {@code end}
     * means no upper bound.
     *
     * @param key the row key
     * @param start the first column, inclusive
     * @param end the column to stop before, exclusive
     * @param tx the store transaction
     * @return the columns of row {@code key} in {@code [start, end)}, sorted by unsigned byte order; an empty {@code
     * end} means no upper bound
     */
    List<Entry> getSlice(byte[] key, byte[] start, byte[] end, StoreTransaction tx);

    /**
     * Applies deletions, then additions, to row {@code key}, atomically for that row.
     *
     * @param key the row key
     * @param additions cells to write
     * @param deletions columns to delete
     * @param tx the store transaction
     */
    void mutate(byte[] key, List<Entry> additions, List<byte[]> deletions, StoreTransaction tx);

    /**
     * Locks ({@code key}, {@code column}) for {@code tx} and records that the caller expects the cell to hold
     * {@code expectedValue} (null: expects it absent) when {@code tx} first mutates. Plain stores do not lock; wrap
     * them in the expected-value-checking store of locker-engine, which implements this with a {@link Locker}.
     *
     * @param key the row key
     * @param column the column
     * @param expectedValue the value the cell must have now, or null for a cell that must be absent
     * @param tx the store transaction
     * @throws PermanentLockingException for a store that does not lock
     */
    default void acquireLock(byte[] key, byte[] column, byte[] expectedValue, StoreTransaction tx) {
        throw new PermanentLockingException("store " + name() + " does not lock by itself: wrap it in an "
                + "expected-value-checking store with a Locker", KeyColumn.of(key, column));
    }

    /**
     * The keys of the non-empty rows that start with {@code keyPrefix} (empty: every row) and sort after
     * {@code startAfter} (null: from the start; it need not start with the prefix), in unsigned byte order, at most
     * {@code limit} of them. Listing held locks ({@link Locker#list}) on the wait-and-read-back protocol needs it; a
     * store that cannot enumerate its rows in order keeps this default, and listing fails there.
     *
     * @param keyPrefix what every returned row key starts with; empty for every row
     * @param startAfter the row key to start after, or null for the first
     * @param tx the store transaction
     * @param limit at least 1
     * @throws PermanentStoreException for a store that cannot list its keys
     * @return the keys of the non-empty rows that start with {@code keyPrefix} (empty: every row) and sort after
     * {@code startAfter} (null: from the start; it need not start with the prefix), in unsigned byte order, at most
     * {@code limit} of them
     */
    default List<byte[]> getKeys(byte[] keyPrefix, byte[] startAfter, int limit, StoreTransaction tx) {
        throw new PermanentStoreException("store " + name() + " cannot list its keys in order (getKeys is not "
                + "implemented), so its locks cannot be listed");
    }

    /**
     * Starts a transaction; stores without transactions return a handle whose commit and rollback do nothing.
     *
     * @return the transaction handle
     */
    StoreTransaction beginTransaction();

    @Override
    void close();
}
