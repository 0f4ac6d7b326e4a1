package dev.locker.engine;

import dev.locker.spi.Entry;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.spi.StoreTransaction;
import org.junit.jupiter.api.parallel.Isolated;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The cleaner deletes the columns it is given, drops work beyond its queue, and its thread ends with close. */
// alone: it looks for any cleaner thread of the JVM, and other classes' lockers start some
@Isolated
class ExpiredClaimCleanerTest {

    private static byte[] b(String s) {
        return s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }

    private static boolean cleanerThreadAlive() {
        return Thread.getAllStackTraces().keySet().stream()
                .anyMatch(t -> t.isAlive() && t.getName().startsWith("locker-cleaner-"));
    }

    @Test
    void deletesTheGivenColumnsAndStopsOnClose() throws Exception {
        InMemoryStore store = new InMemoryStore("cleaner");
        store.mutate(b("row"), List.of(new Entry(b("dead"), b("1")), new Entry(b("live"), b("2"))), List.of(), store.beginTransaction());
        ExpiredClaimCleaner cleaner = new ExpiredClaimCleaner(store, 4);
        cleaner.submit(b("row"), List.of(b("dead")));
        assertTrue(cleaner.awaitIdle(5000));
        assertEquals(1, cleaner.deleted());
        assertEquals(1, store.getSlice(b("row"), new byte[0], new byte[0], store.beginTransaction()).size());
        cleaner.close();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (cleanerThreadAlive() && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertFalse(cleanerThreadAlive(), "the cleaner's thread ends with close()");
        cleaner.submit(b("row"), List.of(b("live"))); // ignored after close
        assertEquals(1, store.getSlice(b("row"), new byte[0], new byte[0], store.beginTransaction()).size());
    }

    @Test
    void workBeyondTheQueueIsDroppedNotBlocking() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        InMemoryStore real = new InMemoryStore("cleaner-slow");
        KeyColumnValueStore slow = new KeyColumnValueStore() {
            @Override public String name() { return real.name(); }
            @Override public List<Entry> getSlice(byte[] k, byte[] s, byte[] e, StoreTransaction tx) { return real.getSlice(k, s, e, tx); }
            @Override public void mutate(byte[] k, List<Entry> a, List<byte[]> d, StoreTransaction tx) {
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                real.mutate(k, a, d, tx);
            }
            @Override public StoreTransaction beginTransaction() { return real.beginTransaction(); }
            @Override public void close() { real.close(); }
        };
        try (ExpiredClaimCleaner cleaner = new ExpiredClaimCleaner(slow, 2)) {
            for (int i = 0; i < 50; i++) {
                cleaner.submit(b("row" + i), List.of(b("c"))); // never blocks the caller
            }
            release.countDown();
            assertTrue(cleaner.awaitIdle(5000));
            assertTrue(cleaner.deleted() <= 3, "at most one running plus two queued: " + cleaner.deleted());
        }
    }
}
