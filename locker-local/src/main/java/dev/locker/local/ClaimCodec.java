package dev.locker.local;

import dev.locker.api.LockOwner;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Arrays;

/**
 * The wait-and-read-back protocol's on-store format, published so that any tool can read a lock row.
 *
 * <ul>
 *   <li>Lock row key: {@link dev.locker.api.KeyColumn#encoded()}.</li>
 *   <li>Claim column: 8-byte big-endian write timestamp (epoch microseconds), then the rid in UTF-8. Unsigned
 *       byte order of columns is therefore (timestamp, rid) order: ties go to the bytewise-smaller rid.</li>
 *   <li>Claim value: version byte 1, expiry (epoch micros, 8 bytes), fencing token (8 bytes, 0 until the claim
 *       becomes the holder), then {@link LockOwner#toBytes()}.</li>
 *   <li>Token high-water column: the single byte {@code 0x00} (shorter than any claim column, so never parsed as
 *       one), value = the last fencing token issued for the lock (8 bytes). Never scrubbed, never force-released.</li>
 * </ul>
 */
final class ClaimCodec {

    static final byte[] TOKEN_COLUMN = {0};
    private static final byte VERSION = 1;

    private ClaimCodec() {
    }

    static long micros(Instant t) {
        return Math.addExact(Math.multiplyExact(t.getEpochSecond(), 1_000_000L), t.getNano() / 1_000);
    }

    static Instant instant(long micros) {
        return Instant.ofEpochSecond(Math.floorDiv(micros, 1_000_000L), Math.floorMod(micros, 1_000_000L) * 1_000L);
    }

    static byte[] column(Instant writtenAt, String rid) {
        byte[] r = rid.getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocate(8 + r.length).putLong(micros(writtenAt)).put(r).array();
    }

    static boolean isClaimColumn(byte[] column) {
        return column.length > 8;
    }

    static Instant columnTime(byte[] column) {
        return instant(ByteBuffer.wrap(column).getLong());
    }

    static String columnRid(byte[] column) {
        return new String(column, 8, column.length - 8, StandardCharsets.UTF_8);
    }

    static byte[] value(Instant expiry, long token, LockOwner owner) {
        byte[] o = owner.toBytes();
        return ByteBuffer.allocate(1 + 8 + 8 + o.length).put(VERSION).putLong(micros(expiry)).putLong(token).put(o).array();
    }

    static Claim decode(byte[] column, byte[] value) {
        ByteBuffer buf = ByteBuffer.wrap(value);
        if (value.length < 17 || buf.get() != VERSION) {
            throw new IllegalArgumentException("unknown claim value format (" + value.length + " bytes)");
        }
        Instant expiry = instant(buf.getLong());
        long token = buf.getLong();
        LockOwner owner = LockOwner.fromBytes(Arrays.copyOfRange(value, 17, value.length));
        return new Claim(column, columnTime(column), columnRid(column), expiry, token, owner);
    }

    static byte[] tokenValue(long token) {
        return ByteBuffer.allocate(8).putLong(token).array();
    }

    static long tokenOf(byte[] value) {
        return value.length == 8 ? ByteBuffer.wrap(value).getLong() : 0L;
    }

    /** One decoded claim of a lock row. */
    static final class Claim {
        final byte[] column;
        final Instant writtenAt;
        final String rid;
        final Instant expiry;
        final long token;
        final LockOwner owner;

        Claim(byte[] column, Instant writtenAt, String rid, Instant expiry, long token, LockOwner owner) {
            this.column = column;
            this.writtenAt = writtenAt;
            this.rid = rid;
            this.expiry = expiry;
            this.token = token;
            this.owner = owner;
        }

        boolean isLiveAt(Instant now) {
            return now.isBefore(expiry);
        }
    }
}
