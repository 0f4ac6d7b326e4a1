package dev.locker.engine;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LeaseOptions;
import dev.locker.api.LockOwner;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.TemporaryLockingException;
import dev.locker.testkit.Interleavings;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Other claims are judged by the monotonic clock from this locker's first sight of them. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ClaimWatchTest {

    private static final Duration LOCK_WAIT = Duration.ofMillis(100);

    private final VirtualClock clock = new VirtualClock();
    private final InMemoryStore shared = new InMemoryStore("shared");
    private final List<Locker> lockers = new ArrayList<>();
    private final KeyColumn lock = KeyColumn.of("vertex:42", "name");

    @AfterEach
    void tearDown() {
        lockers.forEach(Locker::close);
    }

    private Locker locker(String rid) {
        LockerConfig config = LockerConfig.builder().rid(rid).expiry(Duration.ofSeconds(30)).lockWait(LOCK_WAIT)
                .timeSource(clock).build();
        Locker l = ConsistentKeyLocker.builder(shared).config(config).build();
        lockers.add(l);
        return l;
    }

    private boolean takes(Locker l) {
        try {
            Interleavings.take(l, lock, new Object());
            return true;
        } catch (TemporaryLockingException refused) {
            return false;
        }
    }

    /**
     * C sees A's claim, then NTP sets the host's clock back an hour. Once the claim's 30 s have run out on the
     * monotonic clock, C takes the lock: the claim is not kept alive for the hour the wall clock went back.
     */
    @Test
    void aClaimSeenBeforeTheClockIsSetBackAnHourIsFreeOnceItsTimeRanOut() {
        Locker a = locker("a");
        Locker c = locker("c");
        Lease lease = a.acquire(lock, "a", LeaseOptions.DEFAULTS.keepAlive(false));
        clock.advance(Duration.ofSeconds(1));
        assertFalse(takes(c), "C took the lock while A held it");
        clock.stepWallClock(Duration.ofHours(-1));
        clock.advance(Duration.ofSeconds(30));
        assertFalse(lease.isValid(), "A's lease outlived its expiry");
        assertTrue(takes(c), "C is refused 31 s after A took a 30 s claim: judged by the wall clock set back an hour");
    }

    /**
     * A renews its claim after C first saw it: the renewed claim is a new one to C, judged from its own first sight, so
     * C does not take the lock when the first expiry has run out on the monotonic clock.
     */
    @Test
    void aRenewedClaimIsJudgedFromItsFirstSightAfterTheRenewal() {
        Locker a = locker("a");
        Locker c = locker("c");
        Object ta = new Object();
        Interleavings.take(a, lock, ta);
        clock.advance(Duration.ofSeconds(1));
        assertFalse(takes(c), "C took the lock while A held it");
        clock.advance(Duration.ofSeconds(19));
        a.renewLocks(ta);
        clock.advance(Duration.ofSeconds(15)); // the first expiry ran out 5 s ago, the renewed one has 15 s left
        assertFalse(takes(c), "C took the lock 15 s before A's renewed claim expires");
        assertTrue(Interleavings.believesItHolds(a, lock, ta, clock), "A no longer believes it holds");
    }

    /**
     * A full watch forgets its oldest claims; one forgotten while alive is judged again at its next sight, by the wall
     * clock less the steps seen since it was written, as at a first sight.
     */
    @Test
    void aClaimForgottenByAFullWatchIsJudgedAgainAsAtAFirstSight() {
        ClaimWatch watch = new ClaimWatch();
        Instant start = clock.now();
        List<ClaimCodec.Claim> claims = new ArrayList<>();
        for (int i = 0; i <= ClaimWatch.MOST; i++) {
            claims.add(claim(start, i, Duration.ofSeconds(30)));
        }
        WallStepGuard.JudgingTime first = new WallStepGuard.JudgingTime(clock.now(), clock.nanoTime(),
                WallStepGuard.Steps.NONE);
        ClaimWatch.Judge judge = watch.judge(first);
        claims.forEach(c -> assertTrue(judge.isLive(c)));
        assertTrue(watch.size() <= ClaimWatch.MOST, "the watch holds " + watch.size() + " claims");
        // the oldest, forgotten, is judged again after the wall clock stepped back: by the wall clock, so it lives on
        clock.advance(Duration.ofSeconds(31));
        clock.stepWallClock(Duration.ofSeconds(-10));
        ClaimWatch.Judge later = watch.judge(new WallStepGuard.JudgingTime(clock.now(), clock.nanoTime(),
                WallStepGuard.Steps.NONE));
        assertTrue(later.isLive(claims.get(0)), "a forgotten claim is not judged as at a first sight");
        assertFalse(later.isLive(claims.get(ClaimWatch.MOST)), "a watched claim outlived its time on the monotonic clock");
    }

    private static final LockOwner OWNER = LockerConfig.builder().rid("w").build().owner("t");

    private static ClaimCodec.Claim claim(Instant writtenAt, long nonce, Duration expiry) {
        byte[] column = ClaimCodec.column(writtenAt, "w", nonce);
        return ClaimCodec.decode(column, ClaimCodec.value(writtenAt.plus(expiry), 0, OWNER, writtenAt));
    }
}
