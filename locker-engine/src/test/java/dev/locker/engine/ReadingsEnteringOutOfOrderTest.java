package dev.locker.engine;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;

/** A forward step is taken off a read-back's judging however its locker's threads' readings enter the guard. */
class ReadingsEnteringOutOfOrderTest extends JudgingScenario {

    private final PausedListings listings = new PausedListings(clock);

    @AfterEach
    void endListings() throws InterruptedException {
        listings.close();
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
        PausedListings.Listing first = pausedListings ? listings.start(b, bTime, other) : null;
        PausedListings.Listing second = pausedListings ? listings.start(b, bTime, other) : null;
        clock.stepWallClock(Duration.ofMinutes(1));
        ConsistentKeyClaim claim = b.write(lock, owner("b"), EXPIRY, null);
        if (pausedListings) {
            ThreadGatedClock.Hooks main = bTime.hooksOf(Thread.currentThread());
            // the read-back's first reading is taken, and the first listing's enters 1 ms later; likewise the second
            main.onNanos.put(3, () -> first.enter(Duration.ofMillis(1)));
            main.onNanos.put(5, () -> second.enter(Duration.ofMillis(1)));
        }
        assertRefusedWhileHeld(b, claim, held);
    }
}
