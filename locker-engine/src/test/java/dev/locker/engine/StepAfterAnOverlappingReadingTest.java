package dev.locker.engine;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** A forward step is taken off the claims written before it, whatever readings from before an earlier step entered. */
class StepAfterAnOverlappingReadingTest extends JudgingScenario {

    private final List<Thread> threads = new ArrayList<>();
    private final CountDownLatch finish = new CountDownLatch(1);

    @AfterEach
    void tearDown() throws InterruptedException {
        finish.countDown();
        for (Thread t : threads) {
            t.join(5_000);
        }
    }

    /**
     * A and B run on one host. NTP steps the clock an hour forward, and B sees it. A then takes the lock, and 5 s later
     * NTP steps the clock a minute forward. A's claim has 25 s left, so B is refused.
     */
    @Test
    void aSecondForwardStepIsTakenOffAClaimWrittenBetweenTheSteps() throws Exception {
        assertRefusedAfterTwoForwardSteps(false);
    }

    /**
     * The same, but a listing thread of B read the wall clock just before the first step and was preempted for 10 ms
     * (within lockWait/4) before its second monotonic reading. Its reading enters the guard after the step was seen.
     * A's claim has 25 s left, so B is refused.
     */
    @Test
    void aSecondForwardStepIsTakenOffAClaimWrittenBetweenTheStepsAfterAReadingFromBeforeTheFirstEnteredLate()
            throws Exception {
        assertRefusedAfterTwoForwardSteps(true);
    }

    private void assertRefusedAfterTwoForwardSteps(boolean preemptedListing) throws Exception {
        ThreadGatedClock bTime = new ThreadGatedClock(clock);
        ConsistentKeyDriver a = driver("a", clock);
        ConsistentKeyDriver b = driver("b", bTime);
        Listing listing = preemptedListing ? listing(b, bTime) : null;
        clock.advance(Duration.ofMillis(5));
        clock.stepWallClock(Duration.ofHours(1));
        b.readHolder(other); // B's main thread reads its clocks exactly: the step is seen
        clock.advance(Duration.ofMillis(5));
        if (preemptedListing) {
            listing.enter();
        }
        ConsistentKeyClaim held = a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
        clock.advance(Duration.ofSeconds(5));
        clock.stepWallClock(Duration.ofMinutes(1));
        ConsistentKeyClaim claim = b.write(lock, owner("b"), EXPIRY, null);
        assertRefusedWhileHeld(b, claim, held);
    }

    /** A listing thread of B, stopped after its first wall reading, then after its first reading entered the guard. */
    private final class Listing {
        final CountDownLatch wallTaken = new CountDownLatch(1);
        final CountDownLatch resume = new CountDownLatch(1);
        final CountDownLatch entered = new CountDownLatch(1);

        /** Lets the listing take its monotonic reading, and waits until that reading entered the guard. */
        void enter() {
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
