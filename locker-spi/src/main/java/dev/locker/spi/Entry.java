package dev.locker.spi;

import dev.locker.api.KeyColumn;

import java.util.Arrays;
import java.util.Objects;

/** One cell of a key-column-value store: a column and its value (both copied in and out). */
public final class Entry {

    private final byte[] column;
    private final byte[] value;

    /**
     * A cell; both arrays are copied.
     *
     * @param column the column
     * @param value the value
     */
    public Entry(byte[] column, byte[] value) {
        this.column = Objects.requireNonNull(column, "column must not be null").clone();
        this.value = Objects.requireNonNull(value, "value must not be null").clone();
    }

    /** {@return a copy of the column} */
    public byte[] column() {
        return column.clone();
    }

    /** {@return a copy of the value} */
    public byte[] value() {
        return value.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Entry && Arrays.equals(column, ((Entry) o).column) && Arrays.equals(value, ((Entry) o).value);
    }

    @Override
    public int hashCode() {
        return 31 * Arrays.hashCode(column) + Arrays.hashCode(value);
    }

    @Override
    public String toString() {
        return "Entry[" + KeyColumn.printable(column) + "=" + value.length + " bytes]";
    }
}
