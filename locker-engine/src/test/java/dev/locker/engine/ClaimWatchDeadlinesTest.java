package dev.locker.engine;

import dev.locker.api.LockOwner;
import dev.locker.api.LockerConfig;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A watched claim lives its time on the monotonic clock: across nanoTime wraps, century expiries, races, evictions. */
class ClaimWatchDeadlinesTest {

    private static final Duration LOCK_WAIT = Duration.ofMillis(100);
    private static final Instant WALL = Instant.parse("2026-01-01T00:00:00Z");

    private final ClaimWatch watch = new ClaimWatch();

    private ClaimWatch.Judge at(Instant wall, long nanos) {
        return watch.judge(new WallStepGuard.JudgingTime(wall, nanos, WallStepGuard.Steps.NONE));
    }

    /** A claim first seen 5 s before nanoTime wraps lives 30 s on, across the wrap, and not a moment more. */
    @Test
    void aClaimWatchedAcrossAWrapOfNanoTimeLivesItsTimeAndNoLonger() {
        long start = Long.MAX_VALUE - 5_000_000_000L;
        ClaimCodec.Claim c = claim(WALL, 1, Duration.ofSeconds(30));
        assertTrue(at(WALL, start).isLive(c));
        long later = start + Duration.ofSeconds(29).toNanos(); // wraps to a negative value
        assertTrue(later < 0, "the test's monotonic reading did not wrap");
        assertTrue(at(WALL.minus(Duration.ofDays(1)), later).isLive(c), "the claim died across the wrap");
        assertFalse(at(WALL.minus(Duration.ofDays(1)), start + Duration.ofSeconds(30).toNanos()).isLive(c),
                "the claim outlived its 30 s on the monotonic clock");
    }

    /**
     * A century claim is first seen by a judging taken after another: the earlier judging, near a wrap of nanoTime,
     * still takes it for live.
     */
    @Test
    void aCenturyClaimFirstSeenByALaterJudgingLivesForAnEarlierOne() {
        ClaimCodec.Claim c = claim(WALL, 1, LockerConfig.MAX_EXPIRY);
        long early = Long.MAX_VALUE - 1_000;
        ClaimWatch.Judge earlier = at(WALL, early);
        ClaimWatch.Judge laterJudge = at(WALL.plusSeconds(1), early + 1_000_000_000L);
        assertTrue(laterJudge.isLive(c));
        assertTrue(earlier.isLive(c), "a judging taken before the first sight took a century claim for dead");
        // time left saturates at a quarter of the long range (about 73 years), as the holder's own deadline does
        Duration holderValidity = Duration.ofNanos(dev.locker.spi.Deadlines.of(0, LockerConfig.MAX_EXPIRY));
        assertTrue(earlier.remaining(c).compareTo(holderValidity) > 0, () -> "judged to live " + earlier.remaining(c)
                + ", less than its holder's validity " + holderValidity);
    }

    /**
     * A live claim forgotten by a full watch, then a 1 h forward step the guard sees: at its next sight the claim
     * still lives until its own 30 s have run out.
     */
    @Test
    void aLiveClaimForgottenByAFullWatchIsNotJudgedDeadEarlyAfterAForwardStep() {
        VirtualClock clock = new VirtualClock(WALL);
        WallStepGuard guard = new WallStepGuard(LockerConfig.builder().rid("g").expiry(Duration.ofSeconds(30))
                .lockWait(LOCK_WAIT).timeSource(clock).build());
        clock.advance(Duration.ofSeconds(1));
        List<ClaimCodec.Claim> claims = new ArrayList<>();
        for (int i = 0; i <= ClaimWatch.MOST; i++) {
            claims.add(claim(clock.now(), i, Duration.ofSeconds(30)));
        }
        ClaimWatch.Judge first = watch.judge(guard.judgingTime(clock.nanoTime(), clock.now(), clock.nanoTime()));
        claims.forEach(c -> assertTrue(first.isLive(c)));
        clock.advance(Duration.ofSeconds(10));
        clock.stepWallClock(Duration.ofHours(1));
        ClaimWatch.Judge later = watch.judge(guard.judgingTime(clock.nanoTime(), clock.now(), clock.nanoTime()));
        assertTrue(later.isLive(claims.get(0)), "a forgotten claim was judged dead 20 s before its expiry");
        clock.advance(Duration.ofSeconds(21));
        ClaimWatch.Judge afterExpiry = watch.judge(guard.judgingTime(clock.nanoTime(), clock.now(), clock.nanoTime()));
        assertFalse(afterExpiry.isLive(claims.get(0)), "a forgotten claim outlived its expiry");
        assertFalse(afterExpiry.isLive(claims.get(ClaimWatch.MOST)), "a watched claim outlived its expiry");
    }

    private static final LockOwner OWNER = LockerConfig.builder().rid("w").build().owner("t");

    private static ClaimCodec.Claim claim(Instant writtenAt, long nonce, Duration expiry) {
        byte[] column = ClaimCodec.column(writtenAt, "w", nonce);
        return ClaimCodec.decode(column, ClaimCodec.value(writtenAt.plus(expiry), 0, OWNER, writtenAt));
    }
}
