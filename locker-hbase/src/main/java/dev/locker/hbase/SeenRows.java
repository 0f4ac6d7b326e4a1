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

    /** What this locker's own release writes, so what it expects after a holder's release. */
    private final TableLayout layout;

    private final Map<String, Seen> seen = Collections.synchronizedMap(new LinkedHashMap<>(64, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Seen> eldest) {
            return size() > SEEN_ROWS;
        }
    });

    SeenRows(TableLayout layout) {
        this.layout = layout;
    }

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

    /**
     * The row as its holder's release leaves it, on this locker's layout: the free value it writes, and the counter
     * at the holder's token. A holder on the other layout leaves the other value: one more read, no harm.
     */
    Seen releasedAt(long token) {
        return new Seen(token, layout.releaseValue(token));
    }

    private static String key(byte[] row) {
        return new String(row, StandardCharsets.US_ASCII);
    }

    /**
     * What a grant expects of a lock row: the counter ({@code 0}: none yet) and the holder cell's free value (empty, or
     * naming a counter), null when the cell is absent. After a read that found a holder: what its release leaves.
     */
    record Seen(long counter, byte[] free) {
    }
}
