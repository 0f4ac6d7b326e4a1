package dev.locker.engine;

import dev.locker.api.TemporaryLockingException;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A step back that only one paused reading of B saw is allowed for once the clock steps forward again. */
class StepBackSeenOnlyByALateReadingTest extends JudgingScenario {

    private static final Duration STEP = Duration.ofSeconds(10);

    /**
     * A and B run on one host. B begins a reading and loses its core; another reading of B enters meanwhile. NTP sets
     * the clock back 10 s, A renews, B's paused reading reads the wall clock, and NTP steps it 10 s forward again. 23 s
     * later A still holds, so B is refused.
     */
    @Test
    void aStepBackSeenOnlyByAReadingThatEnteredLateIsAllowedFor() {
        assertRefusedAfterARenewalSetBack(true);
    }

    /** The same without the other reading: the paused reading is surely the latest, and B is refused. */
    @Test
    void aStepBackSeenOnlyByAPausedReadingIsAllowedFor() {
        assertRefusedAfterARenewalSetBack(false);
    }

    private void assertRefusedAfterARenewalSetBack(boolean otherReadingEnters) {
        ThreadGatedClock bTime = new ThreadGatedClock(clock);
        ConsistentKeyDriver a = driver("a", clock);
        ConsistentKeyDriver b = driver("b", bTime);
        ConsistentKeyClaim[] held = {a.verify(lock, a.write(lock, owner("a"), EXPIRY, null))};
        clock.advance(Duration.ofSeconds(1));
        b.readHolder(other);
        bTime.afterNanos(1, () -> { // B's reading took its first monotonic reading, and B loses its core
            clock.advance(Duration.ofMillis(100));
            if (otherReadingEnters) {
                b.readHolder(other); // exact, and entered first: the paused reading is no longer surely the latest
            }
            clock.advance(Duration.ofMillis(100));
            clock.stepWallClock(STEP.negated());
            clock.advance(Duration.ofMillis(100));
            held[0] = a.renew(lock, held[0], EXPIRY); // stamped 10 s below the frame of its column
            clock.advance(Duration.ofMillis(100));
            bTime.afterWall(() -> { // B's paused reading read the wall clock set back
                clock.stepWallClock(STEP);
                clock.advance(Duration.ofMillis(100));
            });
        });
        b.readHolder(other);
        assertTrue(bTime.allHooksRan(), "B's reading was not paused as planned");
        clock.advance(Duration.ofSeconds(23));
        ConsistentKeyClaim claim = b.write(lock, owner("b"), EXPIRY, null);
        ConsistentKeyClaim granted = null;
        try {
            granted = b.verify(lock, claim);
        } catch (TemporaryLockingException refused) {
            // A holds: the answer this test wants
        }
        assertTrue(clock.nanoTime() - held[0].deadlineNanos() < 0, "A's renewed claim ran out");
        ConsistentKeyClaim grantedToB = granted;
        assertNull(grantedToB, () -> "B was granted token " + grantedToB.fencingToken() + " while A holds token "
                + held[0].fencingToken() + " within its renewed deadline");
    }
}
