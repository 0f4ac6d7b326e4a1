package dev.locker.engine;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** A forward step is taken off a read-back's judging however its locker's threads' readings enter the guard. */
class ReadingsEnteringOutOfOrderTest extends JudgingScenario {

    private final List<Thread> threads = new ArrayList<>();
    private final CountDownLatch finish = new CountDownLatch(1);

    @AfterEach
    void tearDown() throws InterruptedException {
        finish.countDown();
        for (Thread t : threads) {
            t.join(5_000);
        }
    }

    /** A and B run on one host. NTP steps the clock a minute forward; A's claim has 25 s left, so B is refused. */
    @Test
    void aForwardStepIsTakenOffWhenTheReadBacksReadingsEnterInOrder() throws Exception {
        assertRefusedAfterAForwardStep(false);
    }

    /**
     * The same, but two listing threads of B read the wall clock and are preempted before the step. B's read-back
     * takes both its readings after the step, and each enters the guard after one of the listings' readings, taken
     * later on the monotonic clock, entered. A's claim has 25 s left, so B is refused.
     */
    @Test
    void aForwardStepIsTakenOffWhenTheReadBacksReadingsEnterAfterPausedReadingsFromBeforeTheStep() throws Exception {
        assertRefusedAfterAForwardStep(true);
    }

    private void assertRefusedAfterAForwardStep(boolean pausedListings) throws Exception {
        ThreadGatedClock bTime = new ThreadGatedClock(clock);
        ConsistentKeyDriver a = driver("a", clock);
        ConsistentKeyDriver b = driver("b", bTime);
        ConsistentKeyClaim held = a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
        clock.advance(Duration.ofSeconds(5));
        Listing first = pausedListings ? listing(b, bTime) : null;
        Listing second = pausedListings ? listing(b, bTime) : null;
        clock.stepWallClock(Duration.ofMinutes(1));
        ConsistentKeyClaim claim = b.write(lock, owner("b"), EXPIRY, null);
        if (pausedListings) {
            ThreadGatedClock.Hooks main = bTime.hooksOf(Thread.currentThread());
            main.onNanos.put(3, first::enter);  // the read-back's first reading is taken; the first listing's enters
            main.onNanos.put(5, second::enter); // the read-back's second reading is taken; the second listing's enters
        }
        assertRefusedWhileHeld(b, claim, held);
    }

    /** A listing thread of B, stopped after its first wall reading, then after its first reading entered the guard. */
    private final class Listing {
        final CountDownLatch wallTaken = new CountDownLatch(1);
        final CountDownLatch resume = new CountDownLatch(1);
        final CountDownLatch entered = new CountDownLatch(1);

        /** Lets the listing take its monotonic reading 1 ms on, and waits until that reading entered the guard. */
        void enter() {
            clock.advance(Duration.ofMillis(1));
            resume.countDown();
            await(entered);
        }
    }

    private Listing listing(ConsistentKeyDriver b, ThreadGatedClock bTime) throws InterruptedException {
        Listing l = new Listing();
        Thread t = new Thread(() -> {
            ThreadGatedClock.Hooks hooks = bTime.hooksOf(Thread.currentThread());
            hooks.onWall = () -> {
                l.wallTaken.countDown();
                await(l.resume);
            };
            hooks.onNanos.put(3, () -> { // the second reading begins: the first one entered
                l.entered.countDown();
                await(finish);
            });
            b.readHolder(other);
        });
        threads.add(t);
        t.start();
        assertTrue(l.wallTaken.await(5, TimeUnit.SECONDS), "the listing did not read the wall clock");
        return l;
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
