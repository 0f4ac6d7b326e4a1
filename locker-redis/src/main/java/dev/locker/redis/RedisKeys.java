package dev.locker.redis;

import dev.locker.api.KeyColumn;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

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

    private static byte[] sha256(byte[] bytes) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(bytes);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required by the Java platform", e);
        }
    }
}
