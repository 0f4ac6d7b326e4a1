package dev.locker.engine;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** An exact reading that enters after a newer paused reading is not learnt as the clock's latest state. */
class ExactReadingEnteringAfterANewerOneTest extends JudgingScenario {


    private final PausedListings listings = new PausedListings(clock);
    private final CountDownLatch finish = new CountDownLatch(1);
    private Thread stale;

    @AfterEach
    void endThreads() throws InterruptedException {
        finish.countDown();
        if (stale != null) {
            stale.join(5_000);
        }
        listings.close();
    }

    /**
     * A and B run on one host. A listing thread of B reads its clocks exactly and is preempted before it enters the
     * guard. NTP sets the clock back 7 s; another listing of B reads the clock set back, paused 200 ms, and enters.
     * Then the preempted listing enters. 8 s on, A takes the lock; NTP then steps the clock 12 s forward, 5 s above
     * the first frame, and B reads once. 23.5 s after A's write, A holds, so B is refused.
     */
    @Test
    void aClaimWrittenAfterAStaleExactReadingEnteredIsAllowedTheWholeForwardStep() throws Exception {
        assertRefused(true, Duration.ZERO, Duration.ofSeconds(-7), Duration.ofSeconds(12), Duration.ofMillis(22_490));
    }

    /** The same with the exact reading entering in turn, before the paused one: B is refused. */
    @Test
    void aClaimWrittenAfterAnExactReadingEnteredInTurnIsAllowedTheWholeForwardStep() throws Exception {
        assertRefused(false, Duration.ZERO, Duration.ofSeconds(-7), Duration.ofSeconds(12), Duration.ofMillis(22_490));
    }

    /**
     * NTP steps the clock 16 s forward, and the listing reads it exactly and is preempted; NTP then sets it back 4 s.
     * The paused listing reads 12 s above B's baseline, so it proves no step back. The preempted listing enters: the
     * guard takes the clock for 16 s above. 8 s on, A takes the lock; NTP steps the clock 20 s forward, and B reads.
     * 26.5 s after A's write, A holds, so B is refused.
     */
    @Test
    void aClaimWrittenAfterAStaleExactReadingOfAFrameLeftSinceIsAllowedTheWholeForwardStep() throws Exception {
        assertRefused(true, Duration.ofSeconds(16), Duration.ofSeconds(-4), Duration.ofSeconds(20),
                Duration.ofMillis(25_490));
    }

    /** The same with the exact reading entering in turn, before the paused one: B is refused. */
    @Test
    void aClaimWrittenAfterAnExactReadingOfAFrameLeftSinceEnteredInTurnIsAllowedTheWholeForwardStep()
            throws Exception {
        assertRefused(false, Duration.ofSeconds(16), Duration.ofSeconds(-4), Duration.ofSeconds(20),
                Duration.ofMillis(25_490));
    }

    private void assertRefused(boolean entersLate, Duration first, Duration second, Duration forward, Duration wait)
            throws Exception {
        ThreadGatedClock bTime = new ThreadGatedClock(clock);
        ConsistentKeyDriver a = driver("a", clock);
        ConsistentKeyDriver b = driver("b", bTime);
        b.readHolder(other);
        clock.advance(Duration.ofSeconds(1));
        clock.stepWallClock(first);
        CountDownLatch taken = new CountDownLatch(1);
        CountDownLatch resume = new CountDownLatch(1);
        CountDownLatch entered = new CountDownLatch(1);
        stale = new Thread(() -> {
            ThreadGatedClock.Hooks hooks = bTime.hooksOf(Thread.currentThread());
            hooks.onNanos.put(2, () -> { // its reading is taken, exactly: it is preempted before entering the guard
                taken.countDown();
                await(resume);
            });
            hooks.onNanos.put(3, () -> { // the second reading begins: the first one entered
                entered.countDown();
                await(finish);
            });
            b.readHolder(other);
        });
        stale.start();
        assertTrue(taken.await(5, TimeUnit.SECONDS), "the stale listing did not take its reading");
        if (!entersLate) {
            resume.countDown();
            assertTrue(entered.await(5, TimeUnit.SECONDS), "the stale listing did not enter");
        }
        clock.advance(Duration.ofMillis(10));
        clock.stepWallClock(second);
        clock.advance(Duration.ofMillis(10));
        listings.start(b, bTime, other).enter(Duration.ofMillis(200)); // a paused reading, newer than the exact one
        if (entersLate) {
            resume.countDown();
            assertTrue(entered.await(5, TimeUnit.SECONDS), "the stale listing did not enter");
        }
        clock.advance(Duration.ofSeconds(8));
        ConsistentKeyClaim held = a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
        clock.advance(Duration.ofSeconds(1));
        clock.stepWallClock(forward);
        clock.advance(Duration.ofMillis(10));
        b.readHolder(other); // the guard sees the forward step
        clock.advance(wait);
        assertRefusedWhileHeld(b, b.write(lock, owner("b"), EXPIRY, null), held);
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
