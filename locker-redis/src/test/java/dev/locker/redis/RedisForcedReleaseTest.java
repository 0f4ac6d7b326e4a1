package dev.locker.redis;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockerConfig;
import dev.locker.api.LossReason;
import dev.locker.api.TimeSource;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import redis.clients.jedis.UnifiedJedis;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static dev.locker.redis.RedisWaitingFixture.lock;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Forced release by token on a real redis-server: its answers, its record, resends, and tokens at the 2^53 limit. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RedisForcedReleaseTest {

    private static final String A = "00000000000000aa";
    private static final String B = "00000000000000bb";
    private static final long LIMIT = 1L << 53;

    @RegisterExtension
    static final RedisWaitingFixture fixture = RedisWaitingFixture.onTarget("forced");

    private static UnifiedJedis admin() {
        return fixture.admin();
    }

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static String s(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }

    private static String resource(String name) {
        try (InputStream in = RedisForcedReleaseTest.class.getResourceAsStream(name)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** force.lua without the expected-token path (a test resource), on today's prelude, as older lockers run it. */
    private static final String OLD_FORCE = resource("common.lua") + "\n" + resource("force-without-token.lua");

    private Map<String, String> hash(byte[] key) {
        Map<String, String> out = new TreeMap<>();
        admin().hgetAll(key).forEach((f, v) -> out.put(s(f), s(v)));
        return out;
    }

    private static String claim(long written, long expMs, long token, String counterHex) {
        return written + " " + expMs + " " + (token - written) + " " + counterHex + " =someone";
    }

    private byte[] channel() {
        return b(fixture.prefix() + "released");
    }

    /** The call shape of RedisLocker.deleteAllClaims and of older lockers: one key, ARGV = the channel. */
    private Object newUnconditional(byte[] key) {
        return RedisScript.FORCE.run(admin(), key, List.of(channel()));
    }

    private Object oldUnconditional(byte[] key) {
        return admin().eval(b(OLD_FORCE), List.of(key), List.of(channel()));
    }

    /** As RedisLocker resends a call after a failure that may have reached the server (ARGV 5). */
    private long resendForceByToken(byte[] key, byte[] records, String token, String record) {
        return (Long) RedisScript.FORCE.run(admin(), List.of(key, records),
                List.of(channel(), b(token), b("forced"), b(record), b("1")));
    }

    private long forceByToken(byte[] key, byte[] records, String token, String record) {
        return (Long) RedisScript.FORCE.run(admin(), List.of(key, records),
                List.of(channel(), b(token), b("forced"), b(record)));
    }

    /** Writes {@code fields} into both keys, identically, with the same TTL. */
    private void same(byte[] k1, byte[] k2, Map<String, String> fields) {
        for (byte[] k : List.of(k1, k2)) {
            admin().del(k);
            fields.forEach((f, v) -> admin().hset(k, b(f), b(v)));
            if (!fields.isEmpty()) {
                admin().pexpire(k, 600_000);
            }
        }
    }

    /**
     * The unconditional call (one key, ARGV = channel: what an older locker and deleteAllClaims send) answers and
     * writes exactly what force.lua without the token path does. Every hash shape is tried: none, a live claim
     * alone, a released claim with "t", live + dead + tombstone + waiter, a claim of the 0.1.0 layout.
     */
    @Test
    void theUnconditionalCallGetsWhatTheScriptWithoutTheTokenPathGave() {
        RedisKeys keys = new RedisKeys(fixture.prefix());
        long now = fixture.serverMicros();
        List<Map<String, String>> shapes = new ArrayList<>();
        shapes.add(Map.of());
        shapes.add(Map.of("c" + A, claim(now, 30_000, now, "7")));
        shapes.add(Map.of("c" + A, "0 0 " + (now - 5) + " 7 ", "t", Long.toString(now - 9)));
        shapes.add(Map.of("c" + A, claim(now, 30_000, now + 3, "7"), "c" + B, claim(now - 90_000_000L, 1, now - 89, "2"),
                "w" + B, (now + 60_000_000L) + " 2", "n", "1",
                "qcccccccccccccccc0000000000000001", "1 " + (now + 60_000_000L) + "\n=waiter", "t", Long.toString(now - 100)));
        shapes.add(Map.of("c" + A, now + " " + (now + 30_000_000L) + " " + (now + 4) + " " + A + "0000000000000004"
                + "\nrid host 1 main why"));
        int i = 0;
        for (Map<String, String> shape : shapes) {
            byte[] k1 = keys.lockKey(lock("old-" + i));
            byte[] k2 = keys.lockKey(lock("new-" + i));
            i++;
            same(k1, k2, shape);
            Object before = oldUnconditional(k1);
            Object after = newUnconditional(k2);
            assertEquals(before, after, "reply for " + shape);
            assertEquals(hash(k1), hash(k2), "hash left for " + shape);
            assertEquals(admin().pttl(k1) > 0, admin().pttl(k2) > 0, "TTL kept for " + shape);
        }
    }

    /** The highest token a grant can make, 2^53 - 1, is matched exactly and kept in "t". */
    @Test
    void theHighestTokenAGrantCanMakeIsReleasedByIt() {
        RedisKeys keys = new RedisKeys(fixture.prefix());
        KeyColumn lock = lock("limit-1");
        byte[] key = keys.lockKey(lock);
        byte[] records = keys.recordKey(lock);
        long now = fixture.serverMicros();
        admin().hset(key, b("c" + A), b(claim(now, 30_000, LIMIT - 1, "7")));
        assertEquals(0L, forceByToken(key, records, Long.toString(LIMIT - 2), "r0"));
        assertEquals(0L, forceByToken(key, records, Long.toString(LIMIT), "r0"));
        assertEquals(1L, forceByToken(key, records, Long.toString(LIMIT - 1), "r1"));
        assertEquals(Map.of("t", Long.toString(LIMIT - 1)), hash(key));
        assertEquals("r1", s(admin().hget(records, b("forced"))));
    }

    /**
     * No grant makes a token at or above 2^53; only a hash written by something else could hold one. A release by
     * 2^53 must not remove a live claim whose token is 2^53 + 2, although {@code fmt} writes both as 2^53.
     */
    @Test
    void aReleaseBy2To53RemovesOnlyAClaimThatCarries2To53() {
        RedisKeys keys = new RedisKeys(fixture.prefix());
        KeyColumn lock = lock("limit-2");
        byte[] key = keys.lockKey(lock);
        byte[] records = keys.recordKey(lock);
        long now = fixture.serverMicros();
        String value = claim(now, 30_000, LIMIT + 2, "7");
        admin().hset(key, b("c" + A), b(value));
        long removed = forceByToken(key, records, Long.toString(LIMIT), "r-wrong");
        assertEquals(0L, removed, "a release by 2^53 removed the claim carrying 2^53 + 2; left: " + hash(key)
                + ", recorded: " + s(admin().hget(records, b("forced"))));
        assertEquals(value, s(admin().hget(key, b("c" + A))));
    }

    /**
     * A release by token whose reply was lost is resent on a fresh connection, marked as a resend. The first call
     * removed the claim and wrote the record, so the resend finds no claim with the token. It answers 1 all the same,
     * because the record it would write is there byte for byte. A first attempt, or a different record, answers 0.
     */
    @Test
    void aRepeatOfAReleaseByTokenWhoseReplyWasLostSaysItRemovedTheClaim() {
        RedisKeys keys = new RedisKeys(fixture.prefix());
        byte[] key = keys.lockKey(lock("repeat"));
        byte[] records = keys.recordKey(lock("repeat"));
        long now = fixture.serverMicros();
        long token = now + 3;
        admin().hset(key, b("c" + A), b(claim(now, 30_000, token, "7")));
        admin().pexpire(key, 600_000);

        assertEquals(1L, forceByToken(key, records, Long.toString(token), "record-of-this-call"));
        assertEquals(1L, resendForceByToken(key, records, Long.toString(token), "record-of-this-call"),
                "the resend of a release that removed the claim; left: " + hash(key));
        assertEquals(0L, forceByToken(key, records, Long.toString(token), "record-of-this-call"),
                "a first attempt writing the same bytes (another call) removed nothing");
        assertEquals(0L, resendForceByToken(key, records, Long.toString(token), "record-of-another-call"),
                "another release of the same token removed nothing");
        assertEquals("record-of-this-call", s(admin().hget(records, b("forced"))), "the record stays the first one");
    }

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
     * Two releases by one token from one locker, same reason, same millisecond, from threads of the same name. Both
     * write the same record bytes, yet only the one that removed the claim may answer true.
     *
     * <p>Interleaving: T1 and T2 (locker op) each read holding(): token t. T1's script removes the claim, writes record
     * R, answers 1. T2's script finds no claim with t and the same record R, and must answer 0.
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
     * The holder of a claim released by token learns FORCE_RELEASED, and the record carries the token. A later claim
     * of the same locker, lost within one expiry for another reason, is not blamed on that release.
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

    /** The conditional release run twice in a row by one thread says true once. */
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

    /** Two forced releases by token from one thread at one frozen millisecond answer true once, then false. */
    @Test
    void aSecondForcedReleaseWritingTheSameRecordBytesIsNotToldItRemovedTheClaim() {
        VirtualClock clock = new VirtualClock();
        RedisLocker holder = fixture.open(fixture.onTarget().config(LockerConfig.builder()
                .rid("holder-" + LockerConfig.randomRid().substring(0, 8)).expiry(Duration.ofSeconds(30)).build())
                .restartGuard(Duration.ZERO));
        RedisLocker operator = fixture.open(fixture.onTarget().config(LockerConfig.builder()
                .rid("operator-" + LockerConfig.randomRid().substring(0, 8)).expiry(Duration.ofSeconds(30))
                .timeSource(clock).build()).restartGuard(Duration.ZERO));
        KeyColumn lock = lock("force-twice");
        Lease l = holder.acquire(lock, "held");
        long token = l.fencingToken();
        assertTrue(operator.forceRelease(lock, "same reason", token), "the first call removes the claim");
        assertFalse(operator.forceRelease(lock, "same reason", token),
                "a second call (same record bytes, no resend) removed nothing and must say so");
        l.close();
    }
}
