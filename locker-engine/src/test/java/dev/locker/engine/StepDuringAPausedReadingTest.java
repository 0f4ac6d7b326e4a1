package dev.locker.engine;

import dev.locker.api.TemporaryLockingException;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A forward step undoing a step back seen by a paused reading is taken in full off claims of the lower frame. */
class StepDuringAPausedReadingTest extends JudgingScenario {

    /**
     * A and B run on one host. B's read is preempted for a second after its first monotonic reading; meanwhile NTP sets
     * the clock back a minute and A takes the lock. During B's read NTP sets the clock a minute forward again. 29.3 s
     * after A's write, A holds, so B is refused.
     */
    @Test
    void aForwardStepDuringAReadIsTakenInFullOffAClaimWrittenAfterAStepBackAPausedReadingSaw() {
        assertRefused(Duration.ofSeconds(1));
    }

    /**
     * The same with B preempted for 10 ms: with A's write its reading spans 110 ms, so the baseline stands 110 ms above
     * the clock, within the margin A keeps back, and B is refused.
     */
    @Test
    void aForwardStepDuringAReadIsTakenOffAClaimWrittenAfterAStepBackAShortlyPausedReadingSaw() {
        assertRefused(Duration.ofMillis(10));
    }

    private void assertRefused(Duration pause) {
        ThreadGatedClock bTime = new ThreadGatedClock(clock);
        ConsistentKeyDriver a = driver("a", clock);
        ConsistentKeyDriver b = driver("b", bTime);
        clock.advance(Duration.ofSeconds(1));
        b.readHolder(other);
        clock.advance(Duration.ofSeconds(1));
        ConsistentKeyClaim[] held = new ConsistentKeyClaim[1];
        long[] writeStarted = new long[1];
        bTime.afterNanos(1, () -> { // B's read is preempted after its first monotonic reading
            clock.advance(pause);
            clock.stepWallClock(Duration.ofMinutes(-1));
            writeStarted[0] = clock.nanoTime();
            held[0] = a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
        });
        bTime.afterNanos(3, () -> clock.stepWallClock(Duration.ofMinutes(1))); // after the row read, before the wall reading
        b.readHolder(other);
        assertTrue(bTime.allHooksRan(), "the steps did not come during the read");
        clock.advance(Duration.ofMillis(29_300).minusNanos(clock.nanoTime() - writeStarted[0]));
        ConsistentKeyClaim claim = b.write(lock, owner("b"), EXPIRY, null);
        ConsistentKeyClaim granted = null;
        try {
            granted = b.verify(lock, claim);
        } catch (TemporaryLockingException refused) {
            // A holds: the answer this test wants
        }
        assertTrue(clock.nanoTime() - held[0].deadlineNanos() < 0, "A's claim ran out");
        ConsistentKeyClaim grantedToB = granted;
        assertNull(grantedToB, () -> "B was granted token " + grantedToB.fencingToken() + " while A holds token "
                + held[0].fencingToken() + " within its deadline");
    }
}
