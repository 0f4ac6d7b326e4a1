package dev.locker.hbase;

import dev.locker.spi.Entry;
import dev.locker.spi.StoreTransaction;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The key-column-value adapter on the real mini cluster: slices, ordering, atomic row mutations. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class HBaseKeyColumnValueStoreTest {

    private static final AtomicInteger ROWS = new AtomicInteger();
    private HBaseKeyColumnValueStore store;
    private StoreTransaction tx;

    @BeforeAll
    void open() {
        store = HBaseKeyColumnValueStore.open(HBaseTestCluster.get().connection(), "kcv_test", "d", true);
        tx = store.beginTransaction();
    }

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] bytes(int... v) {
        byte[] out = new byte[v.length];
        for (int i = 0; i < v.length; i++) {
            out[i] = (byte) v[i];
        }
        return out;
    }

    private static byte[] row() {
        return b("row-" + ROWS.incrementAndGet() + "-" + System.nanoTime());
    }

    private List<byte[]> columns(byte[] key, byte[] start, byte[] end) {
        List<byte[]> out = new ArrayList<>();
        for (Entry e : store.getSlice(key, start, end, tx)) {
            out.add(e.column());
        }
        return out;
    }

    @Test
    void slicesAreHalfOpenAndSortedAsUnsignedBytes() {
        byte[] key = row();
        byte[][] cols = {bytes(0xff), bytes(0x00), bytes(0x7f), bytes(0x80), bytes(0x80, 0x00), bytes(0x01)};
        List<Entry> adds = new ArrayList<>();
        for (byte[] c : cols) {
            adds.add(new Entry(c, c));
        }
        store.mutate(key, adds, List.of(), tx);
        List<byte[]> all = columns(key, new byte[0], new byte[0]);
        assertEquals(6, all.size());
        byte[][] sorted = {bytes(0x00), bytes(0x01), bytes(0x7f), bytes(0x80), bytes(0x80, 0x00), bytes(0xff)};
        for (int i = 0; i < sorted.length; i++) {
            assertArrayEquals(sorted[i], all.get(i), "position " + i);
        }
        List<byte[]> mid = columns(key, bytes(0x01), bytes(0x80, 0x00));
        assertEquals(3, mid.size(), "[0x01, 0x8000) holds 0x01, 0x7f, 0x80");
        assertArrayEquals(bytes(0x01), mid.get(0));
        assertArrayEquals(bytes(0x80), mid.get(2));
        assertEquals(2, columns(key, bytes(0x80, 0x00), new byte[0]).size(), "empty end: no upper bound");
        assertEquals(0, columns(key, bytes(0x80), bytes(0x80)).size(), "empty range");
        assertEquals(0, columns(key, bytes(0xff), bytes(0x01)).size(), "reversed range");
        assertEquals(0, columns(b("never-written-" + System.nanoTime()), new byte[0], new byte[0]).size());
        assertArrayEquals(bytes(0x7f), store.getSlice(key, bytes(0x7f), bytes(0x80), tx).get(0).value());
    }

    @Test
    void aMutationDeletesThenAddsAtomically() {
        byte[] key = row();
        store.mutate(key, List.of(new Entry(b("a"), b("1")), new Entry(b("b"), b("2"))), List.of(), tx);
        store.mutate(key, List.of(new Entry(b("b"), b("3")), new Entry(b("c"), b("4"))), List.of(b("a"), b("b")), tx);
        List<Entry> row = store.getSlice(key, new byte[0], new byte[0], tx);
        assertEquals(List.of(new Entry(b("b"), b("3")), new Entry(b("c"), b("4"))), row,
                "a column deleted and added in one mutation keeps the addition");
    }

    @Test
    void aPutRightAfterADeleteOfTheSameColumnStaysVisible() {
        byte[] key = row();
        store.mutate(key, List.of(new Entry(b("x"), b("v"))), List.of(), tx);
        for (int i = 0; i < 300; i++) { // many rounds, so that some fall into one millisecond
            store.mutate(key, List.of(), List.of(b("x")), tx);
            store.mutate(key, List.of(new Entry(b("x"), b("w" + i))), List.of(), tx);
            List<Entry> row = store.getSlice(key, new byte[0], new byte[0], tx);
            assertEquals(List.of(new Entry(b("x"), b("w" + i))), row, "round " + i);
        }
    }

    @Test
    void binaryKeysAndEmptyValuesRoundTrip() {
        byte[] key = bytes(0x00, 0xff, 0x0a, 0x00);
        store.mutate(key, List.of(new Entry(bytes(0x00), new byte[0])), List.of(), tx);
        List<Entry> row = store.getSlice(key, new byte[0], new byte[0], tx);
        assertEquals(1, row.size());
        assertEquals(0, row.get(0).value().length);
        store.mutate(key, List.of(), List.of(bytes(0x00)), tx);
        assertTrue(store.getSlice(key, new byte[0], new byte[0], tx).isEmpty());
    }

    @Test
    void badArgumentsAreRefusedBeforeIo() {
        assertThrows(IllegalArgumentException.class, () -> store.getSlice(new byte[0], new byte[0], new byte[0], tx));
        assertThrows(NullPointerException.class, () -> store.mutate(b("k"), null, List.of(), tx));
        store.mutate(b("k"), List.of(), List.of(), tx); // nothing to do: no I/O
        assertTrue(store.name().contains("kcv_test"), store.name());
    }
}
