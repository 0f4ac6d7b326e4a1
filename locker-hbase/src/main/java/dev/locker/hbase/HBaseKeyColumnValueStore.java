package dev.locker.hbase;

import dev.locker.spi.Entry;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.spi.StoreException;
import dev.locker.spi.StoreTransaction;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptor;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.Delete;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.RowMutations;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableBuilder;
import org.apache.hadoop.hbase.client.TableDescriptor;
import org.apache.hadoop.hbase.filter.ColumnRangeFilter;
import org.apache.hadoop.hbase.filter.FilterList;
import org.apache.hadoop.hbase.filter.FirstKeyOnlyFilter;
import org.apache.hadoop.hbase.filter.KeyOnlyFilter;
import org.apache.hadoop.hbase.util.Bytes;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * A {@link KeyColumnValueStore} on one column family of an HBase table: row = key, qualifier = column, cell value =
 * value. Slices are read with a {@code ColumnRangeFilter} (HBase sorts qualifiers by unsigned bytes, as the SPI
 * wants); a mutation is one {@code RowMutations}, atomic for its row. HBase has no multi-row transactions:
 * {@link #beginTransaction()} returns a handle whose commit and rollback do nothing, and each mutation applies at once.
 *
 * <p>Deleting and adding one column in the same mutation keeps the addition (the deletion is dropped: HBase would
 * otherwise let the delete marker hide the new cell, both having the same timestamp). Tables created here use
 * {@code NEW_VERSION_BEHAVIOR}, so a Put that follows a Delete within the same millisecond stays visible.
 *
 * <p>Failures are {@link dev.locker.spi.TemporaryStoreException} (cluster, server or region unavailable, timeouts)
 * or {@link dev.locker.spi.PermanentStoreException} (missing table or family, permission), with the HBase
 * exception as the cause. Thread-safe.
 */
public final class HBaseKeyColumnValueStore implements KeyColumnValueStore {

    private static final Logger log = LoggerFactory.getLogger(HBaseKeyColumnValueStore.class);
    private static final StoreTransaction NO_TX = new StoreTransaction() {
        @Override
        public void commit() {
        }

        @Override
        public void rollback() {
        }

        @Override
        public String toString() {
            return "HBase (no transaction)";
        }
    };

    private final Connection connection;
    private final boolean ownsConnection;
    private final TableName tableName;
    /** Tables whose multi-action calls run in the calling thread ({@link HBaseClients#tables}). */
    private final TableBuilder tables;
    private final byte[] family;
    private final String name;

    private HBaseKeyColumnValueStore(Connection connection, boolean ownsConnection, TableName tableName, byte[] family,
                                     String name) {
        this.connection = connection;
        this.ownsConnection = ownsConnection;
        this.tableName = tableName;
        this.tables = HBaseClients.tables(connection, tableName);
        this.family = family;
        this.name = name;
    }

    /**
     * A store on {@code family} of {@code table} (created, with that family, when missing and {@code createTable}).
     * The caller keeps owning {@code connection}.
     *
     * @throws StoreException when the table cannot be found or created
     */
    public static HBaseKeyColumnValueStore open(Connection connection, String table, String family, boolean createTable) {
        return open(connection, false, table, family, createTable,
                HBaseClients.describe(Objects.requireNonNull(connection, "connection must not be null").getConfiguration(),
                        Objects.requireNonNull(table, "table must not be null")));
    }

    /** A store on the table and family of {@code options}, with a connection of its own (closed by {@link #close()}). */
    public static HBaseKeyColumnValueStore open(HBaseOptions options) {
        Connection c;
        try {
            c = HBaseClients.connect(options);
        } catch (IOException e) {
            throw HBaseErrors.translate(e, "connecting", options.describe());
        }
        try {
            return open(c, true, options.table(), options.family(), options.createTable(), options.describe());
        } catch (RuntimeException e) {
            try {
                c.close();
            } catch (IOException ignored) {
                // already failing
            }
            throw e;
        }
    }

    private static HBaseKeyColumnValueStore open(Connection connection, boolean owns, String table, String family,
                                                 boolean createTable, String where) {
        Objects.requireNonNull(connection, "connection must not be null");
        Objects.requireNonNull(table, "table must not be null");
        Objects.requireNonNull(family, "family must not be null");
        TableName tn = TableName.valueOf(table);
        byte[] fam = Bytes.toBytes(family);
        TableDescriptor d = HBaseTables.ensure(connection, tn, List.of(dataFamily(fam)), Map.of(), createTable, where);
        if (!d.getColumnFamily(fam).isNewVersionBehavior()) {
            log.warn("Column family '{}' of {} lacks NEW_VERSION_BEHAVIOR: a Put that follows a Delete of the same cell "
                    + "within one millisecond stays hidden by the delete marker; alter the family to enable it", family, where);
        }
        return new HBaseKeyColumnValueStore(connection, owns, tn, fam,
                HBaseClients.describe(connection.getConfiguration(), table) + " family " + family);
    }

    /** The column family this store creates: one version, and Puts after same-millisecond Deletes stay visible. */
    static ColumnFamilyDescriptor dataFamily(byte[] family) {
        return ColumnFamilyDescriptorBuilder.newBuilder(family).setMaxVersions(1).setNewVersionBehavior(true).build();
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public List<Entry> getSlice(byte[] key, byte[] start, byte[] end, StoreTransaction tx) {
        checkKey(key);
        Objects.requireNonNull(start, "start must not be null");
        Objects.requireNonNull(end, "end must not be null");
        if (end.length > 0 && Bytes.compareTo(start, end) >= 0) {
            return List.of();
        }
        Get get = new Get(key).addFamily(family); // one version: the latest
        if (start.length > 0 || end.length > 0) {
            get.setFilter(new ColumnRangeFilter(start.length == 0 ? null : start, true, end.length == 0 ? null : end, false));
        }
        Result r;
        try (Table t = tables.build()) {
            r = t.get(get);
        } catch (IOException e) {
            throw HBaseErrors.translate(e, "get of row " + printable(key), name);
        }
        if (r.isEmpty()) {
            return List.of();
        }
        List<Entry> out = new ArrayList<>(r.size());
        for (Cell c : r.rawCells()) {
            out.add(new Entry(CellUtil.cloneQualifier(c), CellUtil.cloneValue(c)));
        }
        return out;
    }

    @Override
    public void mutate(byte[] key, List<Entry> additions, List<byte[]> deletions, StoreTransaction tx) {
        checkKey(key);
        Objects.requireNonNull(additions, "additions must not be null");
        Objects.requireNonNull(deletions, "deletions must not be null");
        if (additions.isEmpty() && deletions.isEmpty()) {
            return;
        }
        Set<ByteBuffer> added = new HashSet<>();
        Put put = null;
        for (Entry e : additions) {
            byte[] col = e.column();
            added.add(ByteBuffer.wrap(col));
            if (put == null) {
                put = new Put(key);
            }
            put.addColumn(family, col, e.value());
        }
        Delete delete = null;
        for (byte[] col : deletions) {
            Objects.requireNonNull(col, "a deleted column must not be null");
            if (added.contains(ByteBuffer.wrap(col))) {
                continue; // re-added in this mutation: the addition wins
            }
            if (delete == null) {
                delete = new Delete(key);
            }
            delete.addColumns(family, col);
        }
        try (Table t = tables.build()) {
            if (delete != null && put != null) {
                RowMutations rm = new RowMutations(key, 2);
                rm.add(delete);
                rm.add(put);
                t.mutateRow(rm);
            } else if (put != null) {
                t.put(put);
            } else {
                t.delete(delete);
            }
        } catch (IOException e) {
            throw HBaseErrors.translate(e, "mutation of row " + printable(key), name);
        }
    }

    /**
     * One bounded {@code Scan} of this family: from the later of the prefix and {@code startAfter} (exclusive), to the
     * end of the prefix, returning only each row's key ({@code FirstKeyOnlyFilter} and {@code KeyOnlyFilter}), at most
     * {@code limit} rows, fetched in one batch ({@code caching = limit}); one RPC per region it crosses.
     */
    @Override
    public List<byte[]> getKeys(byte[] keyPrefix, byte[] startAfter, int limit, StoreTransaction tx) {
        Objects.requireNonNull(keyPrefix, "keyPrefix must not be null");
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be at least 1, was " + limit);
        }
        Scan scan = new Scan().addFamily(family).readVersions(1).setLimit(limit).setCaching(limit)
                .setFilter(new FilterList(new FirstKeyOnlyFilter(), new KeyOnlyFilter()));
        if (startAfter != null && Bytes.compareTo(startAfter, keyPrefix) >= 0) {
            scan.withStartRow(startAfter, false);
        } else {
            scan.withStartRow(keyPrefix, true);
        }
        byte[] end = prefixEnd(keyPrefix);
        if (end != null) {
            scan.withStopRow(end, false);
        }
        List<byte[]> out = new ArrayList<>(Math.min(limit, 64));
        try (Table t = tables.build(); ResultScanner rs = t.getScanner(scan)) {
            for (Result r = rs.next(); r != null; r = rs.next()) {
                out.add(r.getRow());
                if (out.size() == limit) {
                    break;
                }
            }
        } catch (IOException e) {
            throw HBaseErrors.translate(e, "scan of the row keys after " + (startAfter == null ? "the start"
                    : printable(startAfter)) + " under prefix " + printable(keyPrefix), name);
        }
        return out;
    }

    /** The first row after every row that starts with {@code prefix}; null when there is none (no upper bound). */
    static byte[] prefixEnd(byte[] prefix) {
        int n = prefix.length;
        while (n > 0 && prefix[n - 1] == (byte) 0xFF) {
            n--;
        }
        if (n == 0) {
            return null;
        }
        byte[] end = Arrays.copyOf(prefix, n);
        end[n - 1]++;
        return end;
    }

    @Override
    public StoreTransaction beginTransaction() {
        return NO_TX;
    }

    @Override
    public void close() {
        if (ownsConnection) {
            try {
                connection.close();
            } catch (IOException e) {
                log.debug("Closing the HBase connection of store {} failed: {}", name, e.toString());
            }
        }
    }

    @Override
    public String toString() {
        return "HBaseKeyColumnValueStore[" + name + "]";
    }

    private static String printable(byte[] key) {
        return key.length <= 64 ? Bytes.toStringBinary(key) : Bytes.toStringBinary(key, 0, 64) + "...(" + key.length + " bytes)";
    }

    private static void checkKey(byte[] key) {
        Objects.requireNonNull(key, "key must not be null");
        if (key.length == 0) {
            throw new IllegalArgumentException("key must not be empty (HBase has no empty row key)");
        }
    }
}
