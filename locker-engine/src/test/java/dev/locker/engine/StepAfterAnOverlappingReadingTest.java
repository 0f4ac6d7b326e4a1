package dev.locker.engine;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;

/** A forward step is taken off the claims written before it, whatever readings from before an earlier step entered. */
class StepAfterAnOverlappingReadingTest extends JudgingScenario {

    private final PausedListings listings = new PausedListings(clock);

    @AfterEach
    void endListings() throws InterruptedException {
        listings.close();
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
        PausedListings.Listing listing = preemptedListing ? listings.start(b, bTime, other) : null;
        clock.advance(Duration.ofMillis(5));
        clock.stepWallClock(Duration.ofHours(1));
        b.readHolder(other); // B's main thread reads its clocks exactly: the step is seen
        clock.advance(Duration.ofMillis(5));
        if (preemptedListing) {
            listing.enter(Duration.ZERO);
        }
        ConsistentKeyClaim held = a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
        clock.advance(Duration.ofSeconds(5));
        clock.stepWallClock(Duration.ofMinutes(1));
        ConsistentKeyClaim claim = b.write(lock, owner("b"), EXPIRY, null);
        assertRefusedWhileHeld(b, claim, held);
    }
}
