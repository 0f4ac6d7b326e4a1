package dev.locker.redis;

import dev.locker.api.KeyColumn;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Maps a lock to its Redis keys, legibly: {@code <prefix>{<name>}}, where {@code <name>} is the lock's
 * {@link KeyColumn#legible()} name (the key, then {@code #} and the column when there is one; bytes other than
 * letters, digits and {@code -_.:,=@+~/} as {@code %XX}), the same name {@code mongosh}, {@code hbase shell} and
 * {@code locker --json} show. {@code KeyColumn.named("orders/42")} is {@code locker:{orders/42}}; {@code redis-cli
 * --scan} shows the names.
 *
 * <p>Invariants:
 * <ul>
 *   <li>injective: the prefix is fixed, the name encoding is a reversible escape, the separator {@code #} never
 *       appears escaped-out inside a part, and the name is closed by the key's only unescaped {@code }}; two
 *       different locks never share a key;</li>
 *   <li>binary-safe: any byte of a lock's key or column is either copied (a legible character) or escaped;</li>
 *   <li>the Cluster slot is the name's: the prefix may not contain braces and the encoded name none either, so the
 *       first {@code {} of the key opens the hash tag and the name's end closes it. The name is never empty (an empty
 *       key is written with its {@code #}), so the tag is never empty. A lock's other keys (its records) repeat the
 *       tag, hence the slot.</li>
 * </ul>
 */
final class RedisKeys {


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
     * The prefix's release channel, {@code <prefix>released}. Builds before the channel per lock published every
     * release there; this build publishes there only while such a build's waiter is queued (see {@link #lockChannel}).
     */
    byte[] releaseChannel() {
        byte[] tail = "released".getBytes(StandardCharsets.US_ASCII);
        byte[] out = new byte[prefix.length + tail.length];
        System.arraycopy(prefix, 0, out, 0, prefix.length);
        System.arraycopy(tail, 0, out, prefix.length, tail.length);
        return out;
    }

    /**
     * The channel on which the scripts publish a lock's key when it may be free and waiters are queued: the lock's
     * key and {@code w}, {@code <prefix>{<name>}w}. Only lockers waiting on that lock listen to it. It repeats the
     * key's hash tag, so it lies in the lock's Cluster slot. No prefix's release channel is like it: those hold no brace.
     */
    static byte[] lockChannel(byte[] lockKey) {
        byte[] out = Arrays.copyOf(lockKey, lockKey.length + 1);
        out[lockKey.length] = 'w';
        return out;
    }

    /** The hash that keeps {@code lock}'s records (a finished run's): the lock's key and {@code r}; same slot. */
    byte[] recordKey(KeyColumn lock) {
        byte[] k = lockKey(lock);
        byte[] out = Arrays.copyOf(k, k.length + 1);
        out[k.length] = 'r';
        return out;
    }

    /**
     * The admission marker of a standalone server (see {@code admit} in {@code common.lua}): {@code <prefix>guard}.
     * No lock's key is like it: a lock's key has a brace right after the prefix.
     */
    /**
     * The admission marker's key (single server only): {@code <prefix>{}guard}. No lock or record key can be it (those
     * have a non-empty name between the braces), and it stays inside the locker's own names even with an empty prefix.
     */
    byte[] guardKey() {
        return concat(prefix, "{}guard".getBytes(StandardCharsets.US_ASCII));
    }

    /**
     * The admission marker of the lockers that send the acquire script {@code guardArg} as their restart guard:
     * {@link #guardKey} followed by it. A marker that vouches for a grant says so for that guard alone.
     */
    byte[] markerKey(byte[] guardArg) {
        return concat(guardKey(), guardArg);
    }

    /**
     * The restart guard the lockers of this prefix use, as the acquire script records it (single server only):
     * {@code <prefix>{}restartGuard}. Like the marker, no lock, record or owner key can be it.
     */
    byte[] guardRecordKey() {
        return concat(prefix, "{}restartGuard".getBytes(StandardCharsets.US_ASCII));
    }

    /**
     * Where the data of this prefix's server was last known to start anew, as the acquire script records it (single
     * server only): {@code <prefix>{}lineage}. Like the marker, no lock, record or owner key can be it.
     */
    byte[] lineageKey() {
        return concat(prefix, "{}lineage".getBytes(StandardCharsets.US_ASCII));
    }

    /**
     * The owner record of a locker instance (see {@link RedisOwners}): {@code <prefix>{}o<instance>}. No lock or record
     * key can be it (a lock's name is never empty), nor the admission marker.
     */
    byte[] ownerKey(String instance) {
        return concat(prefix, ("{}o" + instance).getBytes(StandardCharsets.UTF_8));
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    /** The key that holds every claim on {@code lock}. */
    byte[] lockKey(KeyColumn lock) {
        byte[] out = new byte[prefix.length + lock.legibleLength() + 2]; // the one allocation: no string on the way
        System.arraycopy(prefix, 0, out, 0, prefix.length);
        out[prefix.length] = '{';
        out[lock.writeLegible(out, prefix.length + 1)] = '}';
        return out;
    }

    /**
     * A SCAN {@code MATCH} pattern for the keys of the locks whose key starts with {@code keyPrefix}: the prefix (glob
     * characters escaped), {@code {}, the encoded key prefix (which holds no glob character), {@code *}. The encoding
     * keeps prefixes, so no held lock under the prefix escapes the pattern; record keys and any other key that
     * matches are told apart by {@link #lockOf}.
     */
    byte[] listPattern(byte[] keyPrefix) {
        byte[] legible = KeyColumn.legibleKeyPrefix(keyPrefix).getBytes(StandardCharsets.US_ASCII);
        ByteArrayOutputStream out = new ByteArrayOutputStream(prefix.length + 3 + legible.length);
        escapeGlob(prefix, out);
        out.write('{');
        out.write(legible, 0, legible.length); // a legible name holds no glob character
        out.write('*');
        return out.toByteArray();
    }

    /** The lock whose key {@code redisKey} is, or null for any other key (a record, a marker, someone else's). */
    KeyColumn lockOf(byte[] redisKey) {
        int start = prefix.length + 1;
        int end = redisKey.length - 1;
        if (redisKey.length < prefix.length + 3 || !Arrays.equals(redisKey, 0, prefix.length, prefix, 0, prefix.length)
                || redisKey[prefix.length] != '{' || redisKey[end] != '}') {
            return null;
        }
        KeyColumn lock;
        try {
            lock = KeyColumn.fromLegible(new String(redisKey, start, end - start, StandardCharsets.US_ASCII));
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
}
