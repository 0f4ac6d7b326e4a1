package dev.locker.hbase;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockerConfig;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptor;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.util.Bytes;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;

/**
 * The lock table's layout: a lock's row, its cells and their encodings, the families and the holder cell's TTL.
 * {@link HBaseLocker} says why each is as it is; lockers of older builds read the same cells.
 */
final class LockTable {

    /** The holder cell's qualifier in the claims family. */
    static final byte[] HOLDER = Bytes.toBytes("h");
    /** The fencing counter's qualifier in the token family. */
    static final byte[] COUNTER = Bytes.toBytes("n");
    /**
     * The holder cell's value while nobody holds the lock, as a forced release, a give-back and a release on layout 1
     * leave it. A holder's own release on layout 2 leaves {@link #freeAt} instead ({@link TableLayout}).
     */
    static final byte[] FREE = new byte[0];
    /** The format byte of {@link #freeAt}; a claim's is 1 ({@link HolderClaim}). */
    static final byte FREE_AT_FORMAT = 2;
    private static final int FREE_AT_LENGTH = 1 + 8;
    /**
     * The longest holder cell TTL (~73 million years): a cell's timestamp plus its TTL stays far inside the long range
     * of milliseconds, where HBase's expiry test {@code timestamp + ttl < now} would overflow and drop the cell at once.
     */
    static final Duration MAX_CELL_TTL = Duration.ofMillis(Long.MAX_VALUE / 4);
    /**
     * The timestamp base of a record cell: records are ordered by the fencing token they were written under, not by a
     * region server's clock, so a record cell's timestamp is this base plus that token ({@link #recordTimestamp}).
     * Far above any clock (2^62 ms, ~146 million years from 1970), so the first record of this layout outranks a
     * record of the previous one, stamped by a region server's clock, and is read instead of it.
     */
    static final long RECORD_TIMESTAMP_BASE = 1L << 62;

    private LockTable() {
    }

    /**
     * The free value that names the counter {@code counter}: what the release of the claim holding token {@code counter}
     * leaves on layout 2. A grant that finds it, with the counter at that value, checks this one cell alone.
     */
    static byte[] freeAt(long counter) {
        return ByteBuffer.allocate(FREE_AT_LENGTH).put(FREE_AT_FORMAT).putLong(counter).array();
    }

    /** Whether {@code value} is a free value that names a counter ({@link #freeAt}). */
    static boolean isFreeAt(byte[] value) {
        return value != null && value.length == FREE_AT_LENGTH && value[0] == FREE_AT_FORMAT;
    }

    /** Whether {@code value} is the free value that names {@code counter}. */
    static boolean isFreeAt(byte[] value, long counter) {
        return isFreeAt(value) && Bytes.toLong(value, 1) == counter;
    }

    /** A lock's row: its legible name. */
    static byte[] row(KeyColumn lock) {
        return lock.legible().getBytes(StandardCharsets.US_ASCII);
    }

    /** A record cell's timestamp: ordered by the fencing token, whatever the region servers' clocks do. */
    static long recordTimestamp(long token) {
        return RECORD_TIMESTAMP_BASE + Math.max(0L, token);
    }

    /** A record is a cell of the token family (no TTL, like the token counter) in the lock's row: {@code r<name>}. */
    static byte[] recordColumn(String name) {
        return Bytes.toBytes("r" + name);
    }

    /**
     * What can be checked of {@code options} and {@code config} without the cluster: the cell TTL fits (an absurd
     * expiry is refused) and a lock row of {@code maxKeyBytes} fits HBase's row length.
     *
     * @return the claims' cell TTL
     * @throws IllegalArgumentException naming what does not fit
     */
    static Duration validate(HBaseOptions options, LockerConfig config) {
        Duration cellTtl = cellTtl(config.expiry(), options.serverClockSkew());
        if (3L * config.maxKeyBytes() + 1 > HConstants.MAX_ROW_LENGTH) {
            throw new IllegalArgumentException("maxKeyBytes " + config.maxKeyBytes() + " is too large for HBase: a lock "
                    + "row (its legible name, up to 3 characters per byte, plus '#') must fit in "
                    + HConstants.MAX_ROW_LENGTH + " bytes, so maxKeyBytes <= " + (HConstants.MAX_ROW_LENGTH - 1) / 3);
        }
        return cellTtl;
    }

    /**
     * The holder cell's TTL: {@code expiry + serverClockSkew} rounded up to whole milliseconds (HBase's unit), at least
     * 1 ms: never shorter than the validity its holder trusts.
     *
     * @throws IllegalArgumentException when the sum exceeds {@link #MAX_CELL_TTL} (HBase judges a cell dead once
     *                                  {@code timestamp + ttl < now}, which overflows near the long range)
     */
    static Duration cellTtl(Duration expiry, Duration serverClockSkew) {
        Duration total;
        try {
            total = expiry.plus(serverClockSkew);
        } catch (ArithmeticException overflow) {
            total = null;
        }
        if (total == null || total.compareTo(MAX_CELL_TTL) > 0) {
            throw new IllegalArgumentException("expiry " + expiry + " plus serverClockSkew " + serverClockSkew
                    + " is too long for an HBase cell TTL: at most " + MAX_CELL_TTL.toDays() + " days");
        }
        long millis = total.toMillis() + (total.getNano() % 1_000_000 == 0 ? 0 : 1);
        return Duration.ofMillis(Math.max(1L, millis));
    }

    /** The column families of a lock table created by this library. */
    static List<ColumnFamilyDescriptor> families(HBaseOptions options) {
        return List.of(
                ColumnFamilyDescriptorBuilder.newBuilder(options.familyBytes())
                        .setMaxVersions(1)
                        .setTimeToLive((int) Math.min(Integer.MAX_VALUE - 1L, options.ttl().toSeconds()))
                        .setInMemory(true)
                        .build(),
                ColumnFamilyDescriptorBuilder.newBuilder(options.tokenFamilyBytes())
                        .setMaxVersions(1)
                        .setInMemory(true)
                        .build());
    }
}
