package dev.locker.engine;

import dev.locker.api.KeyColumn;
import dev.locker.testkit.VirtualClock;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Listing threads of one locker, each stopped right after its first wall reading until the test lets it go on, then
 * held once that reading entered the guard until the test ends: readings that enter the guard late, in a chosen order.
 */
final class PausedListings implements AutoCloseable {

    private final VirtualClock clock;
    private final List<Thread> threads = new ArrayList<>();
    private final CountDownLatch finish = new CountDownLatch(1);

    PausedListings(VirtualClock clock) {
        this.clock = clock;
    }

    /** A listing of {@code lock} by {@code locker}, which reads {@code time}, stopped after its wall reading. */
    Listing start(ConsistentKeyDriver locker, ThreadGatedClock time, KeyColumn lock) throws InterruptedException {
        Listing l = new Listing();
        Thread t = new Thread(() -> {
            ThreadGatedClock.Hooks hooks = time.hooksOf(Thread.currentThread());
            hooks.onWall = () -> {
                l.wallTaken.countDown();
                await(l.resume);
            };
            hooks.onNanos.put(3, () -> { // the second reading begins: the first one entered
                l.entered.countDown();
                await(finish);
            });
            locker.readHolder(lock);
        });
        threads.add(t);
        t.start();
        assertTrue(l.wallTaken.await(5, TimeUnit.SECONDS), "the listing did not read the wall clock");
        return l;
    }

    /** Lets every listing end, and waits for them. */
    @Override
    public void close() throws InterruptedException {
        finish.countDown();
        for (Thread t : threads) {
            t.join(5_000);
        }
    }

    /** One listing thread. */
    final class Listing {
        private final CountDownLatch wallTaken = new CountDownLatch(1);
        private final CountDownLatch resume = new CountDownLatch(1);
        private final CountDownLatch entered = new CountDownLatch(1);

        /** Lets the listing take its monotonic reading {@code later} on, and waits until that reading entered. */
        void enter(Duration later) {
            clock.advance(later);
            resume.countDown();
            await(entered);
        }
    }

    private static void await(CountDownLatch latch) {
        try {
            if (!latch.await(5, TimeUnit.SECONDS)) {
                throw new IllegalStateException("a gate of the test did not open");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
