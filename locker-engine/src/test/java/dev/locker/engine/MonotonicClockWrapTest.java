package dev.locker.engine;

import dev.locker.api.KeyColumn;
import dev.locker.api.TemporaryLockingException;
import dev.locker.api.TimeSource;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Claims are judged the same when the monotonic clock wraps past Long.MAX_VALUE during their life. */
class MonotonicClockWrapTest extends JudgingScenario {

    /** nanoTime may start anywhere: this one passes Long.MAX_VALUE 10 s in. */
    private final TimeSource wrapping = new Wrapping(clock, Long.MAX_VALUE - Duration.ofSeconds(10).toNanos());

    @Override
    ConsistentKeyDriver driver(String rid) {
        return driver(rid, wrapping);
    }

    /**
     * A takes the lock and B sees it 5 s before nanoTime wraps; NTP then steps the clock an hour forward. 20 s in, A
     * holds and B is refused; 35 s in, A's claim is dead and B gets token 2.
     */
    @Test
    void aClaimWatchedAcrossAWrapOfNanoTimeLivesItsTimeAndNoLonger() {
        ConsistentKeyDriver a = driver("a");
        ConsistentKeyDriver b = driver("b");
        ConsistentKeyClaim held = a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
        clock.advance(Duration.ofSeconds(5));
        assertTrue(b.readHolder(lock).isPresent(), "B sees A's claim");
        clock.stepWallClock(Duration.ofHours(1));
        clock.advance(Duration.ofSeconds(15));
        assertTrue(wrapping.nanoTime() < 0 && held.deadlineNanos() < 0, "nanoTime wrapped");
        assertTrue(wrapping.nanoTime() - held.deadlineNanos() < 0, "A's claim ran out");
        ConsistentKeyClaim early = b.write(lock, owner("b"), EXPIRY, null);
        assertThrows(TemporaryLockingException.class, () -> b.verify(lock, early), "B was granted while A holds");
        b.release(lock, early);
        clock.advance(Duration.ofSeconds(15));
        ConsistentKeyClaim late = b.write(lock, owner("b"), EXPIRY, null);
        assertEquals(2, b.verify(lock, late).fencingToken(), "A's claim, 35 s after it was written for 30 s");
    }

    /** A claim first seen after nanoTime wrapped is judged by the wall clock less the forward step seen. */
    @Test
    void aClaimFirstSeenAfterAWrapOfNanoTimeIsJudgedLessTheStepSeen() {
        ConsistentKeyDriver a = driver("a");
        ConsistentKeyDriver b = driver("b");
        ConsistentKeyClaim held = a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
        clock.advance(Duration.ofSeconds(5));
        b.readHolder(KeyColumn.of("vertex:43", "name"));
        clock.advance(Duration.ofSeconds(10));
        clock.stepWallClock(Duration.ofHours(1));
        clock.advance(Duration.ofSeconds(5));
        assertTrue(wrapping.nanoTime() - held.deadlineNanos() < 0, "A's claim ran out");
        ConsistentKeyClaim claim = b.write(lock, owner("b"), EXPIRY, null);
        assertThrows(TemporaryLockingException.class, () -> b.verify(lock, claim), "B was granted while A holds");
    }

    /** The virtual clock with its monotonic readings moved by {@code base}, wrapping as nanoTime may. */
    private record Wrapping(VirtualClock clock, long base) implements TimeSource {
        @Override
        public Instant now() {
            return clock.now();
        }

        @Override
        public long nanoTime() {
            return clock.nanoTime() + base;
        }

        @Override
        public void sleep(Duration d) throws InterruptedException {
            clock.sleep(d);
        }
    }
}
