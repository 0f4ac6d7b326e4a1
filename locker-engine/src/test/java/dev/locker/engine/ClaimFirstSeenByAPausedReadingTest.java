package dev.locker.engine;

import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A claim first seen by a paused reading lives at most the time it had left when the reading began. */
class ClaimFirstSeenByAPausedReadingTest extends JudgingScenario {

    private static final Duration PAUSE = Duration.ofMinutes(10);

    /**
     * A takes a 30 s claim and crashes. 20 s later B begins to read the lock row and its process stops for 10 minutes
     * right after its first monotonic reading. 11 s after B runs again, A's claim is free.
     */
    @Test
    void aClaimFirstSeenByAReadingPausedForTenMinutesIsFreeOnceTheTimeItHadLeftRanOutAfterThePause() {
        assertFreeAfterAPause(PAUSE);
    }

    /** The same reading without the pause: 11 s later A's claim is free. */
    @Test
    void aClaimFirstSeenByAnUnpausedReadingIsFreeOnceItsTimeRanOut() {
        assertFreeAfterAPause(Duration.ZERO);
    }

    private void assertFreeAfterAPause(Duration pause) {
        ThreadGatedClock bTime = new ThreadGatedClock(clock);
        ConsistentKeyDriver a = driver("a", clock);
        ConsistentKeyDriver b = driver("b", bTime);
        a.verify(lock, a.write(lock, owner("a"), EXPIRY, null)); // and A crashes: it never renews or releases
        clock.advance(Duration.ofSeconds(20));
        bTime.afterNanos(1, () -> clock.advance(pause)); // B's process stops after its first monotonic reading
        assertFalse(b.readHolder(lock).isEmpty(), "A's claim, 20 s old, is judged dead");
        assertTrue(bTime.allHooksRan(), "B's reading was not paused as planned");
        clock.advance(Duration.ofSeconds(11));
        assertTrue(b.readHolder(lock).isEmpty(), () -> "A's 30 s claim is judged live by B "
                + Duration.ofSeconds(31).plus(pause) + " after A wrote it");
    }
}
