package dev.locker.engine;

import org.junit.jupiter.api.Test;

import java.time.Duration;

/** A step back far larger than a pause inside B's clock readings is followed, so its undoing is seen. */
class StepBackSeenByPausedReadingsTest extends JudgingScenario {

    private static final Duration STEP = Duration.ofMinutes(1);

    /** B's thread loses its core for 20 ms after each wall reading while the clock is set back: B is refused. */
    @Test
    void aClaimWrittenWhileTheClockWasSetBackIsLiveAfterReadingsPausedWithinAQuarterLockWaitSawTheStepBack() {
        assertRefusedAfterAStepBackAndItsUndoing(Duration.ofMillis(20));
    }

    /**
     * A and B run on one host. NTP sets the clock back a minute; B's thread loses its core for 30 ms (a GC) after each
     * wall reading meanwhile. A takes the lock, and NTP sets the clock forward again. A's claim has 28 s left, so B is
     * refused: each reading proves the clock a minute behind, whatever the 30 ms pause hides.
     */
    @Test
    void aClaimWrittenWhileTheClockWasSetBackIsLiveAfterReadingsPausedBeyondAQuarterLockWaitSawTheStepBack() {
        assertRefusedAfterAStepBackAndItsUndoing(Duration.ofMillis(30));
    }

    private void assertRefusedAfterAStepBackAndItsUndoing(Duration pause) {
        ThreadGatedClock bTime = new ThreadGatedClock(clock);
        ConsistentKeyDriver a = driver("a", clock);
        ConsistentKeyDriver b = driver("b", bTime);
        clock.advance(Duration.ofSeconds(1));
        clock.stepWallClock(STEP.negated());
        bTime.wallReturnedLate = pause;
        b.readHolder(other);
        bTime.wallReturnedLate = Duration.ZERO;
        clock.advance(Duration.ofSeconds(1));
        ConsistentKeyClaim held = a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
        clock.advance(Duration.ofSeconds(1));
        clock.stepWallClock(STEP);
        ConsistentKeyClaim claim = b.write(lock, owner("b"), EXPIRY, null);
        assertRefusedWhileHeld(b, claim, held);
    }
}
