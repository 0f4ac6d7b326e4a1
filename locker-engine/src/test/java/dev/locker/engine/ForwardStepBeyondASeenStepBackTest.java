package dev.locker.engine;

import org.junit.jupiter.api.Test;

import java.time.Duration;

/** A forward step beyond a step back the guard saw is taken off claims written before the step back. */
class ForwardStepBeyondASeenStepBackTest extends JudgingScenario {

    /** A and B run on one host. A takes the lock; 2 s later NTP steps the clock 60 s forward. B is refused. */
    @Test
    void aForwardStepIsTakenOffAClaimWrittenBeforeIt() {
        ConsistentKeyDriver a = driver("a");
        ConsistentKeyDriver b = driver("b");
        ConsistentKeyClaim held = a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
        clock.advance(Duration.ofSeconds(1));
        b.readHolder(other);
        clock.advance(Duration.ofSeconds(1));
        clock.stepWallClock(Duration.ofSeconds(60));
        assertRefusedWhileHeld(b, held);
    }

    /**
     * The same 60 s net, in two steps B sees: 1 s after A takes the lock the clock is set back 10 s, and 1 s later
     * forward 70 s. B first reads the lock row after both; A's claim has 27 s left, so B is refused.
     */
    @Test
    void aForwardStepBeyondASeenStepBackIsTakenOffAClaimWrittenBeforeTheStepBack() {
        ConsistentKeyDriver a = driver("a");
        ConsistentKeyDriver b = driver("b");
        ConsistentKeyClaim held = a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
        clock.advance(Duration.ofSeconds(1));
        b.readHolder(other);
        clock.stepWallClock(Duration.ofSeconds(-10));
        b.readHolder(other); // B reads its clocks exactly: the step back is seen
        clock.advance(Duration.ofSeconds(1));
        clock.stepWallClock(Duration.ofSeconds(70));
        assertRefusedWhileHeld(b, held);
    }

    private void assertRefusedWhileHeld(ConsistentKeyDriver b, ConsistentKeyClaim held) {
        ConsistentKeyClaim claim = b.write(lock, owner("b"), EXPIRY, null);
        assertRefusedWhileHeld(b, claim, held);
    }
}
