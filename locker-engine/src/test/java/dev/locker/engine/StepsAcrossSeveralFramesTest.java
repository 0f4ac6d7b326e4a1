package dev.locker.engine;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** A claim written before several steps back and forward is judged by what the clock moved above its frame. */
class StepsAcrossSeveralFramesTest extends JudgingScenario {

    /**
     * A and B run on one host; A takes the lock. NTP sets the clock back 10 s twice, then forward 5 s and 40 s, and B
     * reads its clocks after each step. The clock ends 25 s above A's frame; 6 s after A's write, A holds, so B is
     * refused.
     */
    @Test
    void aClaimWrittenBeforeTwoStepsBackAndTwoForwardIsJudgedByTheNetStepAboveItsFrame() {
        assertRefused(List.of(-10, -10, 5, 40));
    }

    /** The same with the steps forward first: the clock ends 25 s above A's frame, and B is refused. */
    @Test
    void aClaimWrittenBeforeTwoStepsForwardAndTwoBackIsJudgedByTheNetStepAboveItsFrame() {
        assertRefused(List.of(40, 5, -10, -10));
    }

    /** Back 20 s, forward 15 s, back 20 s, forward 50 s: the clock ends 25 s above A's frame, and B is refused. */
    @Test
    void aClaimWrittenBeforeAlternatingStepsIsJudgedByTheNetStepAboveItsFrame() {
        assertRefused(List.of(-20, 15, -20, 50));
    }

    /**
     * Eighteen steps back of 2 s, 200 ms apart, and one forward of 61 s: the guard keeps 16 frames, so the oldest merge.
     * The clock ends 25 s above A's frame, and B is refused.
     */
    @Test
    void aClaimWrittenBeforeMoreStepsBackThanFramesKeptIsJudgedByTheNetStepAboveItsFrame() {
        assertRefused(stepsBack(18, 61));
    }

    /** Sixteen steps back of 2 s and one forward of 57 s: every frame is kept, and B is refused. */
    @Test
    void aClaimWrittenBeforeAsManyStepsBackAsFramesKeptIsJudgedByTheNetStepAboveItsFrame() {
        assertRefused(stepsBack(16, 57));
    }

    private static List<Integer> stepsBack(int count, int forwardSeconds) {
        List<Integer> steps = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            steps.add(-2);
        }
        steps.add(forwardSeconds);
        return steps;
    }

    private void assertRefused(List<Integer> stepSeconds) {
        ConsistentKeyDriver a = driver("a");
        ConsistentKeyDriver b = driver("b");
        b.readHolder(other);
        ConsistentKeyClaim held = a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
        for (int s : stepSeconds) {
            clock.advance(Duration.ofMillis(200));
            clock.stepWallClock(Duration.ofSeconds(s));
            clock.advance(Duration.ofMillis(10));
            b.readHolder(other); // B reads its clocks exactly after each step
        }
        clock.advance(Duration.ofSeconds(6));
        ConsistentKeyClaim claim = b.write(lock, owner("b"), EXPIRY, null);
        assertRefusedWhileHeld(b, claim, held);
    }
}
