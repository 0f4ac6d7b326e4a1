package dev.locker.redis;

import dev.locker.api.KeyColumn;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import redis.clients.jedis.util.JedisClusterCRC16;

/**
 * Maps a lock to its Redis key: {@code <prefix>{<tag>}<KeyColumn.encoded()>}, where {@code <tag>} is 16 hex digits
 * of the SHA-256 of the encoded lock.
 *
 * <p>Invariants:
 * <ul>
 *   <li>injective: the prefix is fixed and the tag has a fixed length, so the bytes after it are exactly the
 *       (injective) encoded lock; two different locks never share a key;</li>
 *   <li>binary-safe: the lock's bytes are copied, never interpreted or escaped;</li>
 *   <li>the Cluster slot depends only on the tag: the prefix may not contain braces, so the first {@code {} of the
 *       key is ours and the first {@code }} after it closes our tag, whatever braces the lock's own bytes hold.</li>
 * </ul>
 */
final class RedisKeys {

    /** Hex digits of the digest used as the hash tag: 64 bits spread locks evenly over the 16384 slots. */
    static final int TAG_HEX_DIGITS = 16;

    private static final byte[] HEX = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);

    private final byte[] prefix;

    RedisKeys(String prefix) {
        this.prefix = validatePrefix(prefix).getBytes(StandardCharsets.UTF_8);
    }

    static String validatePrefix(String prefix) {
        if (prefix == null) {
            throw new IllegalArgumentException("key prefix must not be null");
        }
        if (prefix.indexOf('{') >= 0 || prefix.indexOf('}') >= 0) {
            throw new IllegalArgumentException("key prefix '" + prefix + "' must not contain '{' or '}': the "
                    + "locker puts its own hash tag after the prefix so that Redis Cluster slots stay per lock");
        }
        if (prefix.getBytes(StandardCharsets.UTF_8).length > 256) {
            throw new IllegalArgumentException("key prefix must be at most 256 bytes");
        }
        return prefix;
    }

    String prefix() {
        return new String(prefix, StandardCharsets.UTF_8);
    }

    /**
     * The pub/sub channel on which the scripts publish a lock's key when it may be free and waiters are queued:
     * {@code <prefix>released}. One per prefix, so lockers of other prefixes on the server are not bothered.
     */
    byte[] releaseChannel() {
        byte[] tail = "released".getBytes(StandardCharsets.US_ASCII);
        byte[] out = new byte[prefix.length + tail.length];
        System.arraycopy(prefix, 0, out, 0, prefix.length);
        System.arraycopy(tail, 0, out, prefix.length, tail.length);
        return out;
    }

    /**
     * The hash that keeps {@code lock}'s records (a finished run's): the lock's key with {@code 0xFF} right after the
     * tag. No lock's key has it there (the encoded key length starts with {@code 0x00}), and the tag, hence the Cluster
     * slot, is the lock's.
     */
    byte[] recordKey(KeyColumn lock) {
        byte[] k = lockKey(lock);
        int at = prefix.length + TAG_HEX_DIGITS + 2;
        byte[] out = new byte[k.length + 1];
        System.arraycopy(k, 0, out, 0, at);
        out[at] = (byte) 0xFF;
        System.arraycopy(k, at, out, at + 1, k.length - at);
        return out;
    }

    /**
     * The admission marker of a standalone server (see {@code admit} in {@code common.lua}): {@code <prefix>guard}.
     * No lock's key is like it: a lock's key has a brace right after the prefix.
     */
    byte[] guardKey() {
        return concat(prefix, "guard".getBytes(StandardCharsets.US_ASCII));
    }

    /**
     * The admission marker of the Cluster slot that holds {@code lockKey}: {@code <prefix>guard{<tag>}}, where the
     * tag is the first of a fixed list of short strings that hashes to that slot. One marker per slot (at most
     * 16384), so that a script can read it next to the lock's key.
     */
    byte[] guardKey(byte[] lockKey) {
        String tag = SlotTags.TAGS[JedisClusterCRC16.getSlot(lockKey)];
        return concat(prefix, ("guard{" + tag + "}").getBytes(StandardCharsets.US_ASCII));
    }

    /** For each Cluster slot, the shortest base-36 counter that hashes there: computed once, on first use. */
    private static final class SlotTags {
        static final String[] TAGS = new String[16384];

        static {
            int left = TAGS.length;
            for (int i = 0; left > 0; i++) {
                String t = Integer.toString(i, 36);
                int slot = JedisClusterCRC16.getSlot(t.getBytes(StandardCharsets.US_ASCII));
                if (TAGS[slot] == null) {
                    TAGS[slot] = t;
                    left--;
                }
            }
        }
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    /** The key that holds every claim on {@code lock}. */
    byte[] lockKey(KeyColumn lock) {
        byte[] encoded = lock.encoded();
        byte[] digest = sha256(encoded);
        byte[] out = new byte[prefix.length + TAG_HEX_DIGITS + 2 + encoded.length];
        System.arraycopy(prefix, 0, out, 0, prefix.length);
        int p = prefix.length;
        out[p++] = '{';
        for (int i = 0; i < TAG_HEX_DIGITS / 2; i++) {
            out[p++] = HEX[(digest[i] >>> 4) & 0xf];
            out[p++] = HEX[digest[i] & 0xf];
        }
        out[p++] = '}';
        System.arraycopy(encoded, 0, out, p, encoded.length);
        return out;
    }

    /**
     * A SCAN {@code MATCH} pattern for the keys of the locks whose key starts with {@code keyPrefix}: the prefix, the
     * 16-character tag, the 4 bytes of the encoded key length as {@code ?}s, then the key prefix, every glob character
     * escaped. The lock's key starts at a fixed offset, so no held lock under the prefix escapes the pattern; a lock
     * whose key is shorter than {@code keyPrefix} but whose key plus column starts with it does match, so every key
     * found is checked again with {@link #lockOf}.
     */
    byte[] listPattern(byte[] keyPrefix) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(prefix.length + 24 + 2 * keyPrefix.length);
        escapeGlob(prefix, out);
        out.write('{');
        for (int i = 0; i < TAG_HEX_DIGITS; i++) {
            out.write('?');
        }
        out.write('}');
        for (int i = 0; i < 4; i++) {
            out.write('?');
        }
        escapeGlob(keyPrefix, out);
        out.write('*');
        return out.toByteArray();
    }

    /** The lock whose key {@code redisKey} is (its tag checked), or null for any other key. */
    KeyColumn lockOf(byte[] redisKey) {
        int start = prefix.length + TAG_HEX_DIGITS + 2;
        if (redisKey.length <= start || !Arrays.equals(redisKey, 0, prefix.length, prefix, 0, prefix.length)) {
            return null;
        }
        KeyColumn lock;
        try {
            lock = KeyColumn.decode(Arrays.copyOfRange(redisKey, start, redisKey.length));
        } catch (IllegalArgumentException notALock) {
            return null;
        }
        return Arrays.equals(lockKey(lock), redisKey) ? lock : null;
    }

    private static void escapeGlob(byte[] bytes, ByteArrayOutputStream out) {
        for (byte b : bytes) {
            if (b == '*' || b == '?' || b == '[' || b == ']' || b == '\\') {
                out.write('\\');
            }
            out.write(b);
        }
    }

    private static byte[] sha256(byte[] bytes) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(bytes);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required by the Java platform", e);
        }
    }
}
