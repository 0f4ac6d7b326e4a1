package dev.locker.engine;

import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** More forward steps than the guard keeps apart are all taken off the claims written before them, and no later one. */
class ManyForwardStepsTest extends JudgingScenario {

    private static final int STEPS = WallStepGuard.Steps.MOST + 100;
    private static final Duration STEP = Duration.ofMillis(60);

    /**
     * A and B run on one host. A takes the lock, then the clock steps 60 ms forward 1,124 times, 67 s in all, each
     * seen by B. B first reads A's lock 10 s after A took it: A holds, so B is refused.
     */
    @Test
    void aClaimWrittenBeforeMoreStepsThanTheGuardKeepsApartGetsThemAllTakenOff() {
        ConsistentKeyDriver a = driver("a");
        ConsistentKeyDriver b = driver("b");
        b.readHolder(other);
        ConsistentKeyClaim held = a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
        takeSteps(b);
        clock.advance(Duration.ofSeconds(10));
        ConsistentKeyClaim claim = b.write(lock, owner("b"), EXPIRY, null);
        assertRefusedWhileHeld(b, claim, held);
    }

    /** The same steps, then A takes a 30 s claim a minute later and crashes: 31 s after, the claim is free. */
    @Test
    void aClaimWrittenAMinuteAfterManyStepsIsFreeOnceItsTimeRanOut() {
        ConsistentKeyDriver a = driver("a");
        ConsistentKeyDriver b = driver("b");
        b.readHolder(other);
        takeSteps(b);
        clock.advance(Duration.ofMinutes(1));
        a.verify(lock, a.write(lock, owner("a"), EXPIRY, null)); // and A crashes: it never renews or releases
        clock.advance(Duration.ofSeconds(31));
        assertTrue(b.readHolder(lock).isEmpty(), "A's 30 s claim, written 31 s before, is judged live by B");
    }

    private void takeSteps(ConsistentKeyDriver b) {
        for (int i = 0; i < STEPS; i++) {
            clock.advance(Duration.ofMillis(1));
            clock.stepWallClock(STEP);
            b.readHolder(other); // exact: each step is seen on its own
        }
    }
}
