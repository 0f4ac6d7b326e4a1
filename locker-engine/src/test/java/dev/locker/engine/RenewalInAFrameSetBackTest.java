package dev.locker.engine;

import org.junit.jupiter.api.Test;

import java.time.Duration;

/** A renewal stamped while the clock was set back is judged in that frame once the clock steps forward again. */
class RenewalInAFrameSetBackTest extends JudgingScenario {

    /**
     * A and B run on one host. A takes the lock; 1 s later NTP sets the clock back 10 s, and B sees it. A renews 1 s
     * later, then NTP steps the clock 10 s forward again, and B sees that too. B first reads A's lock 20 s later: A
     * renewed 22 s before, so B is refused.
     */
    @Test
    void aRenewalWrittenWhileTheClockWasSetBackIsJudgedInThatFrameAfterTheClockStepsForwardAgain() {
        ConsistentKeyDriver a = driver("a");
        ConsistentKeyDriver b = driver("b");
        ConsistentKeyClaim held = a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
        clock.advance(Duration.ofSeconds(1));
        b.readHolder(other);
        clock.stepWallClock(Duration.ofSeconds(-10));
        b.readHolder(other); // B reads its clocks exactly: the step back is seen
        clock.advance(Duration.ofSeconds(1));
        ConsistentKeyClaim renewed = a.renew(lock, held, EXPIRY); // its expiry is stamped 10 s below its column's frame
        clock.advance(Duration.ofSeconds(1));
        clock.stepWallClock(Duration.ofSeconds(10));
        b.readHolder(other); // and the step forward that undoes it
        clock.advance(Duration.ofSeconds(20));
        assertRefusedWhileHeld(b, renewed);
    }

    /** The same renewal, with the clock never stepped: B is refused. */
    @Test
    void aRenewalIsJudgedFromItsOwnWriteWhenTheClockNeverSteps() {
        ConsistentKeyDriver a = driver("a");
        ConsistentKeyDriver b = driver("b");
        ConsistentKeyClaim held = a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
        clock.advance(Duration.ofSeconds(2));
        b.readHolder(other);
        ConsistentKeyClaim renewed = a.renew(lock, held, EXPIRY);
        clock.advance(Duration.ofSeconds(21));
        assertRefusedWhileHeld(b, renewed);
    }

    private void assertRefusedWhileHeld(ConsistentKeyDriver b, ConsistentKeyClaim held) {
        ConsistentKeyClaim claim = b.write(lock, owner("b"), EXPIRY, null);
        assertRefusedWhileHeld(b, claim, held);
    }
}
