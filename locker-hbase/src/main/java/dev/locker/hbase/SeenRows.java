package dev.locker.hbase;

import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What one locker last saw or wrote of its lock rows: the expectation of its next grant's check. It is a guess only;
 * the check decides, and a wrong guess costs one more read.
 */
final class SeenRows {

    /** How many lock rows a locker remembers the last seen counter of (least recently used dropped first). */
    static final int SEEN_ROWS = 4096;

    private final Map<String, Seen> seen = Collections.synchronizedMap(new LinkedHashMap<>(64, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Seen> eldest) {
            return size() > SEEN_ROWS;
        }
    });

    /** What was last seen of {@code row}, or null. */
    Seen get(byte[] row) {
        return seen.get(key(row));
    }

    void remember(byte[] row, Seen s) {
        seen.put(key(row), s);
    }

    void forget(byte[] row) {
        seen.remove(key(row));
    }

    private static String key(byte[] row) {
        return new String(row, StandardCharsets.US_ASCII);
    }

    /**
     * What a grant expects of a lock row: the counter ({@code 0}: none yet) and the holder cell's free value (empty, or
     * naming a counter), null when the cell is absent. After a read that found a holder: what its release leaves.
     */
    record Seen(long counter, byte[] free) {

        /** The row as its holder's own release leaves it: the free value naming the holder's token. */
        static Seen releasedAt(long token) {
            return new Seen(token, LockTable.freeAt(token));
        }
    }
}
