package dev.locker.janusgraph;

import dev.locker.api.KeyColumn;
import org.janusgraph.diskstorage.StaticBuffer;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * Maps JanusGraph's (key, column) of one locker name to a Locker {@link KeyColumn}: the key is
 * {@code namespace NUL lockerName NUL janusKey}, the column is JanusGraph's column. Neither name may contain NUL, so the
 * mapping is injective: one graph's stores never share a lock, two graphs with distinct namespaces never meet.
 * A lock larger than the backend's {@code maxKeyBytes} is taken through its {@link KeyColumn#fitTo stand-in}, so
 * JanusGraph may lock index values of any length, as its own locker does.
 */
final class LockKeys {

    private final byte[] prefix;
    private final int maxKeyBytes;

    LockKeys(String namespace, String lockerName, int maxKeyBytes) {
        byte[] ns = nameBytes(namespace, "storage.locker.namespace");
        byte[] ln = nameBytes(lockerName, "locker name");
        this.prefix = ByteBuffer.allocate(ns.length + ln.length + 2).put(ns).put((byte) 0).put(ln).put((byte) 0).array();
        this.maxKeyBytes = Math.max(maxKeyBytes, KeyColumn.MIN_FIT_BYTES);
    }

    /** The prefix of every lock key of a graph's namespace (what clearStorage releases). */
    static byte[] namespacePrefix(String namespace) {
        byte[] ns = nameBytes(namespace, "storage.locker.namespace");
        return ByteBuffer.allocate(ns.length + 1).put(ns).put((byte) 0).array();
    }

    KeyColumn lockOf(org.janusgraph.diskstorage.util.KeyColumn kc) {
        byte[] key = bytes(kc.getKey());
        byte[] k = ByteBuffer.allocate(prefix.length + key.length).put(prefix).put(key).array();
        return KeyColumn.of(k, bytes(kc.getColumn())).fitTo(maxKeyBytes);
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
