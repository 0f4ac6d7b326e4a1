package dev.locker.hbase;

import org.apache.hadoop.hbase.client.TableDescriptor;

import java.util.Arrays;
import java.util.stream.Collectors;

/**
 * Which free value a holder's own release writes in a lock table: the table's descriptor says so under {@link #KEY}.
 * A locker reads it once, when it opens the table, so the table is the one source of truth for all its lockers.
 *
 * <p>Only the writes depend on it. Every locker of this build reads both free values, whatever its table says, since
 * another locker may have opened the table after a switch. A mix of the two on one table is safe (docs/safety.md).
 */
enum TableLayout {

    /**
     * No value set, as on every table made before this build: a release leaves the empty value, and the next grant
     * checks the holder cell and the counter. Lockers of earlier builds read every value this layout writes.
     */
    EMPTY_ON_RELEASE("1"),

    /**
     * A release leaves {@code free@token} ({@link LockTable#freeAt}), and the next grant checks that one cell. Lockers
     * of earlier builds fail to read {@code free@token}: switch only once every locker of the table runs this build.
     */
    TOKEN_ON_RELEASE("2");

    /** The table descriptor's key (its METADATA in the hbase shell). */
    static final String KEY = "locker.layout";

    /** The layout of a table this build creates: no locker of an earlier build can be on it yet. */
    static final TableLayout CREATED = TOKEN_ON_RELEASE;

    /** The descriptor's value for this layout. */
    final String value;

    TableLayout(String value) {
        this.value = value;
    }

    /** The layout {@code d} names ({@link #EMPTY_ON_RELEASE} when none), or null for one this build does not know. */
    static TableLayout of(TableDescriptor d) {
        String v = d.getValue(KEY);
        if (v == null) {
            return EMPTY_ON_RELEASE;
        }
        for (TableLayout l : values()) {
            if (l.value.equals(v.trim())) {
                return l;
            }
        }
        return null;
    }

    /** Why a table whose descriptor names an unknown layout is refused: lockers cannot know what it writes. */
    static String unknown(TableDescriptor d, String where) {
        return "table " + d.getTableName() + " on " + where + " has " + KEY + "='" + d.getValue(KEY) + "', a layout "
                + "this build does not know (it knows " + Arrays.stream(values()).map(l -> l.value)
                .collect(Collectors.joining(", ")) + "): a newer build's lockers write values this one cannot read; "
                + "upgrade this locker";
    }

    /** The free value a holder's own release of the claim holding {@code token} writes. */
    byte[] releaseValue(long token) {
        return this == TOKEN_ON_RELEASE ? LockTable.freeAt(token) : LockTable.FREE;
    }

    @Override
    public String toString() {
        return value + " (release leaves " + (this == TOKEN_ON_RELEASE ? "free@token" : "the empty value") + ")";
    }
}
