package dev.locker.engine;

import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** A forward step taken after a step back is not taken off claims written well after it, in the lower frame. */
class ForwardStepAfterAStepBackTest extends JudgingScenario {

    /**
     * A and B run on one host. NTP steps the clock 10 s forward, then an hour back, then 20 s forward; B sees each
     * step. A minute later A takes a 30 s claim and crashes. 41 s after A wrote it, the claim is free: only the first
     * step, from the frame an hour ahead whose times A's claim could carry, may be taken off it.
     */
    @Test
    void aClaimWrittenAMinuteAfterAForwardStepThatFollowedAStepBackIsFreeOnceItsTimeRanOut() {
        assertFreeAfterTheSteps(Duration.ofHours(-1), Duration.ofSeconds(41));
    }

    /** The same two forward steps with no step back between them: 31 s after A wrote it, the claim is free. */
    @Test
    void aClaimWrittenAMinuteAfterTwoForwardStepsIsFreeOnceItsTimeRanOut() {
        assertFreeAfterTheSteps(Duration.ZERO, Duration.ofSeconds(31));
    }

    private void assertFreeAfterTheSteps(Duration back, Duration lookAfter) {
        ConsistentKeyDriver a = driver("a");
        ConsistentKeyDriver b = driver("b");
        clock.advance(Duration.ofSeconds(1));
        b.readHolder(other);
        clock.stepWallClock(Duration.ofSeconds(10));
        b.readHolder(other);
        clock.advance(Duration.ofSeconds(1));
        clock.stepWallClock(back);
        b.readHolder(other);
        clock.advance(Duration.ofSeconds(1));
        clock.stepWallClock(Duration.ofSeconds(20));
        b.readHolder(other);
        clock.advance(Duration.ofMinutes(1));
        a.verify(lock, a.write(lock, owner("a"), EXPIRY, null)); // and A crashes: it never renews or releases
        clock.advance(lookAfter);
        assertTrue(b.readHolder(lock).isEmpty(), () -> "A's 30 s claim, written " + lookAfter.plus(LOCK_WAIT)
                + " before, a minute after the last step, is judged live by B");
    }
}
