package dev.locker.engine;

import dev.locker.api.KeyColumn;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Claims of ours that were released but whose deletion failed: never the holder, deleted again when met. A column
 * is forgotten only once a mutation that deleted it succeeded.
 */
final class UndeletedClaims {

    private final ConcurrentHashMap<KeyColumn, Set<ByteBuffer>> undeleted = new ConcurrentHashMap<>();

    /** The undeleted columns of {@code lock}. */
    List<byte[]> of(KeyColumn lock) {
        Set<ByteBuffer> s = undeleted.get(lock);
        if (s == null) {
            return List.of();
        }
        List<byte[]> out = new ArrayList<>();
        for (ByteBuffer b : s) {
            out.add(b.array());
        }
        return out;
    }

    /** {@code columns} and the undeleted columns of {@code lock}, to delete in one mutation. */
    List<byte[]> with(KeyColumn lock, List<byte[]> columns) {
        List<byte[]> u = of(lock);
        if (u.isEmpty()) {
            return columns;
        }
        List<byte[]> out = new ArrayList<>(columns);
        out.addAll(u);
        return out;
    }

    /** Remembers {@code columns} of {@code lock} whose deletion failed. */
    void remember(KeyColumn lock, List<byte[]> columns) {
        Set<ByteBuffer> s = undeleted.computeIfAbsent(lock, k -> ConcurrentHashMap.newKeySet());
        for (byte[] c : columns) {
            s.add(ByteBuffer.wrap(c));
        }
    }

    /** Forgets exactly the columns a successful mutation deleted (others may have been added meanwhile). */
    void forget(KeyColumn lock, List<byte[]> deleted) {
        Set<ByteBuffer> s = undeleted.get(lock);
        if (s != null) {
            for (byte[] c : deleted) {
                s.remove(ByteBuffer.wrap(c));
            }
            if (s.isEmpty()) {
                undeleted.remove(lock, s);
            }
        }
    }
}
