package dev.locker.engine;

import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** A late reading of a step back already undone does not make a later forward step look short for today's claims. */
class ForwardStepAfterALateReadOfAnUndoneStepBackTest extends JudgingScenario {

    private static final Duration BACK = Duration.ofSeconds(10);
    private static final Duration FORWARD = Duration.ofSeconds(20);

    /**
     * B's reading after a read takes its wall reading while NTP has the clock 10 s back; NTP undoes that 5 ms later.
     * Another reading of B enters first, so the first one enters late. 4 s on, A takes the lock; 0.6 s later the
     * clock steps 20 s forward, and B reads once. 27 s later A still holds, so B is refused.
     */
    @Test
    void aForwardStepSoonAfterALateReadingOfAnUndoneStepBackIsTakenOffClaimsWrittenBetween() {
        assertRefusedAfterAForwardStep(true);
    }

    /** The same, with the reading that saw the step back entering in turn: B is refused. */
    @Test
    void aForwardStepSoonAfterAReadingOfAnUndoneStepBackIsTakenOffClaimsWrittenBetween() {
        assertRefusedAfterAForwardStep(false);
    }

    /** The same, with a reading of B between the undoing and the forward step: the guard is back up, B is refused. */
    @Test
    void aForwardStepAfterAReadingInTheFrameRestoredIsTakenOffClaimsWrittenBefore() {
        assertRefusedAfterAForwardStep(true, true);
    }

    private void assertRefusedAfterAForwardStep(boolean otherReadingEnters) {
        assertRefusedAfterAForwardStep(otherReadingEnters, false);
    }

    private void assertRefusedAfterAForwardStep(boolean otherReadingEnters, boolean readingBeforeTheStep) {
        ThreadGatedClock bTime = new ThreadGatedClock(clock);
        ConsistentKeyDriver a = driver("a", clock);
        ConsistentKeyDriver b = driver("b", bTime);
        b.readHolder(other);
        clock.advance(Duration.ofSeconds(1));
        bTime.afterNanos(3, () -> { // the monotonic reading before B's wall reading after its read
            clock.advance(Duration.ofMillis(10));
            clock.stepWallClock(BACK.negated());
            bTime.afterWall(() -> { // B read the clock set back; NTP undoes the step at once
                clock.stepWallClock(BACK);
                clock.advance(Duration.ofMillis(5));
                if (otherReadingEnters) {
                    bTime.afterNanos(1, () -> b.readHolder(other)); // enters before the reading that saw the step back
                }
            });
        });
        b.readHolder(other);
        assertTrue(bTime.allHooksRan(), "B's reading was not made late as planned");
        clock.advance(Duration.ofSeconds(2));
        if (readingBeforeTheStep) {
            b.readHolder(other); // the clock is back in its former frame: a step forward for the guard
        }
        clock.advance(Duration.ofSeconds(2));
        ConsistentKeyClaim held = a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
        clock.advance(Duration.ofMillis(500));
        clock.stepWallClock(FORWARD);
        clock.advance(Duration.ofMillis(100));
        b.readHolder(other); // B sees the forward step soon after it
        clock.advance(Duration.ofSeconds(27));
        assertRefusedWhileHeld(b, b.write(lock, owner("b"), EXPIRY, null), held);
    }
}
