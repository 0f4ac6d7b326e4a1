package dev.locker.engine;

import org.junit.jupiter.api.Test;

import java.time.Duration;

/** A claim written while the clock was set back stays live after the clock is set forward, however B read its clocks. */
class StepBackSeenByInexactReadingsTest extends JudgingScenario {

    private static final Duration STEP = Duration.ofMinutes(1);

    /**
     * A and B run on one host. NTP sets the clock back a minute; B reads its clocks once, exactly. A takes the lock,
     * and NTP sets the clock forward again. B's read-back sees A's claim live, so B is refused.
     */
    @Test
    void aClaimWrittenWhileTheClockWasSetBackIsLiveAfterAnExactReadingSawTheStepBack() {
        assertRefusedAfterAStepBackAndItsUndoing(false);
    }

    /**
     * The same, but B's thread is preempted for 1 ms inside each of its clock readings while the clock is set back.
     * B's read-back still sees A's claim live, so B is refused.
     */
    @Test
    void aClaimWrittenWhileTheClockWasSetBackIsLiveAfterInexactReadingsSawTheStepBack() {
        assertRefusedAfterAStepBackAndItsUndoing(true);
    }

    private void assertRefusedAfterAStepBackAndItsUndoing(boolean preempted) {
        ThreadGatedClock bTime = new ThreadGatedClock(clock);
        ConsistentKeyDriver a = driver("a", clock);
        ConsistentKeyDriver b = driver("b", bTime);
        clock.advance(Duration.ofSeconds(1));
        clock.stepWallClock(STEP.negated());
        bTime.wallTakenLate = preempted ? Duration.ofMillis(1) : Duration.ZERO;
        b.readHolder(other);
        bTime.wallTakenLate = Duration.ZERO;
        clock.advance(Duration.ofSeconds(1));
        ConsistentKeyClaim held = a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
        clock.advance(Duration.ofSeconds(1));
        clock.stepWallClock(STEP);
        ConsistentKeyClaim claim = b.write(lock, owner("b"), EXPIRY, null);
        assertRefusedWhileHeld(b, claim, held);
    }
}
