package dev.locker.engine;

import dev.locker.spi.Entry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/** A lock row as read: its claims in (timestamp, rid, nonce) order and its token columns. */
final class LockRow {

    /** Logged under the locker's name: the row is its part. */
    private static final Logger log = LoggerFactory.getLogger(ConsistentKeyLocker.class);
    private static final byte[] EMPTY = new byte[0];

    final List<ClaimCodec.Claim> claims = new ArrayList<>();
    final List<byte[]> tokenColumns = new ArrayList<>();
    long legacyHighWater;

    LockRow(List<Entry> entries) {
        for (Entry e : entries) {
            byte[] col = e.column();
            if (Arrays.equals(col, ClaimCodec.LEGACY_TOKEN_COLUMN)) {
                legacyHighWater = ClaimCodec.legacyTokenOf(e.value());
            } else if (ClaimCodec.isTokenColumn(col)) {
                tokenColumns.add(col);
            } else if (ClaimCodec.isClaimColumn(col)) {
                try {
                    claims.add(ClaimCodec.decode(col, e.value()));
                } catch (IllegalArgumentException bad) {
                    log.warn("Ignoring an unreadable claim column in a lock row: {}", bad.toString());
                }
            }
        }
    }

    ClaimCodec.Claim find(byte[] column) {
        for (ClaimCodec.Claim c : claims) {
            if (Arrays.equals(c.column, column)) {
                return c;
            }
        }
        return null;
    }

    /**
     * The claim that holds the lock as an observer sees it: a live claim carrying a token (a confirmed holder),
     * else the senior live claim (not confirmed yet); null when no claim lives.
     */
    ClaimCodec.Claim holder(ClaimWatch.Judge judge) {
        ClaimCodec.Claim confirmed = otherTokenHolder(judge, EMPTY, List.of());
        return confirmed != null ? confirmed : seniorLive(judge, List.of());
    }

    /** The earliest live claim, skipping the {@code ignored} columns (ours, never the holder). */
    ClaimCodec.Claim seniorLive(ClaimWatch.Judge judge, List<byte[]> ignored) {
        for (ClaimCodec.Claim c : claims) {
            if (judge.isLive(c) && !contains(ignored, c.column)) {
                return c;
            }
        }
        return null;
    }

    /** A live claim other than {@code own} (and the ignored ones) that carries a token: a confirmed holder. */
    ClaimCodec.Claim otherTokenHolder(ClaimWatch.Judge judge, byte[] own, List<byte[]> ignored) {
        for (ClaimCodec.Claim c : claims) {
            if (c.token != 0 && !Arrays.equals(c.column, own) && !contains(ignored, c.column) && judge.isLive(c)) {
                return c;
            }
        }
        return null;
    }

    List<byte[]> deadColumns(ClaimWatch.Judge judge) {
        List<byte[]> out = new ArrayList<>();
        for (ClaimCodec.Claim c : claims) {
            if (!judge.isLive(c)) {
                out.add(c.column);
            }
        }
        return out;
    }

    long maxTokenColumnToken() {
        long max = 0;
        for (byte[] t : tokenColumns) {
            max = Math.max(max, ClaimCodec.tokenOfColumn(t));
        }
        return max;
    }

    long maxTokenColumnTokenOfOthers(byte[] holder) {
        long max = 0;
        for (byte[] t : tokenColumns) {
            if (!Arrays.equals(ClaimCodec.holderOfTokenColumn(t), holder)) {
                max = Math.max(max, ClaimCodec.tokenOfColumn(t));
            }
        }
        return max;
    }

    List<byte[]> tokenColumnsBelow(long token) {
        List<byte[]> out = new ArrayList<>();
        for (byte[] t : tokenColumns) {
            if (ClaimCodec.tokenOfColumn(t) < token) {
                out.add(t);
            }
        }
        return out;
    }

    /** The greatest token this row records anywhere: token columns, claims, and the legacy column. */
    long maxToken() {
        long max = Math.max(legacyHighWater, maxTokenColumnToken());
        for (ClaimCodec.Claim c : claims) {
            max = Math.max(max, c.token);
        }
        return max;
    }

    private static boolean contains(List<byte[]> list, byte[] column) {
        for (byte[] b : list) {
            if (Arrays.equals(b, column)) {
                return true;
            }
        }
        return false;
    }

    /**
     * The key-length field a row starts with, unsigned; a row shorter than the field counts as zero-padded, which is
     * the smallest length field of the rows that sort after it.
     */
    static long lengthField(byte[] row) {
        long v = 0;
        for (int i = 0; i < 4; i++) {
            v = (v << 8) | (i < row.length ? row[i] & 0xff : 0);
        }
        return v;
    }

    /** A bare key-length field: it sorts before every row key of that length. */
    static byte[] lengthOnly(long keyLength) {
        return ByteBuffer.allocate(4).putInt((int) keyLength).array();
    }
}
