package dev.locker.hbase;

import dev.locker.hbase.SeenRows.Seen;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.client.CheckAndMutate;
import org.apache.hadoop.hbase.client.CheckAndMutateResult;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableBuilder;
import org.apache.hadoop.hbase.util.Bytes;

import java.io.IOException;
import java.util.Arrays;

import static dev.locker.hbase.LockTable.COUNTER;
import static dev.locker.hbase.LockTable.HOLDER;

/**
 * The lock table's rows through the HBase client: gets, puts and check-and-mutates. Each call builds a table of its
 * own, and {@link HBaseErrors} translates its failure. Every read of a lock row leaves what it saw in {@link SeenRows}.
 */
final class LockRows {

    /** Tables whose multi-action calls run in the calling thread ({@link HBaseClients#tables}). */
    private final TableBuilder tables;
    private final byte[] family;
    private final byte[] tokenFamily;
    private final String where;
    private final SeenRows seen;

    /**
     * @param tables      the lock table's builder
     * @param family      the claims family
     * @param tokenFamily the token family (the counter and the records)
     * @param where       the cluster and table, for messages
     * @param seen        where reads leave what they saw, as the expectation of the next grant
     */
    LockRows(TableBuilder tables, byte[] family, byte[] tokenFamily, String where, SeenRows seen) {
        this.tables = tables;
        this.family = family;
        this.tokenFamily = tokenFamily;
        this.where = where;
        this.seen = seen;
    }

    /**
     * One get of the holder cell (hidden by its TTL once expired) and the counter. Like every read of a lock row, it
     * leaves what it saw as the expectation of this locker's next grant.
     */
    RowState read(byte[] row, String action) {
        Get get = new Get(row).addColumn(family, HOLDER).addColumn(tokenFamily, COUNTER);
        Result r = get(get, action);
        byte[] counter = r.getValue(tokenFamily, COUNTER);
        Cell cell = r.getColumnLatestCell(family, HOLDER);
        byte[] value = cell == null ? null : CellUtil.cloneValue(cell);
        HolderClaim holder = HolderClaim.decode(value);
        long c = counter == null ? 0L : Bytes.toLong(counter);
        RowState state = new RowState(holder, value, cell == null ? 0L : cell.getTimestamp(), c,
                holder != null ? seen.releasedAt(c) : new Seen(c, value));
        seen.remember(row, state.seen());
        return state;
    }

    Result get(Get get, String action) {
        try (Table t = tables.build()) {
            return t.get(get);
        } catch (IOException e) {
            throw HBaseErrors.translate(e, action, where);
        }
    }

    void put(Put put, String action) {
        try (Table t = tables.build()) {
            t.put(put);
        } catch (IOException e) {
            throw HBaseErrors.translate(e, action, where);
        }
    }

    CheckAndMutateResult checkAndMutate(CheckAndMutate cam, String action) {
        try (Table t = tables.build()) {
            return t.checkAndMutate(cam);
        } catch (IOException e) {
            throw HBaseErrors.translate(e, action, where);
        }
    }

    /** What one read of a lock row saw: the live holder (null when free), its cell's timestamp and the counter. */
    static final class RowState {
        final HolderClaim holder;
        /** The holder cell's value (a claim or a free value), null when absent (expired or never written). */
        final byte[] holderValue;
        /** The holder cell's timestamp on the region server's clock, 0 when absent. */
        final long holderStamp;
        final long counter;
        private final Seen next;

        RowState(HolderClaim holder, byte[] holderValue, long holderStamp, long counter, Seen next) {
            this.holder = holder;
            this.holderValue = holderValue;
            this.holderStamp = holderStamp;
            this.counter = counter;
            this.next = next;
        }

        /** What the next grant can expect: this, or, while someone holds it, the free value its release leaves. */
        Seen seen() {
            return next;
        }

        boolean isHeldBy(HolderClaim claim) {
            return isHeldBy(claim.value);
        }

        boolean isHeldBy(byte[] value) {
            return holder != null && Arrays.equals(holder.value, value);
        }
    }
}
