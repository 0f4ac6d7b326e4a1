package dev.locker.engine;

import dev.locker.api.TemporaryLockingException;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/** A forward step that a read's clock readings straddle is taken off a claim's first sight once, never twice. */
class ForwardStepDuringAReadTest extends JudgingScenario {

    private static final Duration STEP = Duration.ofHours(1);

    /** A holds the lock and dies; 40 s later the wall clock steps an hour forward. B takes the lock a second after. */
    @Test
    void aDeadClaimFirstSeenAfterAForwardStepIsJudgedDeadInTheOldFrame() {
        ConsistentKeyDriver a = driver("a", clock);
        ConsistentKeyDriver b = driver("b", clock);
        a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
        clock.advance(Duration.ofSeconds(40));
        clock.stepWallClock(STEP);
        b.readHolder(lock);
        clock.advance(Duration.ofSeconds(1));
        assertGranted(b, "dead for 11 s");
    }

    /**
     * A holds the lock and dies. 40 s later B looks at the lock: its wall clock steps an hour forward between its
     * first clock reading and the read. A's claim, dead for 10 s, is granted to B a second later.
     */
    @Test
    void aDeadClaimFirstSeenInAReadThatAForwardStepInterruptedIsNotKeptAliveForTheStep() {
        ThreadGatedClock bTime = new ThreadGatedClock(clock);
        ConsistentKeyDriver a = driver("a", clock);
        ConsistentKeyDriver b = driver("b", bTime);
        a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
        clock.advance(Duration.ofSeconds(40));
        bTime.afterNanos(2, () -> clock.stepWallClock(STEP)); // after the first reading, before the read
        b.readHolder(lock);
        assertTrue(bTime.allHooksRan(), "the step did not come during the read");
        clock.advance(Duration.ofSeconds(1));
        assertGranted(b, "dead for 11 s");
    }

    /**
     * The same, with two threads of B: the listing's first reading is taken before the step but enters the guard after
     * another thread's reading that recorded the step. A's dead claim is granted to B a second later.
     */
    @Test
    void aDeadClaimFirstSeenByAReadingThatEnteredAfterAForwardStepWasRecordedIsNotKeptAliveForTheStep() {
        ThreadGatedClock bTime = new ThreadGatedClock(clock);
        ConsistentKeyDriver a = driver("a", clock);
        ConsistentKeyDriver b = driver("b", bTime);
        a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
        clock.advance(Duration.ofSeconds(40));
        bTime.afterNanos(2, () -> { // the listing's reading is taken; its thread is preempted
            clock.advance(Duration.ofMillis(1));
            clock.stepWallClock(STEP);
            b.readHolder(other); // another thread of B: its reading enters first and records the step
        });
        b.readHolder(lock);
        assertTrue(bTime.allHooksRan(), "the step did not come during the read");
        clock.advance(Duration.ofSeconds(1));
        assertGranted(b, "dead for 11 s");
    }

    private void assertGranted(ConsistentKeyDriver b, String howDead) {
        ConsistentKeyClaim claim = b.write(lock, owner("b"), EXPIRY, null);
        try {
            b.verify(lock, claim);
        } catch (TemporaryLockingException refused) {
            fail("B was refused by A's claim, " + howDead + ", judged to live " + refused.holderExpiresIn().orElse(null)
                    + " more: " + refused.getMessage());
        }
    }
}
