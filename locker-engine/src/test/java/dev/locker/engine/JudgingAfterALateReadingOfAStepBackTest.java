package dev.locker.engine;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** A judging that enters after a late reading of a step back allows its claims the whole way back up. */
class JudgingAfterALateReadingOfAStepBackTest extends JudgingScenario {

    private static final Duration BACK = Duration.ofSeconds(13);
    private static final Duration FORWARD = Duration.ofSeconds(23);

    private final PausedListings listings = new PausedListings(clock);

    @AfterEach
    void endListings() throws InterruptedException {
        listings.close();
    }

    /**
     * A and B run on one host. NTP sets the clock back 13 s, and A takes the lock in that frame. 17 s on, a listing
     * thread of B reads the clock, still set back, and is preempted; NTP then steps the clock 23 s forward, 10 s above
     * B's first frame, and B reads once. B's read-back takes its first reading; between the read and its second
     * reading, another listing reads the clock and enters, then the preempted listing enters. The second reading
     * overlaps the other listing's. A's claim has 12 s left on A's clock, so B is refused.
     */
    @Test
    void aClaimOfAFrameALateReadingShowedIsAllowedTheWholeForwardStepByAnOverlappingReadingEnteringAfterIt()
            throws Exception {
        assertRefused(true);
    }

    /** With no other listing, the second reading enters in turn after the late one: B is refused. */
    @Test
    void aClaimOfAFrameALateReadingShowedIsAllowedTheWholeForwardStepByAReadingInTurnAfterIt() throws Exception {
        assertRefused(false);
    }

    private void assertRefused(boolean otherListing) throws Exception {
        ThreadGatedClock bTime = new ThreadGatedClock(clock);
        ConsistentKeyDriver a = driver("a", clock);
        ConsistentKeyDriver b = driver("b", bTime);
        b.readHolder(other);
        clock.advance(Duration.ofSeconds(1));
        clock.stepWallClock(BACK.negated());
        clock.advance(Duration.ofMillis(500));
        ConsistentKeyClaim held = a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
        clock.advance(Duration.ofSeconds(17));
        PausedListings.Listing late = listings.start(b, bTime, other); // reads the clock still set back
        clock.advance(Duration.ofMillis(10));
        clock.stepWallClock(FORWARD);
        clock.advance(Duration.ofMillis(10));
        b.readHolder(other); // the guard sees the clock 10 s above its baseline
        ConsistentKeyClaim claim = b.write(lock, owner("b"), EXPIRY, null);
        ThreadGatedClock.Hooks main = bTime.hooksOf(Thread.currentThread());
        boolean[] entered = new boolean[1];
        // the read-back's second reading begins: another listing may read and enter, then the late one enters
        main.onNanos.put(4, () -> {
            if (otherListing) {
                try {
                    listings.start(b, bTime, other).enter(Duration.ofMillis(1));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException(e);
                }
            }
            late.enter(Duration.ofMillis(1));
            entered[0] = true;
        });
        assertRefusedWhileHeld(b, claim, held);
        assertTrue(entered[0] && bTime.allHooksRan(), "the listings did not enter during B's read-back as planned");
    }
}
