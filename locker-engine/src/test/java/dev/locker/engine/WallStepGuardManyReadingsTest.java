package dev.locker.engine;

import dev.locker.api.LockerConfig;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Field;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;

/** The guard keeps judging however many readings it has learnt from over a locker's life. */
class WallStepGuardManyReadingsTest {

    private final VirtualClock clock = new VirtualClock();
    private final WallStepGuard guard = new WallStepGuard(LockerConfig.builder().rid("b")
            .lockWait(Duration.ofMillis(100)).timeSource(clock).build());

    /**
     * A busy locker learns from some 60,000 readings a second, so 2^31 of them take about ten hours. The guard's count
     * of kept states is set just short of that, as a loop of 2^31 readings would take minutes.
     */
    @Test
    void theGuardKeepsJudgingAfterTwoToTheThirtyOneLearntReadings() throws Exception {
        Field kept = WallStepGuard.class.getDeclaredField("kept");
        kept.setAccessible(true);
        kept.setInt(guard, Integer.MAX_VALUE - 4);
        for (int i = 0; i < 32; i++) {
            clock.advance(Duration.ofMillis(1));
            long nanos = clock.nanoTime();
            int reading = i;
            assertDoesNotThrow(() -> guard.judgingTime(nanos, clock.now(), nanos),
                    () -> "reading " + reading + " after the count of kept states passed 2^31");
        }
    }

    /** A reading that enters late, after more than 16 readings taken after it, is judged with nothing pending. */
    @Test
    void aLateReadingOlderThanEveryKeptStateIsJudgedAgainstTheCurrentState() {
        long before = clock.nanoTime();
        java.time.Instant wall = clock.now();
        for (int i = 0; i < 40; i++) {
            clock.advance(Duration.ofMillis(1));
            long nanos = clock.nanoTime();
            guard.judgingTime(nanos, clock.now(), nanos);
        }
        WallStepGuard.JudgingTime late = guard.judgingTime(before, wall, before);
        assertEquals(0, late.pendingMicros());
        assertEquals(wall, late.forClaimWrittenAt(wall));
    }
}
