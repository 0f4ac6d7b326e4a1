package dev.locker.hbase;

import dev.locker.api.KeyColumn;
import dev.locker.engine.ClaimStatus;
import dev.locker.spi.LockRecords;
import org.apache.hadoop.hbase.client.CheckAndMutate;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Put;

import java.util.Optional;

import static dev.locker.hbase.LockTable.HOLDER;
import static dev.locker.hbase.LockTable.recordColumn;
import static dev.locker.hbase.LockTable.recordTimestamp;
import static dev.locker.hbase.LockTable.row;

/**
 * A lock's records (run once, forced release), kept as cells of the token family in the lock's row. A record cell's
 * timestamp comes from a fencing token, so a record written under a higher token always outranks a lower one.
 */
final class HBaseRecords implements LockRecords<ClaimStatus> {

    private final LockRows rows;
    private final byte[] family;
    private final byte[] tokenFamily;

    HBaseRecords(LockRows rows, byte[] family, byte[] tokenFamily) {
        this.rows = rows;
        this.family = family;
        this.tokenFamily = tokenFamily;
    }

    @Override
    public Optional<byte[]> readRecord(KeyColumn lock, String name) {
        Get get = new Get(row(lock)).addColumn(tokenFamily, recordColumn(name));
        return Optional.ofNullable(rows.get(get, "get").getValue(tokenFamily, recordColumn(name)));
    }

    /**
     * An operator's record (a forced release), written whoever holds the lock: timestamped with the lock's fencing
     * counter as read just before, so that it outranks every record of an earlier holder's time (a tie, two forced
     * releases with no grant between them, goes to the later write).
     */
    @Override
    public void putRecord(KeyColumn lock, String name, byte[] value) {
        HBaseErrors.UNINTERRUPTIBLE.run(() -> putRecordNow(lock, name, value));
    }

    /** The read and the put of {@link #putRecord}, on a thread whose interrupt flag is clear. */
    private void putRecordNow(KeyColumn lock, String name, byte[] value) {
        byte[] row = row(lock);
        long counter = rows.read(row, "get").counter;
        rows.put(new Put(row).addColumn(tokenFamily, recordColumn(name), recordTimestamp(counter), value), "put");
    }

    /**
     * Atomic: a check-and-mutate on our holder cell (alive, by its TTL on the region server's clock). The record cell
     * carries an explicit timestamp derived from our fencing token (the region server stamps only cells without one),
     * so a record written under a higher token is never hidden by one written under a lower token, whichever clocks
     * stamped the holder cell meanwhile.
     */
    @Override
    public boolean writeRecord(KeyColumn lock, String name, byte[] value, ClaimStatus holding) {
        byte[] row = row(lock);
        Put put = new Put(row).addColumn(tokenFamily, recordColumn(name), recordTimestamp(holding.fencingToken()),
                value);
        return HBaseErrors.UNINTERRUPTIBLE.call(() -> rows.checkAndMutate(CheckAndMutate.newBuilder(row)
                .ifEquals(family, HOLDER, holding.claimId()).build(put), "checkAndMutate").isSuccess());
    }
}
