package dev.locker.engine;

import dev.locker.api.LockerConfig;
import dev.locker.api.TimeSource;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The step guard judges by the wall clock less every forward step, whatever order and origin its readings have. */
class WallStepGuardReadingsTest {

    private final VirtualClock clock = new VirtualClock();

    private static final Duration LOCK_WAIT = Duration.ofMillis(100);

    private static WallStepGuard guard(TimeSource time) {
        return new WallStepGuard(LockerConfig.builder().rid("g").expiry(Duration.ofSeconds(30))
                .lockWait(LOCK_WAIT).timeSource(time).build());
    }

    /**
     * How far before {@code wall} the guard judges, at a reading taken at {@code wall} and {@code nanos}, a claim written
     * before every step.
     */
    private static Duration lag(WallStepGuard guard, Instant wall, long nanos) {
        return Duration.between(guard.judgingTime(nanos, wall, nanos).forClaimWrittenAt(Instant.EPOCH), wall);
    }

    /**
     * Readings of many threads enter the guard in any order. Every reading taken after a 3 s forward step is judged at
     * least 3 s early, and one taken before it at no later than its own wall time.
     */
    @Test
    void readingsEnteringOutOfOrderAroundAStepAreEachJudgedNoLaterThanRealTime() {
        WallStepGuard guard = guard(clock);
        Instant[] walls = new Instant[6];
        long[] nanos = new long[6];
        for (int i = 0; i < 6; i++) {
            clock.advance(Duration.ofMillis(300));
            if (i == 3) {
                clock.stepWallClock(Duration.ofSeconds(3));
            }
            walls[i] = clock.now();
            nanos[i] = clock.nanoTime();
        }
        for (int i : new int[] {5, 0, 3, 1, 4, 2}) {
            Duration lag = lag(guard, walls[i], nanos[i]);
            Duration least = i >= 3 ? Duration.ofSeconds(3) : Duration.ZERO;
            assertTrue(lag.compareTo(least) >= 0, "reading " + i + " was judged only " + lag + " early");
        }
    }

    /** A thread paused 5 s (a GC) between its two readings just before a 3 s step: the step is seen at its size. */
    @Test
    void aStepRightAfterAReadingPausedForSecondsIsSeenAtItsSize() {
        WallStepGuard guard = guard(clock);
        clock.advance(Duration.ofSeconds(1));
        long wallNanos = clock.nanoTime();
        Instant wall = clock.now();
        clock.advance(Duration.ofSeconds(5));
        guard.judgingTime(wallNanos, wall, clock.nanoTime());
        clock.advance(Duration.ofMillis(200));
        clock.stepWallClock(Duration.ofSeconds(3));
        Duration lag = lag(guard, clock.now(), clock.nanoTime());
        assertTrue(lag.compareTo(Duration.ofSeconds(3)) >= 0, () -> "judged a 3 s step as " + lag);
    }

    /** A wall clock still for an hour, then a 3 s step: the step is seen by the first reading after it. */
    @Test
    void aStepAfterAnHourWithoutReadingsIsSeenAtItsSize() {
        WallStepGuard guard = guard(clock);
        clock.advance(Duration.ofHours(1));
        clock.stepWallClock(Duration.ofSeconds(3));
        Duration lag = lag(guard, clock.now(), clock.nanoTime());
        assertTrue(lag.compareTo(Duration.ofSeconds(3)) >= 0, () -> "judged a 3 s step as " + lag);
    }

    /**
     * A step is allowed for only in the claims written before it: a claim written after it is judged by the wall clock,
     * also when paused readings and a backward step came in between, while one written before it still is not.
     */
    @Test
    void aClaimWrittenAfterAStepIsJudgedByTheWallClock() {
        WallStepGuard guard = guard(clock);
        clock.advance(Duration.ofSeconds(1));
        clock.stepWallClock(Duration.ofSeconds(3));
        assertTrue(lag(guard, clock.now(), clock.nanoTime()).compareTo(Duration.ofSeconds(3)) >= 0, "the step was not seen");
        for (int i = 0; i < 10; i++) {
            clock.advance(Duration.ofSeconds(2));
            long wallNanos = clock.nanoTime();
        Instant wall = clock.now();
            clock.advance(Duration.ofMillis(700)); // preempted between the two readings
            guard.judgingTime(wallNanos, wall, clock.nanoTime());
        }
        clock.stepWallClock(Duration.ofSeconds(-2));
        Instant writtenAfter = clock.now();
        clock.advance(Duration.ofSeconds(5));
        Instant now = clock.now();
        WallStepGuard.JudgingTime at = guard.judgingTime(clock.nanoTime(), now, clock.nanoTime());
        assertEquals(now, at.forClaimWrittenAt(writtenAfter), "a claim written after the step is judged before the wall clock");
        assertTrue(Duration.between(at.forClaimWrittenAt(Instant.EPOCH), now).compareTo(Duration.ofSeconds(3)) >= 0,
                "a claim written before the step is judged by the stepped wall clock");
    }

    /** The monotonic clock's origin is arbitrary: passing from Long.MAX_VALUE to Long.MIN_VALUE is no step. */
    @Test
    void aMonotonicClockThatWrapsAroundIsNotTakenForAStep() {
        long origin = Long.MAX_VALUE - 500_000_000L;
        TimeSource wrapping = new TimeSource() {
            @Override
            public Instant now() {
                return clock.now();
            }

            @Override
            public long nanoTime() {
                return origin + clock.nanoTime(); // overflows past Long.MAX_VALUE, as System.nanoTime() may
            }

            @Override
            public void sleep(Duration d) throws InterruptedException {
                clock.sleep(d);
            }
        };
        WallStepGuard guard = guard(wrapping);
        for (int i = 0; i < 3; i++) {
            clock.advance(Duration.ofMillis(400));
            Instant now = wrapping.now();
            assertEquals(now, guard.judgingTime(wrapping.nanoTime(), now, wrapping.nanoTime()).forClaimWrittenAt(Instant.EPOCH),
                    "at " + (i + 1) * 400 + " ms (nanoTime wraps at 500 ms) claims were judged "
                            + "at another time than the wall clock, with no step");
        }
    }

    /** A reading between two close monotonic readings, as the locker takes one for each row it judges. */
    private static WallStepGuard.JudgingTime exact(WallStepGuard guard, VirtualClock clock) {
        long before = clock.nanoTime();
        return guard.judgingTime(before, clock.now(), clock.nanoTime());
    }

    /**
     * The clock steps back 3 s, an exact reading meets it, and 1 s later the clock steps forward 3 s again. A claim
     * written while the clock was back is judged 3 s earlier (its stamps are 3 s low). One written before the step back
     * could as well have been written during the step forward, in two steps read as one: it is judged no earlier than
     * as if written at the reading that saw the step, never the whole step earlier.
     */
    @Test
    void aStepBackMetByAnExactReadingIsAllowedForWhenTheStepForwardUndoesIt() {
        WallStepGuard guard = guard(clock);
        clock.advance(Duration.ofSeconds(1));
        Instant before = clock.now();
        clock.advance(Duration.ofSeconds(1));
        clock.stepWallClock(Duration.ofSeconds(-3));
        exact(guard, clock);
        Instant during = clock.now();
        clock.advance(Duration.ofSeconds(1));
        clock.stepWallClock(Duration.ofSeconds(3));
        WallStepGuard.JudgingTime at = exact(guard, clock);
        Duration lagDuring = Duration.between(at.forClaimWrittenAt(during), at.wall());
        assertTrue(lagDuring.compareTo(Duration.ofSeconds(3)) >= 0, "a claim stamped 3 s low is judged only "
                + lagDuring + " early");
        assertAtMostAsIfWrittenAtTheReading(at, before);
    }

    /**
     * {@code writtenAt} is judged no earlier than a claim written at {@code at}'s reading, which came 1 s after the
     * reading before it: with lockWait and the slew that second may hide (1000 ppm) as margin.
     */
    private static void assertAtMostAsIfWrittenAtTheReading(WallStepGuard.JudgingTime at, Instant writtenAt) {
        Duration lag = Duration.between(at.forClaimWrittenAt(writtenAt), at.wall());
        Duration most = Duration.between(writtenAt, at.wall()).plus(LOCK_WAIT).plusMillis(1);
        assertTrue(lag.compareTo(most) <= 0, "a claim written before the step back is judged " + lag + " early, "
                + "more than the " + most + " since it was written");
    }

    /**
     * The clock is set back a year, met by an exact reading, and set forward a year again. A claim written before the
     * step back is judged no earlier than as if written at the reading that saw the step forward, not kept alive for a
     * year; one written during the year back is judged a year earlier.
     */
    @Test
    void aClockSetBackAYearAndForwardAgainDoesNotKeepOlderClaimsAliveForAYear() {
        WallStepGuard guard = guard(clock);
        Instant before = clock.now();
        clock.advance(Duration.ofSeconds(1));
        clock.stepWallClock(Duration.ofDays(-365));
        exact(guard, clock);
        Instant during = clock.now();
        clock.advance(Duration.ofSeconds(1));
        clock.stepWallClock(Duration.ofDays(365));
        assertAtMostAsIfWrittenAtTheReading(exact(guard, clock), before);
        clock.advance(Duration.ofSeconds(90));
        WallStepGuard.JudgingTime at = exact(guard, clock);
        assertTrue(Duration.between(at.forClaimWrittenAt(during), at.wall()).compareTo(Duration.ofDays(365)) >= 0,
                "a claim written during the year back is judged by the wall clock");
    }

    /**
     * Forward steps of 10 ms, each under the threshold (half of lockWait), add up: after six of them (60 ms) a claim
     * written before the first is judged at least 50 ms earlier, and a claim written after the last one by the wall.
     */
    @Test
    void smallForwardStepsAddUpUntilTheyAreAllowedFor() {
        WallStepGuard guard = guard(clock);
        Instant writtenBefore = clock.now();
        for (int i = 0; i < 6; i++) {
            clock.advance(Duration.ofMillis(100));
            clock.stepWallClock(Duration.ofMillis(10));
            exact(guard, clock);
        }
        clock.advance(Duration.ofMillis(200));
        Instant writtenAfter = clock.now();
        clock.advance(Duration.ofMillis(100));
        WallStepGuard.JudgingTime at = exact(guard, clock);
        Duration lag = Duration.between(at.forClaimWrittenAt(writtenBefore), at.wall());
        assertTrue(lag.compareTo(Duration.ofMillis(50)) >= 0, "six steps of 10 ms were judged as " + lag);
        assertEquals(at.wall(), at.forClaimWrittenAt(writtenAfter), "a claim written after them is judged late");
    }

    /**
     * More steps than the record holds: every one still counts for a claim written before them all, and a claim
     * written after the first half counts the second half only, give or take the merged oldest.
     */
    @Test
    void stepsBeyondTheRecordsSizeStillCountForEveryClaimWrittenBeforeThem() {
        WallStepGuard guard = guard(clock);
        Instant first = clock.now();
        int n = WallStepGuard.Steps.MOST + 100;
        Instant halfway = null;
        for (int i = 0; i < n; i++) {
            if (i == n / 2) {
                clock.advance(Duration.ofMillis(500));
                halfway = clock.now();
            }
            clock.advance(Duration.ofSeconds(1));
            clock.stepWallClock(Duration.ofMillis(100));
            exact(guard, clock);
        }
        WallStepGuard.JudgingTime at = exact(guard, clock);
        Duration all = Duration.between(at.forClaimWrittenAt(first), at.wall());
        assertTrue(all.compareTo(Duration.ofMillis(100L * n)) >= 0, n + " steps of 100 ms were judged as " + all);
        Duration half = Duration.between(at.forClaimWrittenAt(halfway), at.wall());
        assertTrue(half.compareTo(Duration.ofMillis(100L * (n - n / 2))) >= 0 && half.compareTo(all) < 0,
                "the steps after a claim written halfway were judged as " + half);
    }

    /**
     * Five thousand steps of 10 ms before a claim was written (50 s in all), then sixty after it: the claim is judged
     * less the 600 ms after it, not the 50 s before it.
     */
    @Test
    void aClaimIsNotJudgedLessTheStepsSeenBeforeItWasWritten() {
        WallStepGuard guard = guard(clock);
        for (int i = 0; i < 5_000; i++) {
            clock.advance(Duration.ofMillis(200));
            clock.stepWallClock(Duration.ofMillis(10));
            exact(guard, clock);
        }
        clock.advance(Duration.ofSeconds(1));
        Instant writtenAt = clock.now();
        for (int i = 0; i < 60; i++) {
            clock.advance(Duration.ofMillis(200));
            clock.stepWallClock(Duration.ofMillis(10));
            exact(guard, clock);
        }
        WallStepGuard.JudgingTime at = exact(guard, clock);
        Duration lag = Duration.between(at.forClaimWrittenAt(writtenAt), at.wall());
        assertTrue(lag.compareTo(Duration.ofMillis(550)) >= 0 && lag.compareTo(Duration.ofSeconds(2)) < 0,
                "a claim written before 60 steps of 10 ms is judged " + lag + " early");
    }
}
