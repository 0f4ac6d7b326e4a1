package dev.locker.engine;

import dev.locker.api.LockerConfig;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** Claims of every frame look no older than their holders' monotonic age, after a late reading lowers the baseline. */
class ClaimsAroundALateLoweringBelowTheClocksFrameTest {

    /** What every holder keeps back of a 30 s term: 1% of (expiry - lockWait), rounded up. */
    private static final Duration MARGIN = Duration.ofMillis(399);

    private final VirtualClock clock = new VirtualClock();
    private final WallStepGuard guard = new WallStepGuard(LockerConfig.builder().rid("g")
            .expiry(Duration.ofSeconds(30)).lockWait(Duration.ofMillis(100)).timeSource(clock).build());
    private final List<Claim> claims = new ArrayList<>();

    private record Claim(String name, long nanos, Instant wall) {
    }

    private record Reading(long nanos, Instant wall) {
    }

    /**
     * The clock steps back 40 s and a reading there is preempted; a claim is written; the clock steps 45 s forward,
     * a claim is written, and a reading learns the +5 s. The preempted reading then lowers the baseline 40 s, while
     * the clock is in fact 45 s above it. Claims follow, a 30 s forward step, another claim, and readings that learn
     * it. Every judging sees every claim no older than its holder's clock says.
     */
    @Test
    void claimsOfThreeFramesAreNeverJudgedOlderThanTheyAreAroundALateReadingOfAFrameTheClockLeft() {
        clock.advance(Duration.ofSeconds(1));
        judgeInTurn();
        clock.advance(Duration.ofSeconds(1));
        clock.stepWallClock(Duration.ofSeconds(-40));
        Reading late = take();
        clock.advance(Duration.ofSeconds(1));
        write("A1, in the frame set back");
        clock.advance(Duration.ofSeconds(1));
        clock.stepWallClock(Duration.ofSeconds(45));
        clock.advance(Duration.ofSeconds(1));
        write("A2, 5 s above the first frame");
        clock.advance(Duration.ofSeconds(1));
        learn(); // only the preempted reading knows of the step back: this one cannot allow for it
        clock.advance(Duration.ofSeconds(1));
        judge(late); // lowers the baseline to the frame set back, which the clock has left
        clock.advance(Duration.ofSeconds(1));
        write("A3, in the +5 s frame after the lowering");
        clock.advance(Duration.ofSeconds(1));
        judgeInTurn();
        clock.advance(Duration.ofSeconds(1));
        clock.stepWallClock(Duration.ofSeconds(30));
        clock.advance(Duration.ofSeconds(1));
        write("A4, in the +35 s frame");
        clock.advance(Duration.ofSeconds(1));
        for (int i = 0; i < 5; i++) {
            judgeInTurn();
            clock.advance(Duration.ofSeconds(5));
        }
    }

    /**
     * The same, with the clock going back to the frame set back after the lowering, unseen until a claim is written
     * there, then 80 s forward: claims of all four frames keep their age.
     */
    @Test
    void aReturnToTheLoweredFrameAndAStepFarAboveItLeaveEveryClaimItsAge() {
        clock.advance(Duration.ofSeconds(1));
        judgeInTurn();
        clock.advance(Duration.ofSeconds(1));
        clock.stepWallClock(Duration.ofSeconds(-40));
        Reading late = take();
        clock.advance(Duration.ofSeconds(1));
        write("A1, in the frame set back");
        clock.advance(Duration.ofSeconds(1));
        clock.stepWallClock(Duration.ofSeconds(45));
        clock.advance(Duration.ofSeconds(1));
        write("A2, 5 s above the first frame");
        clock.advance(Duration.ofSeconds(1));
        learn(); // only the preempted reading knows of the step back: this one cannot allow for it
        clock.advance(Duration.ofSeconds(1));
        judge(late);
        clock.advance(Duration.ofSeconds(1));
        write("A3, in the +5 s frame after the lowering");
        clock.advance(Duration.ofSeconds(1));
        clock.stepWallClock(Duration.ofSeconds(-45));
        clock.advance(Duration.ofSeconds(1));
        write("A4, back in the frame set back");
        clock.advance(Duration.ofSeconds(1));
        clock.stepWallClock(Duration.ofSeconds(80));
        clock.advance(Duration.ofSeconds(1));
        write("A5, in the +40 s frame");
        clock.advance(Duration.ofSeconds(1));
        for (int i = 0; i < 5; i++) {
            judgeInTurn();
            clock.advance(Duration.ofSeconds(5));
        }
    }

    private void write(String name) {
        claims.add(new Claim(name, clock.nanoTime(), clock.now()));
    }

    private Reading take() {
        return new Reading(clock.nanoTime(), clock.now());
    }

    private void learn() {
        Reading reading = take();
        guard.judgingTime(reading.nanos(), reading.wall(), reading.nanos());
    }

    private void judgeInTurn() {
        judge(take());
    }

    /** Judges every claim written before the reading, on the reading: none may look older than its holder's age. */
    private void judge(Reading reading) {
        WallStepGuard.JudgingTime at = guard.judgingTime(reading.nanos(), reading.wall(), reading.nanos());
        for (Claim claim : claims) {
            if (claim.nanos() - reading.nanos() >= 0) {
                continue;
            }
            Duration judged = Duration.between(claim.wall(), at.forClaimWrittenAt(claim.wall()));
            Duration real = Duration.ofNanos(reading.nanos() - claim.nanos());
            assertTrue(judged.compareTo(real.plus(MARGIN)) <= 0, () -> "claim " + claim.name() + " was judged "
                    + judged + " old on a reading taken " + real + " after it was written");
        }
    }
}
