package dev.locker.engine;

import dev.locker.api.LockOwner;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The wait-and-read-back protocol's on-store format, published so that any tool can read a lock row.
 *
 * <ul>
 *   <li>Lock row key: {@link dev.locker.api.KeyColumn#encoded()}.</li>
 *   <li>Claim column: 8-byte big-endian write timestamp (epoch microseconds, not negative), the writer's rid in
 *       UTF-8, a zero byte, then the claim's 8-byte nonce. Unsigned byte order of columns is therefore (timestamp, rid,
 *       nonce) order: ties go to the bytewise-smaller rid. The nonce makes every claim a column of its own, so two
 *       transactions of one locker (or an earlier attempt of the same claim) are never mistaken for each other.</li>
 *   <li>Claim value: version byte 1, expiry (epoch micros, 8 bytes), fencing token (8 bytes, 0 until the claim
 *       becomes the holder), {@link LockOwner#toBytes()}, then two fields that claims of earlier builds lack (readers
 *       of those builds ignore what follows the owner): an 8-byte write number, a new one for every write of the
 *       writing process, and the wall time (epoch micros, 8 bytes) the expiry was counted from. The number makes
 *       every write of a claim a value of its own, so a reader that sees the value change knows the claim was
 *       written again, whatever expiry it carries. The time says in which frame of a stepped wall clock the expiry
 *       was written: a renewal's, not the column's. A time before 1970 or after the expiry makes both fields count as
 *       absent.</li>
 *   <li>Token column: the byte {@code 0xFF}, the 8-byte token, then the claim column of the holder it was issued to;
 *       empty value. One per issued token and never overwritten, so a late writer cannot lower the high-water mark:
 *       the next token is always above the greatest token column. A holder prunes the lower ones as it writes its own.
 *       Never scrubbed, never force-released.</li>
 *   <li>Legacy token column {@code 0x00} (one byte, value the last token): read as a floor, never written.</li>
 * </ul>
 */
final class ClaimCodec {

    static final byte[] LEGACY_TOKEN_COLUMN = {0};
    private static final byte TOKEN_MARK = (byte) 0xFF;
    private static final byte VERSION = 1;
    /** The last write number given out; columns differ between processes, so one count per process suffices. */
    private static final AtomicLong WRITES = new AtomicLong();

    private ClaimCodec() {
    }

    static long micros(Instant t) {
        return Math.addExact(Math.multiplyExact(t.getEpochSecond(), 1_000_000L), t.getNano() / 1_000);
    }

    static Instant instant(long micros) {
        return Instant.ofEpochSecond(Math.floorDiv(micros, 1_000_000L), Math.floorMod(micros, 1_000_000L) * 1_000L);
    }

    static byte[] column(Instant writtenAt, String rid, long nonce) {
        long ts = micros(writtenAt);
        if (ts < 0) {
            throw new IllegalStateException("claim timestamps before 1970 are not supported: " + writtenAt);
        }
        byte[] r = rid.getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocate(8 + r.length + 1 + 8).putLong(ts).put(r).put((byte) 0).putLong(nonce).array();
    }

    static boolean isClaimColumn(byte[] column) {
        return column.length >= 18 && column[0] >= 0 && column[column.length - 9] == 0;
    }

    static boolean isTokenColumn(byte[] column) {
        return column.length > 9 && column[0] == TOKEN_MARK;
    }

    static Instant columnTime(byte[] column) {
        return instant(ByteBuffer.wrap(column).getLong());
    }

    static String columnRid(byte[] column) {
        return new String(column, 8, column.length - 17, StandardCharsets.UTF_8);
    }

    static byte[] tokenColumn(long token, byte[] holderColumn) {
        return ByteBuffer.allocate(9 + holderColumn.length).put(TOKEN_MARK).putLong(token).put(holderColumn).array();
    }

    static long tokenOfColumn(byte[] tokenColumn) {
        return ByteBuffer.wrap(tokenColumn, 1, 8).getLong();
    }

    static byte[] holderOfTokenColumn(byte[] tokenColumn) {
        return Arrays.copyOfRange(tokenColumn, 9, tokenColumn.length);
    }

    /** A claim's value: {@code expiry} counted from {@code from}, by the writer's wall clock. */
    static byte[] value(Instant expiry, long token, LockOwner owner, Instant from) {
        byte[] o = owner.toBytes();
        return ByteBuffer.allocate(1 + 8 + 8 + o.length + 16).put(VERSION).putLong(micros(expiry)).putLong(token).put(o)
                .putLong(WRITES.incrementAndGet()).putLong(micros(from)).array();
    }

    static Claim decode(byte[] column, byte[] value) {
        ByteBuffer buf = ByteBuffer.wrap(value);
        if (value.length < 17 || buf.get() != VERSION) {
            throw new IllegalArgumentException("unknown claim value format (" + value.length + " bytes)");
        }
        long expiryMicros = buf.getLong();
        long token = buf.getLong();
        LockOwner owner = LockOwner.read(buf);
        Instant writtenAt = columnTime(column);
        long fromMicros = buf.remaining() >= 16 ? buf.getLong(buf.position() + 8) : -1;
        // bytes another tool left there, not a time an expiry was counted from: judged as a claim of an earlier build
        boolean numbered = fromMicros >= 0 && fromMicros <= expiryMicros;
        Instant from = numbered ? instant(fromMicros) : writtenAt;
        return new Claim(column, value, numbered, writtenAt, from, columnRid(column), instant(expiryMicros), token,
                owner);
    }

    static long legacyTokenOf(byte[] value) {
        return value.length == 8 ? ByteBuffer.wrap(value).getLong() : 0L;
    }

    /** One decoded claim of a lock row. */
    static final class Claim {
        final byte[] column;
        /** The value as stored: one write of the claim. */
        final byte[] value;
        /** Whether the value carries a write number, so that no other write of the claim stores the same bytes. */
        final boolean numbered;
        final Instant writtenAt;
        /** The wall time the expiry was counted from: the column's time, unless a renewal wrote the value. */
        final Instant expiryFrom;
        final String rid;
        final Instant expiry;
        final long token;
        final LockOwner owner;

        Claim(byte[] column, byte[] value, boolean numbered, Instant writtenAt, Instant expiryFrom, String rid,
              Instant expiry, long token, LockOwner owner) {
            this.column = column;
            this.value = value;
            this.numbered = numbered;
            this.expiryFrom = expiryFrom;
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
