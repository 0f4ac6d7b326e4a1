package dev.locker.redis;

import dev.locker.testkit.RedisServer;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.args.Rawable;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import static dev.locker.redis.RedisWaitingFixture.lock;
import static dev.locker.redis.RedisWaitingFixture.withRid;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The boundaries of the acquire and release scripts' fast paths (acquire.lua: a free lock whose hash is empty or holds
 * only field "t" or only a released claim; release.lua: a hash that holds only our claim, which it leaves released in
 * place; both: the admission marker read inline). Whatever
 * else a hash holds (a dead claim, a tombstone, a queue entry, a token field next to our claim, a claim of the
 * earlier layout, a marker that does not vouch for the grant) must take the general path and get its answer, and the
 * fast path must write exactly what the general path writes. The scripts are called as RedisLocker calls them, on a
 * real redis-server, so that each test can set up the hash shape it is about.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RedisFastPathTest {

    private static final String A = "00000000000000aa";
    private static final String B = "00000000000000bb";
    private static final String EXPIRY_MS = "30000";
    /** An hour in microseconds: how far the server's clock is behind the last token after stepping back. */
    private static final long HOUR = 3_600_000_000L;

    @RegisterExtension
    static final RedisWaitingFixture fixture = RedisWaitingFixture.onTarget("fast");

    private static UnifiedJedis admin() {
        return fixture.admin();
    }

    /** A fresh lock's key, as the lockers of this fixture name it. */
    private byte[] key(String name) {
        return new RedisKeys(fixture.prefix()).lockKey(lock(name));
    }

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static String s(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }

    private static String nonce(String instance, long counter) {
        return instance + String.format("%016x", counter);
    }

    /** The acquire script without the admission marker (as in Cluster mode): no guard, no eviction check. */
    private List<?> acquire(byte[] key, String instance, long counter, String scrub) {
        return acquire(key, null, instance, counter, scrub, "0", "off");
    }

    private List<?> acquire(byte[] key, byte[] marker, String instance, long counter, String scrub, String guardMs,
                            String check) {
        List<byte[]> args = List.of(b("c" + instance), b(Long.toHexString(counter)), b(EXPIRY_MS),
                b("=owner " + instance), b(guardMs), b(scrub + check), ScriptArgs.keyTtl(b(EXPIRY_MS)), b(""));
        int keyCount = marker == null ? 1 : 2;
        Rawable[] call = new Rawable[keyCount + args.size()];
        call[0] = RedisScript.arg(key);
        if (marker != null) {
            call[1] = RedisScript.arg(marker);
        }
        for (int i = 0; i < args.size(); i++) {
            call[keyCount + i] = RedisScript.arg(args.get(i));
        }
        return AcquireReply.of(RedisScript.ACQUIRE.run(admin(), keyCount, call), admin(), key, b("c" + instance));
    }

    private long release(byte[] key, String instance, String nonce) {
        return (Long) RedisScript.RELEASE.run(admin(), 1, RedisScript.arg(key), RedisScript.arg(b("c" + instance)),
                RedisScript.arg(b(nonce)), RedisScript.arg(b(fixture.prefix() + "released")));
    }

    /** The release script as RedisLocker calls it: with how our claim starts as granted, and what it then becomes. */
    private long releaseAsGranted(byte[] key, String instance, long counter, long token, String expiryMs) {
        byte[] nonce = b(nonce(instance, counter));
        return (Long) RedisScript.RELEASE.run(admin(), 1, RedisScript.arg(key), RedisScript.arg(b("c" + instance)),
                RedisScript.arg(b(fixture.prefix() + "released")),
                RedisScript.arg(ScriptArgs.grantedStart(token, b(expiryMs), nonce)),
                RedisScript.arg(ScriptArgs.releasedValue(token, nonce)));
    }

    /** The renew script as RedisLocker calls it without a guard record. */
    private List<?> renew(byte[] key, String instance, long counter, String expiryMs) {
        return (List<?>) RedisScript.RENEW.run(admin(), 1, RedisScript.arg(key), RedisScript.arg(b("c" + instance)),
                RedisScript.arg(b(nonce(instance, counter))), RedisScript.arg(b(expiryMs)), RedisScript.arg(b("1")));
    }

    private String field(byte[] key, String field) {
        return s(admin().hget(key, b(field)));
    }

    private static long code(List<?> reply) {
        return (Long) reply.get(0);
    }

    // ---- acquire ----------------------------------------------------------------------------------------------------

    @Test
    void aFreeLockGetsTheClaimTheGeneralPathWouldWrite() {
        byte[] fast = key("fast");
        List<?> r = acquire(fast, A, 0x1a2b, "1");
        assertEquals(1L, code(r));
        long token = (Long) r.get(1);
        long written = (Long) r.get(2);
        assertEquals(written, token, "no earlier token: the token is the server's time");
        assertEquals(written + " 30000 0 1a2b =owner " + A, field(fast, "c" + A));
        assertEquals(1L, admin().hlen(fast), "the claim alone");
        long ttl = admin().pttl(fast);
        assertTrue(ttl > 30_000 && ttl <= 60_001, "the safety net: one expiry after the claim's, not " + ttl);

        // the same request where a tombstone of another locker sends it the general way: the same claim
        byte[] general = key("general");
        admin().hset(general, b("w" + B), b((fixture.serverMicros() + HOUR) + " 0000000000000001"));
        r = acquire(general, A, 0x1a2b, "1");
        assertEquals(1L, code(r));
        written = (Long) r.get(2);
        assertEquals(written + " 30000 0 1a2b =owner " + A, field(general, "c" + A));

        // a counter of 0 is written as "0" on both paths
        byte[] zero = key("zero");
        r = acquire(zero, A, 0, "1");
        assertEquals(r.get(2) + " 30000 0 0 =owner " + A, field(zero, "c" + A));
    }

    /** The fast path writes the claim's time from TIME's two parts: microseconds below 100000 are padded. */
    @Test
    void theWrittenTimeIsTheServersMicrosecondsWhateverTheirDigits() {
        byte[] key = key("digits");
        int padded = 0;
        long until = fixture.serverMicros() + 3_000_000L; // three first tenths of a second go by meanwhile
        for (int i = 1; padded < 3 && fixture.serverMicros() < until; i++) {
            List<?> r = acquire(key, A, i, "1");
            long written = (Long) r.get(2);
            assertEquals(written + " 30000 0 " + Long.toHexString(i) + " =owner " + A, field(key, "c" + A));
            assertEquals(1L, release(key, A, nonce(A, i)));
            assertEquals(Map.of("c" + A, released(written, Long.toHexString(i))), hash(key));
            if (written % 1_000_000 < 100_000) {
                padded++;
            }
            RedisServer.sleep(5);
        }
        assertTrue(padded > 0, "no grant fell in the first tenth of a second");
    }

    /*
     * The server's clock stepping back cannot be made here (libfaketime cannot be preloaded into Debian's redis-server:
     * it clashes with jemalloc's clock_gettime at start), so the test writes the state it leaves, as
     * RedisTokenIssueTest does: field "t" an hour ahead of TIME. Every grant then takes last + 1, the claim carries
     * a token delta that is not 0, and both fast paths (acquire: only "t"; release: only our claim) must keep it.
     */
    @Test
    void tokensRiseAcrossReleasesAndGrantsWhileTheServerClockIsBehindTheLastToken() {
        byte[] key = key("stepped-back");
        long last = fixture.serverMicros() + HOUR;
        admin().hset(key, b("t"), b(Long.toString(last)));
        admin().pexpire(key, 600_000);
        String[] instances = {A, B, A, B};
        for (int i = 0; i < instances.length; i++) {
            List<?> r = acquire(key, instances[i], i + 1, "1");
            assertEquals(1L, code(r));
            long token = (Long) r.get(1);
            assertEquals(last + 1, token, "grant " + i + ": the last token + 1");
            assertEquals(1L, admin().hlen(key), "the claim carries the token: no \"t\" while the lock is held");
            long delta = token - (Long) r.get(2);
            assertTrue(field(key, "c" + instances[i]).contains(" " + delta + " "), "the claim's token delta");
            assertEquals(1L, release(key, instances[i], nonce(instances[i], i + 1)));
            assertEquals(Map.of("c" + instances[i], released(token, Long.toHexString(i + 1))), hash(key),
                    "the released claim keeps its token");
            last = token;
        }
        // and through the lockers
        RedisLocker a = fixture.open(withRid(fixture.onTarget(), "stepped-a", Duration.ofSeconds(30)));
        RedisLocker b = fixture.open(withRid(fixture.onTarget(), "stepped-b", Duration.ofSeconds(30)));
        KeyColumn lock = lock("stepped-locker");
        byte[] lk = a.redisKey(lock);
        long t = fixture.serverMicros() + HOUR;
        admin().hset(lk, b("t"), b(Long.toString(t)));
        admin().pexpire(lk, 600_000);
        try (Lease l = a.acquire(lock, "first")) {
            assertEquals(t + 1, l.fencingToken());
        }
        try (Lease l = b.acquire(lock, "second")) {
            assertEquals(t + 2, l.fencingToken());
        }
        try (Lease l = a.acquire(lock, "third")) {
            assertEquals(t + 3, l.fencingToken());
        }
    }

    /** What the release's fast path leaves of a claim: released, keeping its token (see common.lua). */
    private static String released(long token, String counterHex) {
        return "0 0 " + token + " " + counterHex + " ";
    }

    private Map<String, String> hash(byte[] key) {
        Map<String, String> out = new TreeMap<>();
        admin().hgetAll(key).forEach((f, v) -> out.put(s(f), s(v)));
        return out;
    }

    /** A claim of the current layout, written at {@code written} (server µs), expiring expMs later, with this token. */
    private String claim(long written, long expMs, long token, String counterHex) {
        return written + " " + expMs + " " + (token - written) + " " + counterHex + " =someone";
    }

    @Test
    void aDeadClaimSendsTheAcquireTheGeneralWayWhichScrubsItAndKeepsItsToken() {
        long now = fixture.serverMicros();
        long deadToken = now + HOUR; // issued before the clock stepped back: the next token must be above it
        for (String scrub : List.of("1", "0")) {
            byte[] key = key("dead-" + scrub);
            admin().hset(key, b("c" + B), b(claim(now - 60_000_000L, 1, deadToken, "9")));
            List<?> r = acquire(key, A, 1, scrub);
            assertEquals(1L, code(r), "a dead claim holds nothing");
            assertEquals(deadToken + 1, r.get(1), "above the dead claim's token");
            if (scrub.equals("1")) {
                assertEquals(List.of("c" + A), List.copyOf(hash(key).keySet()), "scrubbed, and \"t\" gone again");
            } else {
                assertTrue(hash(key).containsKey("c" + B), "left alone without scrubbing");
            }
        }
    }

    @Test
    void aLiveClaimOfAnotherLockerSendsTheAcquireTheGeneralWayAndIsRefused() {
        byte[] key = key("held");
        long now = fixture.serverMicros();
        admin().hset(key, b("c" + B), b(claim(now, 30_000, now, "3")));
        List<?> r = acquire(key, A, 1, "1");
        assertEquals(0L, code(r), "held by the other claim");
        assertEquals("c" + B, s((byte[]) r.get(3)));
        assertNull(field(key, "c" + A), "ours is not kept");
    }

    @Test
    void aQueuedWaiterKeepsTheLockUntilItsEntryLapses() {
        String waiter = B + "0000000000000001";
        byte[] key = key("queued");
        admin().hset(key, b("n"), b("1"));
        admin().hset(key, b("q" + waiter), b("1 " + (fixture.serverMicros() + 60_000_000L) + "\n=waiter"));
        List<?> r = acquire(key, A, 1, "1");
        assertEquals(-5L, code(r), "promised to the waiter queued first");
        assertNull(field(key, "c" + A));

        byte[] lapsed = key("lapsed");
        admin().hset(lapsed, b("n"), b("1"));
        admin().hset(lapsed, b("q" + waiter), b("1 " + (fixture.serverMicros() - 1_000_000L) + "\n=waiter"));
        r = acquire(lapsed, A, 1, "1");
        assertEquals(1L, code(r), "a lapsed entry promises nothing");
        assertEquals(List.of("c" + A), List.copyOf(hash(lapsed).keySet()), "the entry and the queue's counter scrubbed");
    }

    @Test
    void aTombstoneOfOurLockerRefusesTheLateAcquiresItCovers() {
        byte[] key = key("tombstone");
        admin().hset(key, b("w" + A), b((fixture.serverMicros() + 600_000_000L) + " 0000000000000005"));
        assertEquals(-3L, code(acquire(key, A, 5, "1")), "withdrawn: grants nothing");
        assertNull(field(key, "c" + A));
        assertEquals(1L, code(acquire(key, A, 6, "1")), "a later acquire is not covered");
        assertTrue(hash(key).containsKey("w" + A), "the tombstone stays");
    }

    // ---- release ----------------------------------------------------------------------------------------------------

    @Test
    void aReleaseNeverLowersTheTokenField() {
        byte[] key = key("higher-t");
        List<?> r = acquire(key, A, 1, "1");
        long token = (Long) r.get(1);
        // a later claim's token, kept when it was scrubbed while ours lay dead (scrubbing off), say
        admin().hset(key, b("t"), b(Long.toString(token + 1000)));
        assertEquals(1L, release(key, A, nonce(A, 1)));
        assertEquals(Map.of("t", Long.toString(token + 1000)), hash(key));
    }

    @Test
    void aClaimReleasedAsGrantedBecomesWhatTheParsingReleaseWrites() {
        byte[] key = key("as-granted");
        long token = (Long) acquire(key, A, 0x1a2b, "1").get(1);
        assertEquals("0 0 " + token + " 1a2b ", s(ScriptArgs.releasedValue(token, b(nonce(A, 0x1a2b)))));
        assertEquals(token + " 30000 0 1a2b ", s(ScriptArgs.grantedStart(token, b(EXPIRY_MS), b(nonce(A, 0x1a2b)))));
        assertEquals(1L, releaseAsGranted(key, A, 0x1a2b, token, EXPIRY_MS));
        assertEquals(Map.of("c" + A, released(token, "1a2b")), hash(key));
        assertEquals(1L, releaseAsGranted(key, A, 0x1a2b, token, EXPIRY_MS), "a repeat finds it released");
        assertEquals(Map.of("c" + A, released(token, "1a2b")), hash(key));
    }

    @Test
    void aRenewedClaimIsReleasedByItsParseWithItsOwnToken() {
        byte[] key = key("renewed");
        long token = (Long) acquire(key, A, 3, "1").get(1);
        RedisServer.sleep(5);
        assertEquals(1L, (Long) renew(key, A, 3, "40000").get(0));
        assertFalse(field(key, "c" + A).startsWith(token + " 30000 0 3 "), "the renewal moved the expiry");
        assertEquals(1L, releaseAsGranted(key, A, 3, token, EXPIRY_MS));
        assertEquals(Map.of("c" + A, released(token, "3")), hash(key));
    }

    @Test
    void aStaleExpectedStartFallsBackToTheParseAndKeepsTheClaimsToken() {
        byte[] key = key("stale-start");
        long token = (Long) acquire(key, A, 5, "1").get(1);
        // an expiry the claim was not written with, and a token below the claim's (an earlier claim's, say)
        assertEquals(1L, releaseAsGranted(key, A, 5, token, "29999"));
        assertEquals(Map.of("c" + A, released(token, "5")), hash(key));
        long second = (Long) acquire(key, A, 6, "1").get(1);
        assertEquals(1L, releaseAsGranted(key, A, 6, second - 1, EXPIRY_MS));
        assertEquals(Map.of("c" + A, released(second, "6")), hash(key), "the claim's token, not the one passed");
    }

    @Test
    void aReleaseAsGrantedNextToATokenFieldTakesTheGeneralWayWithTheNonceItNames() {
        byte[] key = key("granted-next-to-t");
        long token = (Long) acquire(key, A, 0x2c, "1").get(1);
        admin().hset(key, b("t"), b(Long.toString(token + 1000)));
        assertEquals(1L, releaseAsGranted(key, A, 0x2c, token, EXPIRY_MS));
        assertEquals(Map.of("t", Long.toString(token + 1000)), hash(key), "our claim removed, the higher token kept");
    }

    @Test
    void anExpectedStartOfAnotherCounterReleasesNothing() {
        byte[] key = key("other-start");
        long token = (Long) acquire(key, A, 0x12, "1").get(1);
        String claim = field(key, "c" + A);
        assertEquals(0L, releaseAsGranted(key, A, 0x13, token, EXPIRY_MS), "another transaction's claim in our field");
        assertEquals(claim, field(key, "c" + A), "left alone");
    }

    @Test
    void aReleaseDeletesOnlyTheClaimItsNonceNames() {
        byte[] key = key("nonce");
        List<?> r = acquire(key, A, 0x12, "1");
        String claim = field(key, "c" + A);
        assertEquals(0L, release(key, A, nonce(A, 0x13)), "another transaction's claim in our field");
        assertEquals(0L, release(key, A, nonce(A, 0x12).substring(1)), "a nonce of another shape");
        assertEquals(0L, release(key, A, "0" + nonce(A, 0x12)), "a nonce of another shape");
        assertEquals(claim, field(key, "c" + A), "left alone");
        assertEquals(1L, release(key, A, nonce(A, 0x12)));
        assertEquals(Map.of("c" + A, released((Long) r.get(1), "12")), hash(key));
    }

    @Test
    void aClaimOfTheEarlierLayoutIsReleasedByItsNonce() {
        byte[] key = key("old-layout");
        long now = fixture.serverMicros();
        long token = now + 7;
        // 0.1.0: "<written> <expiry> <token> <nonce>\n<owner bytes>"
        admin().hset(key, b("c" + A), b(now + " " + (now + 30_000_000L) + " " + token + " " + nonce(A, 4)
                + "\nrid host 1 main why"));
        admin().pexpire(key, 60_000);
        assertEquals(0L, release(key, A, nonce(A, 5)));
        assertEquals(1L, release(key, A, nonce(A, 4)));
        assertEquals(Map.of("t", Long.toString(token)), hash(key));
    }

    @Test
    void aReleaseWithWaitersQueuedTakesTheGeneralWay() {
        byte[] key = key("waiters");
        String waiter = B + "0000000000000002";
        long token = (Long) acquire(key, A, 1, "1").get(1);
        admin().hset(key, b("n"), b("1"));
        admin().hset(key, b("q" + waiter), b("1 " + (fixture.serverMicros() + 60_000_000L) + "\n=waiter"));
        assertEquals(1L, release(key, A, nonce(A, 1)));
        Map<String, String> left = hash(key);
        assertEquals(Long.toString(token), left.get("t"));
        assertFalse(left.containsKey("c" + A));
        assertTrue(left.containsKey("q" + waiter), "the waiter stays queued (and was woken: RedisWaitingTest)");
    }

    // ---- released claims ---------------------------------------------------------------------------------------------

    private Object run(RedisScript script, byte[] key, String... args) {
        List<byte[]> a = new java.util.ArrayList<>();
        for (String x : args) {
            a.add(b(x));
        }
        return script.run(admin(), key, a);
    }

    /** A claim released on the fast path is dead to every script that reads claims: nobody holds the lock. */
    @Test
    void aReleasedClaimIsDeadToEveryScript() {
        byte[] key = key("released-dead");
        List<?> r = acquire(key, A, 7, "1");
        long token = (Long) r.get(1);
        assertEquals(1L, release(key, A, nonce(A, 7)));
        assertEquals(Map.of("c" + A, released(token, "7")), hash(key));
        assertEquals(List.of(0L), run(RedisScript.HOLDER, key, "0"), "no holder");
        assertEquals(List.of(-1L), run(RedisScript.VERIFY, key, "c" + A, nonce(A, 7), Long.toString(token)),
                "our claim is gone, not ours");
        assertEquals(List.of(-1L), run(RedisScript.RENEW, key, "c" + A, nonce(A, 7), EXPIRY_MS, "0"),
                "a released claim cannot be renewed back");
        assertEquals(Map.of("c" + A, released(token, "7")), hash(key), "renewal wrote nothing");
        assertEquals(List.of(0L), RedisScript.LIST.run(admin(), List.of(key), List.of()), "not listed");
        byte[] records = new RedisKeys(fixture.prefix()).recordKey(lock("released-dead"));
        assertEquals(0L, RedisScript.RECORD.run(admin(), List.of(key, records),
                List.of(b("w"), b("run"), b("v"), b("c" + A), b(nonce(A, 7)), b(Long.toString(token)))),
                "a released claim records nothing");
        assertEquals(1L, release(key, A, nonce(A, 7)), "a repeated release (its first reply lost) finds it released");
        assertEquals(Map.of("c" + A, released(token, "7")), hash(key), "and leaves it as it was");
        assertEquals(0L, run(RedisScript.FORCE, key, fixture.prefix() + "released"),
                "a forced release finds no claim its release left behind");
        assertEquals(Map.of("t", Long.toString(token)), hash(key), "and keeps the token in \"t\"");
    }

    /** force.lua with an expected token (ARGV 2) and the records' hash (KEYS 2). */
    private long forceByToken(byte[] key, byte[] records, long token, String record) {
        return (Long) RedisScript.FORCE.run(admin(), List.of(key, records), List.of(b(fixture.prefix() + "released"),
                b(Long.toString(token)), b("forced"), b(record)));
    }

    /**
     * A forced release by token removes only the live claim that carries it, with the record in the same script; a
     * released claim (which keeps its token in its field), a dead claim, or another token change nothing.
     */
    @Test
    void aForcedReleaseByTokenRemovesOnlyTheLiveClaimThatCarriesIt() {
        RedisKeys keys = new RedisKeys(fixture.prefix());
        dev.locker.api.KeyColumn lock = lock("force-token");
        byte[] key = keys.lockKey(lock);
        byte[] records = keys.recordKey(lock);
        long tokenA = (Long) acquire(key, A, 7, "1").get(1);
        assertEquals(1L, release(key, A, nonce(A, 7)));
        long now = fixture.serverMicros();
        long deadToken = tokenA + 1;
        admin().hset(key, b("c" + B), b(claim(now - 60_000_000L, 1, deadToken, "9"))); // expired
        Map<String, String> before = hash(key);
        assertEquals(0L, forceByToken(key, records, tokenA, "r1"), "a released claim's token");
        assertEquals(0L, forceByToken(key, records, deadToken, "r2"), "a dead claim's token");
        assertEquals(0L, forceByToken(key, records, deadToken + 1, "r3"), "nobody's token");
        assertEquals(before, hash(key), "nothing changed");
        assertNull(admin().hget(records, b("forced")), "nothing recorded");

        admin().del(key);
        long tokenB = (Long) acquire(key, B, 3, "1").get(1);
        String claimB = field(key, "c" + B);
        assertEquals(0L, forceByToken(key, records, tokenB - 1, "r4"));
        assertEquals(claimB, field(key, "c" + B), "another token leaves the holder alone");
        assertEquals(1L, forceByToken(key, records, tokenB, "r5"));
        assertEquals(Map.of("t", Long.toString(tokenB)), hash(key), "the claim is gone, its token kept in \"t\"");
        assertEquals("r5", s(admin().hget(records, b("forced"))), "recorded in the same script");
        assertEquals(0L, forceByToken(key, records, tokenB, "r6"), "and only once");
        assertEquals("r5", s(admin().hget(records, b("forced"))));
        assertTrue((Long) acquire(key, A, 8, "1").get(1) > tokenB, "the next token is higher");
    }

    /**
     * The next grant's token is above a released claim's, whoever's field it lies in and whichever path the grant
     * takes; a released claim of ours is overwritten, another's scrubbed when scrubbing is on (left alone when off,
     * as the general path leaves dead claims). The token is an hour ahead of the server's clock, as a clock that
     * stepped back leaves it.
     */
    @Test
    void theNextGrantKeepsAReleasedClaimsTokenOnEveryPath() {
        long last = fixture.serverMicros() + HOUR;
        // ours, fast path
        byte[] key = key("released-ours");
        admin().hset(key, b("c" + A), b(released(last, "5")));
        List<?> r = acquire(key, A, 6, "0");
        assertEquals(last + 1, r.get(1));
        assertEquals(List.of("c" + A), List.copyOf(hash(key).keySet()), "overwritten in place");
        assertTrue(field(key, "c" + A).endsWith(" 6 =owner " + A), field(key, "c" + A));
        // another locker's, scrubbing on (fast path) and off (general path)
        for (String scrub : List.of("1", "0")) {
            byte[] other = key("released-other-" + scrub);
            admin().hset(other, b("c" + B), b(released(last, "5")));
            r = acquire(other, A, 1, scrub);
            assertEquals(last + 1, r.get(1), "scrub " + scrub);
            if (scrub.equals("1")) {
                assertEquals(List.of("c" + A), List.copyOf(hash(other).keySet()), "scrubbed");
            } else {
                assertEquals(released(last, "5"), field(other, "c" + B), "left alone without scrubbing");
            }
        }
        // next to a tombstone of another locker (general path): scrubbed, its token carried by our claim
        byte[] tomb = key("released-tomb");
        admin().hset(tomb, b("c" + B), b(released(last, "5")));
        admin().hset(tomb, b("w" + B), b((fixture.serverMicros() + HOUR) + " 0000000000000001"));
        r = acquire(tomb, A, 1, "1");
        assertEquals(last + 1, r.get(1));
        assertEquals(List.of("c" + A, "w" + B), List.copyOf(hash(tomb).keySet()));
        // a released claim at the token limit refuses the grant on the fast path, as "t" there does
        byte[] limit = key("released-limit");
        admin().hset(limit, b("c" + A), b(released(9_007_199_254_740_992L, "5")));
        org.junit.jupiter.api.Assertions.assertThrows(redis.clients.jedis.exceptions.JedisDataException.class,
                () -> acquire(limit, A, 6, "1"));
        assertEquals(released(9_007_199_254_740_992L, "5"), field(limit, "c" + A), "nothing written");
    }

    /**
     * What parse cannot read (a counter over 16 hex digits) is no released claim: the general path scrubs it as
     * unreadable, and the fast path must not read a token from it either.
     */
    @Test
    void aValueThatOnlyLooksReleasedTakesTheGeneralWay() {
        byte[] key = key("released-long");
        admin().hset(key, b("c" + A), b("0 0 " + (fixture.serverMicros() + HOUR) + " 12345678901234567 "));
        List<?> r = acquire(key, A, 1, "1");
        assertEquals(1L, code(r));
        assertEquals(r.get(2), r.get(1), "the token is the server's time, as the general path reads it");
    }

    /** Through the lockers: a released lock has no holder, lists nothing, and a forced release finds nothing. */
    @Test
    void aReleasedLockHasNoHolderThroughTheLockers() {
        RedisLocker a = fixture.open(withRid(fixture.onTarget(), "released-a", Duration.ofSeconds(30)));
        RedisLocker b = fixture.open(withRid(fixture.onTarget(), "released-b", Duration.ofSeconds(30)));
        KeyColumn lock = lock("released-locker");
        long first;
        try (Lease l = a.acquire(lock, "first")) {
            first = l.fencingToken();
            assertTrue(b.holder(lock).isPresent());
        }
        assertEquals(1L, admin().hlen(a.redisKey(lock)), "released in place");
        assertFalse(b.holder(lock).isPresent());
        assertFalse(a.holder(lock).isPresent());
        assertFalse(b.forceRelease(lock, "nothing to force"), "a released claim is no claim to force");
        try (Lease l = b.acquire(lock, "second")) {
            assertTrue(l.fencingToken() > first);
        }
    }

    // ---- admission --------------------------------------------------------------------------------------------------

    private long lastSave() {
        return (Long) admin().eval("return redis.call('LASTSAVE')");
    }

    /** Waits for a server second later than LASTSAVE: only then does a grant write a marker (see admit). */
    private void awaitSecondAfterLastSave() {
        while (fixture.serverMicros() / 1_000_000 <= lastSave()) {
            RedisServer.sleep(50);
        }
    }

    @Test
    void aMarkerThatDoesNotVouchForTheGrantSendsItToAdmit() {
        assumeTrue(admin() instanceof RedisClient, "the marker exists on a single server only");
        awaitSecondAfterLastSave();
        byte[] marker = new RedisKeys(fixture.prefix()).markerKey(b("0"));
        // another boot's marker (LASTSAVE differs): admit reads INFO and writes this boot's, vouching (guard 0, ok)
        admin().psetex(marker, 60_000, b("1 1 1"));
        assertEquals(1L, code(acquire(key("other-boot"), marker, A, 1, "1", "0", "fail")));
        assertEquals(Long.toString(lastSave()), s(admin().get(marker)), "a vouching marker of this boot");
        // a vouching marker of another boot vouches for nothing: admit reads INFO again
        admin().psetex(marker, 60_000, b(Long.toString(lastSave() - 1)));
        assertEquals(1L, code(acquire(key("other-boot-vouching"), marker, A, 5, "1", "0", "fail")));
        assertEquals(Long.toString(lastSave()), s(admin().get(marker)), "written again for this boot");

        // this boot's marker, but one that says the server may evict: never trusted, INFO is read again
        admin().psetex(marker, 60_000, b(lastSave() + " 1 0"));
        assertEquals(1L, code(acquire(key("said-evicting"), marker, A, 2, "1", "0", "fail")),
                "the server does not evict");

        // this boot's marker saying the server came up just now: the restart guard refuses
        marker = new RedisKeys(fixture.prefix()).markerKey(b("5000"));
        admin().psetex(marker, 60_000, b(lastSave() + " " + fixture.serverMicros() + " 1"));
        List<?> r = acquire(key("just-booted"), marker, A, 3, "1", "5000", "fail");
        assertEquals(-2L, code(r), "up for less than the guard: " + r);

        // and a marker that vouches: granted on the fast path, the marker left as it was
        String vouching = Long.toString(lastSave());
        admin().psetex(marker, 60_000, b(vouching));
        assertEquals(1L, code(acquire(key("vouched"), marker, A, 4, "1", "5000", "fail")));
        assertEquals(vouching, s(admin().get(marker)));
    }
}
