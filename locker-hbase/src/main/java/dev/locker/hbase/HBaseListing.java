package dev.locker.hbase;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockInfo;
import dev.locker.api.LockPage;
import dev.locker.engine.ListCursor;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.CompareOperator;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableBuilder;
import org.apache.hadoop.hbase.filter.BinaryComparator;
import org.apache.hadoop.hbase.filter.BinaryPrefixComparator;
import org.apache.hadoop.hbase.filter.FilterList;
import org.apache.hadoop.hbase.filter.SingleColumnValueFilter;
import org.apache.hadoop.hbase.util.Bytes;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static dev.locker.hbase.LockTable.COUNTER;
import static dev.locker.hbase.LockTable.FREE;
import static dev.locker.hbase.LockTable.HOLDER;

/**
 * The held locks of a lock table, a page per bounded scan. Only live holders cross the network: the region servers
 * filter out free and expired holder cells.
 */
final class HBaseListing {

    /** Logs under the public class's name, the one users configure. */
    private static final Logger log = LoggerFactory.getLogger(HBaseLocker.class);
    private static final String LIST_CURSOR_TAG = "hbase1";

    private final TableBuilder tables;
    private final byte[] family;
    private final byte[] tokenFamily;
    private final String where;

    HBaseListing(TableBuilder tables, byte[] family, byte[] tokenFamily, String where) {
        this.tables = tables;
        this.family = family;
        this.tokenFamily = tokenFamily;
        this.where = where;
    }

    /**
     * One bounded {@code Scan} of the lock table per call, from the cursor's row (exclusive) or the prefix's first row,
     * to the end of the prefix's rows (a lock's row is its legible name, which keeps key prefixes), returning at most
     * {@code limit} rows ({@code caching = limit}, one RPC per region it crosses). The region servers filter: two
     * {@code SingleColumnValueFilter}s keep only rows whose holder cell is present and a claim (not a free value), and
     * the per-cell TTL already hides expired claims, so only live holders cross the network. Every row found is checked again on its
     * decoded lock. The cursor is the last row returned.
     */
    LockPage page(byte[] keyPrefix, int limit, String cursor) {
        byte[] after = cursor == null ? null : ListCursor.decode(cursor, LIST_CURSOR_TAG, 1)[0];
        SingleColumnValueFilter notEmpty = new SingleColumnValueFilter(family, HOLDER, CompareOperator.NOT_EQUAL,
                new BinaryComparator(FREE));
        notEmpty.setFilterIfMissing(true);
        notEmpty.setLatestVersionOnly(true);
        // the free value that names the counter is the one other value that is not a claim
        SingleColumnValueFilter notFreeAt = new SingleColumnValueFilter(family, HOLDER, CompareOperator.NOT_EQUAL,
                new BinaryPrefixComparator(new byte[]{LockTable.FREE_AT_FORMAT}));
        notFreeAt.setFilterIfMissing(true);
        notFreeAt.setLatestVersionOnly(true);
        FilterList held = new FilterList(FilterList.Operator.MUST_PASS_ALL, notEmpty, notFreeAt);
        byte[] first = KeyColumn.legibleKeyPrefix(keyPrefix).getBytes(StandardCharsets.US_ASCII);
        byte[] end = Arrays.copyOf(first, first.length + 1);
        end[first.length] = 0x7f; // every character of a legible name is below 0x7f
        Scan scan = new Scan().addColumn(family, HOLDER).addColumn(tokenFamily, COUNTER).readVersions(1)
                .setLimit(limit).setCaching(limit).setFilter(held).withStopRow(end, false);
        if (after != null) {
            scan.withStartRow(after, false);
        } else {
            scan.withStartRow(first, true);
        }
        List<LockInfo> out = new ArrayList<>();
        int rows = 0;
        try (Table t = tables.build(); ResultScanner rs = t.getScanner(scan)) {
            for (Result r = rs.next(); r != null; r = rs.next()) {
                rows++;
                after = r.getRow();
                LockInfo info = heldLock(r, keyPrefix);
                if (info != null) {
                    out.add(info);
                }
                if (rows == limit) {
                    break;
                }
            }
        } catch (IOException e) {
            throw HBaseErrors.translate(e, "scan", where);
        }
        return new LockPage(out, rows == limit ? ListCursor.encode(LIST_CURSOR_TAG, after) : null);
    }

    /** A scanned lock row as a listed lock; null for a row of another key prefix or a cell this library did not write. */
    private LockInfo heldLock(Result r, byte[] keyPrefix) {
        try {
            KeyColumn lock = KeyColumn.fromLegible(new String(r.getRow(), StandardCharsets.US_ASCII));
            Cell cell = r.getColumnLatestCell(family, HOLDER);
            HolderClaim claim = cell == null ? null : HolderClaim.decode(CellUtil.cloneValue(cell));
            if (claim == null || !lock.keyStartsWith(keyPrefix)) {
                return null;
            }
            byte[] counter = r.getValue(tokenFamily, COUNTER);
            return new LockInfo(lock, claim.owner, counter == null ? 0L : Bytes.toLong(counter),
                    Instant.ofEpochMilli(cell.getTimestamp()).plus(claim.lifetime));
        } catch (IllegalArgumentException notOurs) {
            log.debug("Not listing row {} of {}: {}", Bytes.toStringBinary(r.getRow()), where, notOurs.toString());
            return null;
        }
    }
}
