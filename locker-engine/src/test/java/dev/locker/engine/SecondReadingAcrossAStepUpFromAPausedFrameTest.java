package dev.locker.engine;

import dev.locker.api.LockerConfig;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** A read-back's late second reading allows a claim the whole way up from a frame only a paused reading showed. */
class SecondReadingAcrossAStepUpFromAPausedFrameTest {

    private static final Duration EXPIRY = Duration.ofSeconds(30);

    private final VirtualClock clock = new VirtualClock();
    private final WallStepGuard guard = new WallStepGuard(LockerConfig.builder().rid("b").expiry(EXPIRY)
            .lockWait(Duration.ofMillis(100)).timeSource(clock).build());

    /** A reading of both clocks as B's thread takes it: monotonic, wall, monotonic. */
    private record Reading(long before, Instant wall, long after) {
    }

    private Reading read(Duration pausedBetween) {
        long before = clock.nanoTime();
        Instant wall = clock.now();
        clock.advance(pausedBetween);
        return new Reading(before, wall, clock.nanoTime());
    }

    private WallStepGuard.JudgingTime enter(Reading r) {
        return guard.judgingTime(r.before, r.wall, r.after);
    }

    /**
     * B's read-back takes its first reading, then its thread is preempted. NTP sets the clock back 40 s, and A writes
     * its claim in that frame; a paused reading of B's locker shows the step back. B reads the row, and its second
     * reading is preempted across a 45 s step forward that another thread's reading learns first. A's claim has 27 s
     * left on A's clock, so B judges it live.
     */
    @Test
    void aClaimOfAFrameAPausedReadingShowedStaysLiveForALateSecondReadingAcrossTheStepForward() {
        clock.advance(Duration.ofSeconds(1));
        enter(read(Duration.ZERO));
        clock.advance(Duration.ofMillis(500));
        Reading first = read(Duration.ZERO); // B's read-back, before its read
        WallStepGuard.JudgingTime firstJudging = enter(first);
        clock.advance(Duration.ofMillis(500));
        clock.stepWallClock(Duration.ofSeconds(-40));
        clock.advance(Duration.ofMillis(500));
        Instant written = clock.now(); // A's claim
        long writtenNanos = clock.nanoTime();
        clock.advance(Duration.ofMillis(500));
        enter(read(Duration.ofSeconds(1))); // a paused reading in the frame set back: it proves the step back
        clock.advance(Duration.ofSeconds(1)); // B reads the row, with A's claim, at 5 s
        long secondBefore = clock.nanoTime();
        clock.advance(Duration.ofSeconds(5));
        clock.stepWallClock(Duration.ofSeconds(45));
        clock.advance(Duration.ofMillis(500));
        Instant secondWall = clock.now();
        clock.advance(Duration.ofMillis(100));
        enter(read(Duration.ZERO)); // another thread's exact reading learns the 45 s step first
        clock.advance(Duration.ofMillis(400));
        WallStepGuard.JudgingTime second = guard.judgingTime(secondBefore, secondWall, clock.nanoTime());
        Instant judgedAt = firstJudging.andAfter(second).forClaimWrittenAt(written);
        Instant expiry = written.plus(EXPIRY);
        Duration leftOnA = EXPIRY.minusNanos(secondBefore - writtenNanos);
        assertTrue(judgedAt.isBefore(expiry), () -> "A's claim, with " + leftOnA + " left on A's clock at the "
                + "read, was judged at " + judgedAt + ", " + Duration.between(expiry, judgedAt) + " past its expiry "
                + expiry);
    }
}
