package dev.locker.engine;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The keep-alive's timer: entries run in due order, once per scheduling; a move, a cancel and a shutdown hold. */
class TimerTest {

    static final class Entry implements Timer.Timed {
        final String name;
        int index = -1;
        long due;

        Entry(String name) {
            this.name = name;
        }

        @Override
        public int timerIndex() {
            return index;
        }

        @Override
        public void timerIndex(int i) {
            index = i;
        }

        @Override
        public long timerDue() {
            return due;
        }

        @Override
        public void timerDue(long d) {
            due = d;
        }
    }

    private static long ms(long n) {
        return TimeUnit.MILLISECONDS.toNanos(n);
    }

    @Test
    void entriesRunInDueOrderAndAMovedOrCancelledOneIsNotRunTwice() throws Exception {
        List<String> ran = new CopyOnWriteArrayList<>();
        CountDownLatch done = new CountDownLatch(1);
        Timer<Entry> timer = new Timer<>("timer-test", e -> {
            ran.add(e.name);
            if (e.name.equals("last")) {
                done.countDown();
            }
        });
        Entry a = new Entry("a");
        Entry b = new Entry("b");
        Entry c = new Entry("c");
        Entry gone = new Entry("gone");
        Entry last = new Entry("last");
        // far enough apart that the order cannot depend on scheduling delays of a loaded machine
        assertTrue(timer.schedule(c, ms(600)));
        assertTrue(timer.schedule(a, ms(200)));
        assertTrue(timer.schedule(gone, ms(300)));
        assertTrue(timer.schedule(b, ms(5_000)));
        assertTrue(timer.schedule(b, ms(400))); // moved earlier: scheduled once, not twice
        assertTrue(timer.schedule(last, ms(900)));
        timer.cancel(gone);
        assertEquals(4, timer.size());
        assertTrue(done.await(30, TimeUnit.SECONDS));
        assertEquals(List.of("a", "b", "c", "last"), ran);
        assertEquals(0, timer.size());
        timer.shutdownNow();
        assertFalse(timer.schedule(a, 0), "a shut-down timer refuses entries");
        assertTrue(timer.isShutdown());
    }

    @Test
    void manyEntriesComeOutSorted() throws Exception {
        // entries are due 1 ms apart; a thread paused inside a schedule call shifts one entry's due time, so such a
        // run proves nothing and is run again
        for (int run = 0; run < 5; run++) {
            if (entriesComeOutSortedUnlessPaused()) {
                return;
            }
        }
        throw new AssertionError("every run was paused while scheduling: the machine is too loaded to tell");
    }

    /** @return false when a pause while scheduling left the due times out of the order the test meant */
    private static boolean entriesComeOutSortedUnlessPaused() throws Exception {
        List<Integer> ran = new CopyOnWriteArrayList<>();
        int n = 200;
        CountDownLatch done = new CountDownLatch(n);
        Timer<Entry> timer = new Timer<>("timer-test-many", e -> {
            ran.add(Integer.parseInt(e.name));
            done.countDown();
        });
        Entry[] entries = new Entry[n];
        for (int i = 0; i < n; i++) {
            entries[i] = new Entry(Integer.toString(i));
        }
        // schedule all first (in a scrambled order, far in the future), then move each to its final due time (3 s
        // from now, 1 ms apart, also scrambled) while the timer thread is idle: sift up and down both run
        for (int i = 0; i < n; i++) {
            int k = (i * 73) % n;
            timer.schedule(entries[k], ms(60_000) + k);
        }
        long base = System.nanoTime();
        long longestCall = 0;
        for (int i = n - 1; i >= 0; i--) {
            int k = (i * 37) % n;
            long before = System.nanoTime();
            timer.schedule(entries[k], ms(3_000) + k * 1_000_000L - (before - base));
            longestCall = Math.max(longestCall, System.nanoTime() - before);
        }
        try {
            assertTrue(done.await(30, TimeUnit.SECONDS));
            if (longestCall >= 500_000) {
                return false;
            }
            for (int i = 1; i < n; i++) {
                assertTrue(ran.get(i - 1) < ran.get(i), "in due order: " + ran);
            }
            return true;
        } finally {
            timer.shutdownNow();
        }
    }
}
