package dev.locker.engine;

import dev.locker.api.TemporaryLockingException;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A claim written between two forward steps gets the second one taken off, however the guard's readings fall. */
class ClaimWrittenBetweenTwoForwardStepsTest extends JudgingScenario {

    /**
     * A and B run on one host. The clock steps 10 s forward, A takes the lock, and the clock steps 10 s forward again;
     * B reads no clock between the two steps, but reads it right after the second. B first reads A's lock 21 s after
     * A took it: A holds, so B is refused.
     */
    @Test
    void aClaimWrittenBetweenTwoForwardStepsReadTogetherGetsTheSecondTakenOff() {
        assertRefusedAfterTwoSteps(false);
    }

    /** The same with B reading its clocks between the two steps: B is refused. */
    @Test
    void aClaimWrittenBetweenTwoForwardStepsReadApartGetsTheSecondTakenOff() {
        assertRefusedAfterTwoSteps(true);
    }

    private void assertRefusedAfterTwoSteps(boolean readBetween) {
        ConsistentKeyDriver a = driver("a");
        ConsistentKeyDriver b = driver("b");
        clock.advance(Duration.ofSeconds(1));
        b.readHolder(other);
        clock.advance(Duration.ofSeconds(1));
        clock.stepWallClock(Duration.ofSeconds(10));
        if (readBetween) {
            b.readHolder(other);
        }
        clock.advance(Duration.ofSeconds(1));
        ConsistentKeyClaim held = a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
        clock.advance(Duration.ofSeconds(1));
        clock.stepWallClock(Duration.ofSeconds(10));
        clock.advance(Duration.ofSeconds(1));
        b.readHolder(other); // B reads its clocks exactly, once, after both steps
        clock.advance(Duration.ofSeconds(19));
        ConsistentKeyClaim claim = b.write(lock, owner("b"), EXPIRY, null);
        ConsistentKeyClaim granted = null;
        try {
            granted = b.verify(lock, claim);
        } catch (TemporaryLockingException refused) {
            // A holds: the answer this test wants
        }
        assertTrue(clock.nanoTime() - held.deadlineNanos() < 0, "A's claim ran out");
        ConsistentKeyClaim grantedToB = granted;
        assertNull(grantedToB, () -> "B was granted token " + grantedToB.fencingToken() + " while A holds token "
                + held.fencingToken() + " within its deadline");
    }
}
