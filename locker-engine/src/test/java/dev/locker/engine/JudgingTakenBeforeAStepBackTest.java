package dev.locker.engine;

import dev.locker.api.TemporaryLockingException;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A clock reading taken before a step back, used or entered late, never makes a live claim look dead. */
class JudgingTakenBeforeAStepBackTest extends JudgingScenario {

    /**
     * A and C run on one host. C reads the wall clock for its read-back; NTP then sets the clock back a minute and A
     * renews its claim before C reads the row. A's renewed claim lives 30 s from the renewal, so C is refused.
     */
    @Test
    void aClaimRenewedAfterAStepBackIsLiveToAReadBackWhoseClockWasReadBeforeIt() {
        ThreadGatedClock cTime = new ThreadGatedClock(clock);
        ConsistentKeyDriver a = driver("a", clock);
        ConsistentKeyDriver c = driver("c", cTime);
        ConsistentKeyClaim[] held = {a.verify(lock, a.write(lock, owner("a"), EXPIRY, null))};
        clock.advance(Duration.ofSeconds(5));
        ConsistentKeyClaim claim = c.write(lock, owner("c"), EXPIRY, null);
        cTime.afterWall(() -> {
            clock.stepWallClock(Duration.ofMinutes(-1));
            held[0] = a.renew(lock, held[0], EXPIRY);
        });
        ConsistentKeyClaim granted = null;
        try {
            granted = c.verify(lock, claim);
        } catch (TemporaryLockingException refused) {
            // A holds: the answer this test wants
        }
        assertTrue(clock.nanoTime() - held[0].deadlineNanos() < 0, "A's renewed claim ran out");
        assertTrue(cTime.allHooksRan(), "the step did not come during the read-back");
        ConsistentKeyClaim grantedToC = granted;
        assertNull(grantedToC, () -> "C was granted token " + grantedToC.fencingToken() + " while A holds token "
                + held[0].fencingToken() + " within its renewed deadline");
    }

    /**
     * A and C run on one host. A listing of C reads its clocks, NTP sets the clock back a minute and C reads them again
     * before the listing's reading reaches the guard. A then takes the lock, and NTP sets the clock forward again. C's
     * read-back sees A's claim live, so C is refused.
     */
    @Test
    void aClaimWrittenWhileTheClockWasSetBackIsLiveToAReadBackAfterTheClockIsSetForward() {
        ThreadGatedClock cTime = new ThreadGatedClock(clock);
        ConsistentKeyDriver a = driver("a", clock);
        ConsistentKeyDriver c = driver("c", cTime);
        clock.advance(Duration.ofSeconds(1));
        cTime.afterNanos(2, () -> { // the listing's reading is taken; its thread is preempted
            clock.stepWallClock(Duration.ofMinutes(-1));
            c.readHolder(lock);
        });
        c.readHolder(lock);
        clock.advance(Duration.ofSeconds(4));
        ConsistentKeyClaim held = a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
        clock.advance(Duration.ofSeconds(1));
        clock.stepWallClock(Duration.ofMinutes(1));
        ConsistentKeyClaim claim = c.write(lock, owner("c"), EXPIRY, null);
        assertTrue(cTime.allHooksRan(), "the step did not come during the read-back");
        assertRefusedWhileHeld(c, claim, held);
    }
}
