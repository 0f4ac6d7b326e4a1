package dev.locker.engine;

import dev.locker.api.Locker;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The engine's Timer survives a throwing handler and keeps its heap ordered under schedule, move and cancel. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TimerRobustnessTest {

    private final List<Locker> lockers = new ArrayList<>();

    @AfterEach
    void tearDown() {
        lockers.forEach(Locker::close);
    }

    /** Throws any throwable, checked or not, without declaring it (what Kotlin, Groovy or Lombok code does). */
    @SuppressWarnings("unchecked")
    private static <T extends Throwable> void sneaky(Throwable t) throws T {
        throw (T) t;
    }

    /**
     * A handler may throw a checked exception undeclared (Kotlin, Groovy, Lombok's SneakyThrows). The timer's thread
     * survives it: an entry scheduled afterwards still runs, and nothing piles up in the heap.
     */
    @Test
    void aHandlersUndeclaredCheckedThrowableLeavesTheTimerRunning() throws Exception {
        CountDownLatch ranAfter = new CountDownLatch(1);
        Timer<TimerTest.Entry> timer = new Timer<>("throwing-handler", e -> {
            if (e.name.equals("boom")) {
                sneaky(new java.io.IOException("a handler's checked exception"));
            }
            ranAfter.countDown();
        });
        try {
            timer.schedule(new TimerTest.Entry("boom"), 0);
            Thread.sleep(200); // let the throwing handler run first
            assertTrue(timer.schedule(new TimerTest.Entry("after"), 0), "the timer still accepts entries");
            assertTrue(ranAfter.await(10, TimeUnit.SECONDS),
                    "an entry scheduled after a handler threw a checked exception never ran: the timer thread is dead "
                            + "and " + timer.size() + " entry(ies) wait in its heap for ever");
        } finally {
            timer.shutdownNow();
        }
    }

    /**
     * 20k random schedules, moves (earlier and later) and cancels of 300 entries, all far in the future: after each
     * step every scheduled entry sits in the slot its index names, every unscheduled one has index -1, and each
     * parent is due no later than its children. Then, with the thread waiting for an entry 60 s away, an entry due
     * in 50 ms runs long before it (the wake-up condition on wakesAt does not oversleep it).
     */
    @Test
    void theHeapStaysAHeapAndAnEarlierEntryWakesTheWait() throws Exception {
        CountDownLatch early = new CountDownLatch(1);
        Timer<TimerTest.Entry> timer = new Timer<>("heap-order", e -> {
            if (e.name.equals("early")) {
                early.countDown();
            }
        });
        try {
            java.util.Random r = new java.util.Random(14);
            TimerTest.Entry[] es = new TimerTest.Entry[300];
            for (int i = 0; i < es.length; i++) {
                es[i] = new TimerTest.Entry("e" + i);
            }
            Field heapField = Timer.class.getDeclaredField("heap");
            Field sizeField = Timer.class.getDeclaredField("size");
            heapField.setAccessible(true);
            sizeField.setAccessible(true);
            for (int step = 0; step < 20_000; step++) {
                TimerTest.Entry e = es[r.nextInt(es.length)];
                if (r.nextInt(4) == 0) {
                    timer.cancel(e);
                } else {
                    timer.schedule(e, TimeUnit.SECONDS.toNanos(600) + r.nextInt(1_000_000) * 1000L);
                }
                if (step % 97 == 0 || step > 19_900) {
                    Object[] heap = (Object[]) heapField.get(timer);
                    int size = (int) sizeField.get(timer);
                    for (int i = 0; i < size; i++) {
                        TimerTest.Entry x = (TimerTest.Entry) heap[i];
                        assertEquals(i, x.index, "slot of " + x.name);
                        if (i > 0) {
                            assertTrue(((TimerTest.Entry) heap[(i - 1) / 2]).due - x.due <= 0, "heap order at " + i);
                        }
                    }
                    for (int i = size; i < heap.length; i++) {
                        assertEquals(null, heap[i], "a removed slot is cleared");
                    }
                    int scheduled = 0;
                    for (TimerTest.Entry x : es) {
                        scheduled += x.index >= 0 ? 1 : 0;
                        assertTrue(x.index < 0 || heap[x.index] == x);
                    }
                    assertEquals(size, scheduled);
                }
            }
            timer.schedule(new TimerTest.Entry("far"), TimeUnit.SECONDS.toNanos(60));
            Thread.sleep(200); // the thread now waits for the earliest entry
            timer.schedule(new TimerTest.Entry("early"), TimeUnit.MILLISECONDS.toNanos(50));
            assertTrue(early.await(20, TimeUnit.SECONDS), "an earlier entry woke the timer");
        } finally {
            timer.shutdownNow();
        }
    }
}
