package dev.locker.redis;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockerConfig;
import dev.locker.api.LossReason;
import dev.locker.api.TimeSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static dev.locker.redis.RedisWaitingFixture.lock;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Adversarial review of today's force.lua change (a release by token whose claim is gone answers 1 when the record
 * hash holds exactly the record this call would write) and of the token in the forced-release record, on a real
 * redis-server. Findings are {@code @Disabled("finding N: ...")} and fail on the reviewed code.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RedisTodayReviewTest {

    @RegisterExtension
    static final RedisWaitingFixture fixture = RedisWaitingFixture.onTarget("today");

    /**
     * The system clock, except that while {@link #gate} is armed a thread named {@code force-*} reading the wall clock
     * (forceRelease does, once, after it read the holder and before the script) waits there for the other such
     * thread, and both read the same instant: two calls in the same millisecond, each past its read of the holder.
     */
    private static final class SameMillisecond implements TimeSource {
        final Instant at = Instant.now();
        volatile CyclicBarrier gate;

        @Override
        public Instant now() {
            CyclicBarrier g = gate;
            if (g != null && Thread.currentThread().getName().startsWith("force-")) {
                try {
                    g.await(1, TimeUnit.MINUTES);
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
                return at;
            }
            return TimeSource.system().now();
        }

        @Override
        public long nanoTime() {
            return System.nanoTime();
        }

        @Override
        public void sleep(Duration d) throws InterruptedException {
            TimeSource.system().sleep(d);
        }
    }

    /**
     * Finding 2 (low, change 2): two releases by the same token from one locker, with the same reason, in the same
     * millisecond, from threads of the same name (two workers of a pool whose factory names every thread alike, both
     * seeing the claim stuck) both return true, though only one removed the claim. The script's idempotence test, "the
     * record hash holds the bytes this call would write", cannot tell the repeat of this call (a lost reply) from
     * another call that writes the same bytes: the record carries the rid, the thread name, the reason, the instant in
     * milliseconds and the token, and nothing of the call itself. (With distinct thread names the bytes differ and
     * the answer is right: that was checked too.)
     *
     * <p>Interleaving: T1 and T2 (locker op) each read holding(): token t. T1's script removes the claim, writes record
     * R, answers 1. T2's script finds no claim with t; HGET forced == R (T2's own record, byte for byte): answers 1.
     */
    @Test
    void twoReleasesOfOneClaimInTheSameMillisecondDoNotBothSayTheyRemovedIt() throws Exception {
        KeyColumn lock = lock("same-ms");
        RedisLocker holder = fixture.open(RedisWaitingFixture.withRid(fixture.onTarget(), "holder",
                Duration.ofSeconds(30)));
        SameMillisecond time = new SameMillisecond();
        RedisLocker op = fixture.open(fixture.onTarget().config(LockerConfig.builder().rid("op")
                .expiry(Duration.ofSeconds(30)).timeSource(time).build()).restartGuard(Duration.ZERO));
        Lease held = holder.acquire(lock, "held");
        long token = held.fencingToken();

        time.gate = new CyclicBarrier(2);
        ExecutorService pool = Executors.newFixedThreadPool(2, r -> new Thread(r, "force-worker")); // one name: a pool's fixed naming
        try {
            Future<Boolean> first = pool.submit(() -> op.forceRelease(lock, "stuck", token));
            Future<Boolean> second = pool.submit(() -> op.forceRelease(lock, "stuck", token));
            boolean a = first.get(1, TimeUnit.MINUTES);
            boolean b = second.get(1, TimeUnit.MINUTES);
            time.gate = null;
            assertTrue(a || b, "one of them removed the claim");
            assertEquals(1, (a ? 1 : 0) + (b ? 1 : 0), "both releases said they removed the claim with token " + token
                    + " (first: " + a + ", second: " + b + ")");
        } finally {
            pool.shutdownNow();
            time.gate = null;
        }
    }

    /**
     * Sound (change 1 on Redis): the holder of a claim released by token learns FORCE_RELEASED; the record carries the
     * token; a later claim of the same locker, lost within one expiry for another reason (its lock's hash deleted: the
     * server lost it), is not blamed on that release.
     */
    @Test
    void theRecordCarriesTheTokenAndALaterLossIsNotBlamedOnIt() {
        KeyColumn lock = lock("token-attribution");
        RedisLocker a = fixture.open(RedisWaitingFixture.withRid(fixture.onTarget(), "a", Duration.ofSeconds(30)));
        RedisLocker op = fixture.open(RedisWaitingFixture.withRid(fixture.onTarget(), "op", Duration.ofSeconds(30)));
        Lease first = a.acquire(lock, "first");
        long t1 = first.fencingToken();
        assertTrue(op.forceRelease(lock, "stuck", t1));
        assertEquals(LossReason.FORCE_RELEASED, assertThrows(ExpiredLockException.class, first::check).reason());
        assertEquals(t1, op.lastForcedRelease(lock).orElseThrow().releasedToken().orElseThrow());
        first.close();

        Lease second = a.acquire(lock, "second");
        assertTrue(second.fencingToken() > t1);
        fixture.admin().del(a.redisKey(lock));
        ExpiredLockException lost = assertThrows(ExpiredLockException.class, second::check);
        assertTrue(lost.reason() != LossReason.FORCE_RELEASED, "blamed on the earlier release: " + lost);
        second.close();
    }

    /** Sound (change 2): the conditional release run twice in a row by one thread says true once. */
    @Test
    void aSecondReleaseAfterTheFirstEndedSaysFalse() {
        KeyColumn lock = lock("twice");
        RedisLocker a = fixture.open(RedisWaitingFixture.withRid(fixture.onTarget(), "a", Duration.ofSeconds(30)));
        RedisLocker op = fixture.open(RedisWaitingFixture.withRid(fixture.onTarget(), "op", Duration.ofSeconds(30)));
        Lease held = a.acquire(lock, "held");
        long t = held.fencingToken();
        assertEquals(List.of(true, false), List.of(op.forceRelease(lock, "stuck", t), op.forceRelease(lock, "stuck", t)));
        held.close();
    }
}
