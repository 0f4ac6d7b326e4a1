package dev.locker.engine;

import dev.locker.api.KeyColumn;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.TemporaryLockingException;
import dev.locker.api.TimeSource;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.testkit.Interleavings;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertFalse;

/** The forward-step guard: an idle locker still sees a wall-clock step and leaves a live lock alone. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class WallClockStepGuardTest {

    private final VirtualClock clock = new VirtualClock();

    private final InMemoryStore shared = new InMemoryStore("shared");

    private final ExecutorService pool = Executors.newCachedThreadPool();

    private final List<Locker> lockers = new ArrayList<>();

    private final KeyColumn lock = KeyColumn.of("vertex:42", "name");

    @AfterEach
    void tearDown() {
        pool.shutdownNow();
        lockers.forEach(Locker::close);
    }

    private Locker locker(KeyColumnValueStore store, LockerConfig config) {
        Locker l = ConsistentKeyLocker.builder(store).config(config).build();
        lockers.add(l);
        return l;
    }

    private LockerConfig.Builder config(String rid, Duration expiry, Duration lockWait, TimeSource time) {
        return LockerConfig.builder().rid(rid).expiry(expiry).lockWait(lockWait).timeSource(time);
    }

    /**
     * E = 30 s, lockWait = 100 ms. C's locker is built, then idle for one hour. A takes the lock at T (store expiry
     * T + 30 s, A's monotonic deadline T + 29.6 s). At T + 27.5 s the host's wall clock steps forward by 3 s, as NTP does
     * after a VM resume. C's step guard must not let a long idle time hide the step. So C does not judge A's claim dead
     * while A still believes it holds.
     */
    @Test
    void anIdleLockerSeesAForwardStepAndLeavesALiveLockAlone() {
        Locker c = locker(shared, config("c", Duration.ofSeconds(30), Duration.ofMillis(100), clock).build());
        clock.advance(Duration.ofHours(1)); // c is idle: no reading of its step guard since it was built
        Locker a = locker(shared, config("a", Duration.ofSeconds(30), Duration.ofMillis(100), clock).build());
        Object ta = new Object();
        long tokenA = Interleavings.take(a, lock, ta);
        clock.advance(Duration.ofMillis(27_400)); // T + 27.5 s: A has 2.1 s left
        clock.stepWallClock(Duration.ofSeconds(3));
        Object tc = new Object();
        long tokenC;
        try {
            tokenC = Interleavings.take(c, lock, tc);
        } catch (TemporaryLockingException refused) {
            return; // correct: A still holds
        }
        assertFalse(Interleavings.believesItHolds(a, lock, ta, clock) && Interleavings.believesItHolds(c, lock, tc, clock),
                "TWO HOLDERS: A (token " + tokenA + ", " + Duration.ofNanos(a.status(lock, ta).orElseThrow()
                        .deadlineNanos() - clock.nanoTime()) + " left) and C (token " + tokenC + "), after a 3 s "
                        + "forward step that C's idle step guard took for slewing");
    }

    /**
     * A thread paused between reading the wall clock and the monotonic clock makes one reading's wall time look
     * early. Such pauses are not steps of the wall clock: a scheduler on a busy host makes dozens of them within one
     * expiry, and judging claims by their sum kept a 50 ms claim alive after 100 ms.
     */
    @Test
    void pausesBetweenTheTwoClockReadingsAreNotSteps() {
        WallStepGuard guard = new WallStepGuard(config("g", Duration.ofSeconds(30), Duration.ofMillis(5), clock).build());
        for (int i = 0; i < 20; i++) {
            clock.advance(Duration.ofMillis(100));
            long wallNanos = clock.nanoTime();
        java.time.Instant wall = clock.now();
            clock.advance(Duration.ofMillis(20)); // preempted between the two readings
            guard.judgingTime(wallNanos, wall, clock.nanoTime());
            clock.advance(Duration.ofMillis(100));
            java.time.Instant now = clock.now();
            org.junit.jupiter.api.Assertions.assertEquals(now, guard.judgingTime(clock.nanoTime(), now, clock.nanoTime())
                    .forClaimWrittenAt(java.time.Instant.EPOCH), "a pause between two readings was taken for a forward step of the wall clock");
        }
    }

    /** A forward step that follows a paused reading is still seen, at no less than its size. */
    @Test
    void aStepAfterAPausedReadingIsSeenAtItsSize() {
        WallStepGuard guard = new WallStepGuard(config("g", Duration.ofSeconds(30), Duration.ofMillis(5), clock).build());
        clock.advance(Duration.ofMillis(100));
        long wallNanos = clock.nanoTime();
        java.time.Instant wall = clock.now();
        clock.advance(Duration.ofMillis(20));
        guard.judgingTime(wallNanos, wall, clock.nanoTime());
        clock.advance(Duration.ofMillis(100));
        clock.stepWallClock(Duration.ofSeconds(3));
        java.time.Instant now = clock.now();
        Duration judged = Duration.between(guard.judgingTime(clock.nanoTime(), now, clock.nanoTime())
                .forClaimWrittenAt(java.time.Instant.EPOCH), now);
        // never less than the step; more by at most the slew let pass since the baseline (liveness only)
        org.junit.jupiter.api.Assertions.assertTrue(judged.compareTo(Duration.ofSeconds(3)) >= 0
                && judged.compareTo(Duration.ofMillis(3_001)) <= 0, () -> "judged a 3 s step as " + judged);
    }
}
