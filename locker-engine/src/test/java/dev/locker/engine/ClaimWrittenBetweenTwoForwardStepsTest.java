package dev.locker.engine;

import org.junit.jupiter.api.Test;

import java.time.Duration;

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
        assertRefusedWhileHeld(b, claim, held);
    }
}
