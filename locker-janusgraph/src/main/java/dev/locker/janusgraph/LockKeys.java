package dev.locker.janusgraph;

import dev.locker.api.KeyColumn;
import org.janusgraph.diskstorage.StaticBuffer;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * Maps JanusGraph's (key, column) of one locker name to a Locker {@link KeyColumn}: the key is
 * {@code namespace NUL lockerName NUL janusKey}, the column is JanusGraph's column. Neither name may contain NUL, so the
 * mapping is injective: one graph's stores never share a lock, two graphs with distinct namespaces never meet.
 * A lock larger than {@link #FIT_BYTES} is taken through its {@link KeyColumn#fitTo stand-in}, so JanusGraph may lock
 * index values of any length, as its own locker does. The size is fixed, not the backend's {@code maxKeyBytes} (a
 * per-instance URI option): instances of one graph configured differently would otherwise map one long lock to two
 * keys (a stand-in on one, the whole lock on the other) and never meet on it. A locker whose {@code maxKeyBytes} is
 * below it is refused when the graph opens ({@link #requireRoom}).
 */
final class LockKeys {

    /**
     * Where every instance cuts a long lock to its stand-in: {@code LockerConfig}'s default {@code maxKeyBytes}, so
     * that locks keep the keys they had when every instance ran with the default.
     */
    static final int FIT_BYTES = 4096;

    /**
     * The longest namespace, in UTF-8 bytes: its prefix must fit in a stand-in (which keeps the lock's first bytes, so
     * that {@code clearStorage}'s listing by prefix finds it) with room for the locker name and the key.
     */
    static final int MAX_NAMESPACE_BYTES = 256;

    private final byte[] prefix;

    LockKeys(String namespace, String lockerName) {
        byte[] ns = namespaceBytes(namespace);
        byte[] ln = nameBytes(lockerName, "locker name");
        this.prefix = ByteBuffer.allocate(ns.length + ln.length + 2).put(ns).put((byte) 0).put(ln).put((byte) 0).array();
    }

    /** The prefix of every lock key of a graph's namespace (what clearStorage releases); checks the namespace. */
    static byte[] namespacePrefix(String namespace) {
        byte[] ns = namespaceBytes(namespace);
        return ByteBuffer.allocate(ns.length + 1).put(ns).put((byte) 0).array();
    }

    /** Refuses a locker whose keys cannot hold every lock of a graph as every other instance takes it. */
    static void requireRoom(int maxKeyBytes) {
        if (maxKeyBytes < FIT_BYTES) {
            throw new IllegalArgumentException("locker-janusgraph needs maxKeyBytes >= " + FIT_BYTES + " (was "
                    + maxKeyBytes + "): every instance of a graph cuts a longer lock to a stand-in of " + FIT_BYTES
                    + " bytes, so that instances configured differently still meet on it");
        }
    }

    KeyColumn lockOf(org.janusgraph.diskstorage.util.KeyColumn kc) {
        byte[] key = bytes(kc.getKey());
        byte[] k = ByteBuffer.allocate(prefix.length + key.length).put(prefix).put(key).array();
        return KeyColumn.of(k, bytes(kc.getColumn())).fitTo(FIT_BYTES);
    }

    private static byte[] namespaceBytes(String namespace) {
        byte[] ns = nameBytes(namespace, "storage.locker.namespace");
        if (ns.length > MAX_NAMESPACE_BYTES) {
            throw new IllegalArgumentException("storage.locker.namespace must be at most " + MAX_NAMESPACE_BYTES
                    + " bytes (UTF-8), was " + ns.length);
        }
        return ns;
    }

    private static byte[] bytes(StaticBuffer b) {
        return b.as(StaticBuffer.ARRAY_FACTORY);
    }

    private static byte[] nameBytes(String name, String what) {
        if (name == null || name.isEmpty() || name.indexOf('\0') >= 0) {
            throw new IllegalArgumentException(what + " must be a non-empty name without NUL characters, was '"
                    + name + "'");
        }
        return name.getBytes(StandardCharsets.UTF_8);
    }
}
