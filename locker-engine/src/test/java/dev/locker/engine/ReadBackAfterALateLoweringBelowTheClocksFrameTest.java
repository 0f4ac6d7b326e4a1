package dev.locker.engine;

import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** A claim of a frame set back stays live for a read-back after a late reading lowered the baseline below the clock. */
class ReadBackAfterALateLoweringBelowTheClocksFrameTest extends JudgingScenario {

    /**
     * A and B run on one host. B's listing reads the clock 40 s set back and is preempted; meanwhile A claims the lock
     * in that frame, NTP steps the clock 45 s forward, and another thread of B learns the +5 s. The listing then
     * enters and lowers B's baseline to the frame the clock has left. NTP steps 30 s further, B learns it and claims
     * the lock: A's claim has 25 s left on A's clock, so B is refused.
     */
    @Test
    void aClaimOfTheFrameSetBackIsRefusedToAClaimantAfterALateReadingLowersTheBaselineAndTheClockStepsOn() {
        ThreadGatedClock bTime = new ThreadGatedClock(clock);
        ConsistentKeyDriver a = driver("a", clock);
        ConsistentKeyDriver b = driver("b", bTime);
        b.readHolder(other);
        clock.advance(Duration.ofSeconds(1));
        clock.stepWallClock(Duration.ofSeconds(-40));
        ConsistentKeyClaim[] held = new ConsistentKeyClaim[1];
        bTime.afterWall(() -> {
            clock.advance(Duration.ofSeconds(1));
            held[0] = a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
            clock.advance(Duration.ofSeconds(1));
            clock.stepWallClock(Duration.ofSeconds(45));
            clock.advance(Duration.ofSeconds(1));
            readOnAnotherThread(b); // an exact reading, in turn: it learns the +5 s
            clock.advance(Duration.ofSeconds(1));
        });
        b.readHolder(other); // the listing preempted after its wall reading enters last
        clock.advance(Duration.ofSeconds(1));
        clock.stepWallClock(Duration.ofSeconds(30));
        clock.advance(Duration.ofSeconds(1));
        b.readHolder(other);
        clock.advance(Duration.ofSeconds(1));
        assertTrue(held[0] != null && bTime.allHooksRan(), "A's claim and the readings did not come as planned");
        assertRefusedWhileHeld(b, b.write(lock, owner("b"), EXPIRY, null), held[0]);
    }

    /** Another thread of B reads a row: it reads the clocks at once. */
    private void readOnAnotherThread(ConsistentKeyDriver b) {
        Thread reader = new Thread(() -> b.readHolder(other));
        reader.start();
        try {
            reader.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
