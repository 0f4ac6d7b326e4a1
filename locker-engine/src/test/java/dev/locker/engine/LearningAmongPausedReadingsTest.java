package dev.locker.engine;

import dev.locker.api.LockerConfig;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;

import static org.junit.jupiter.api.Assertions.assertFalse;

/** The guard learns a forward step while one thread's readings are all paused and another's overlap them. */
class LearningAmongPausedReadingsTest {

    private static final Duration EXPIRY = Duration.ofSeconds(30);
    private static final Duration PAUSED = Duration.ofMillis(30);
    private static final Duration EXACT = Duration.ofMillis(10);

    private final VirtualClock clock = new VirtualClock();
    private final WallStepGuard guard = new WallStepGuard(LockerConfig.builder().rid("b").expiry(EXPIRY)
            .lockWait(Duration.ofMillis(100)).timeSource(clock).build());

    /**
     * Thread 1 of B reads the clocks back to back, each reading paused 30 ms (lockWait is 100 ms). Thread 2's exact
     * readings, 10 ms wide, each begin 5 ms before one of thread 1's readings ends and enter just after it. The clock
     * steps 60 s forward. A's claim, written 40 s after the step, has been dead 49 s on A's clock two minutes on. B
     * judges it dead.
     */
    @Test
    @Disabled("a paused reading moves the point exact readings must follow: overlapping exact readings never learn")
    void aClaimWrittenLongAfterAForwardStepIsJudgedDeadWhileExactReadingsOverlapPausedOnes() {
        assertJudgedDead(true);
    }

    /** Thread 2's readings begin as thread 1's end: the guard learns the step, and A's claim is judged dead. */
    @Test
    void aClaimWrittenLongAfterAForwardStepIsJudgedDeadWhileExactReadingsFollowPausedOnes() {
        assertJudgedDead(false);
    }

    private void assertJudgedDead(boolean overlapping) {
        long step = Duration.ofSeconds(1).toNanos();
        long writtenNanos = Duration.ofSeconds(41).toNanos(); // A's claim, in the frame after the step
        Instant written = wallAt(writtenNanos, step);
        long paused = PAUSED.toNanos();
        long exact = EXACT.toNanos();
        WallStepGuard.JudgingTime last = null;
        long end = Duration.ofMinutes(2).toNanos();
        for (long p = Duration.ofMillis(10).toNanos(); p < end; p += paused) {
            guard.judgingTime(p, wallAt(p, step), p + paused); // thread 1's reading, paused after its wall reading
            long e = p + paused - (overlapping ? exact / 2 : 0); // thread 2's reading, entering after thread 1's
            last = guard.judgingTime(e, wallAt(e, step), e + exact);
        }
        Instant expiry = written.plus(EXPIRY);
        Instant judgedAt = last.forClaimWrittenAt(written);
        Duration deadOnA = Duration.ofNanos(end - writtenNanos).minus(EXPIRY);
        assertFalse(judgedAt.isBefore(expiry), () -> "A's claim, dead " + deadOnA + " on A's clock, was judged at "
                + judgedAt + ", " + Duration.between(judgedAt, expiry) + " before its expiry");
    }

    /** The wall clock at monotonic {@code nanos}: 60 s ahead from {@code step} on. */
    private static Instant wallAt(long nanos, long step) {
        return Instant.parse("2026-01-01T00:00:00Z").plusNanos(nanos + (nanos >= step ? 60_000_000_000L : 0));
    }
}
