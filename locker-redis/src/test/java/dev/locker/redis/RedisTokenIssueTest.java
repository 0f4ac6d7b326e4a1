package dev.locker.redis;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockTransaction;
import dev.locker.api.PermanentLockingException;
import dev.locker.api.TemporaryLockingException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import redis.clients.jedis.exceptions.JedisDataException;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import static dev.locker.redis.RedisWaitingFixture.lock;
import static dev.locker.redis.RedisWaitingFixture.withRid;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Fencing tokens at the limits of the scripts' numbers: refused when they cannot rise, never repeated or lowered. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RedisTokenIssueTest {

    @RegisterExtension
    static final RedisWaitingFixture fixture = RedisWaitingFixture.onTarget("tokens");

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private RedisLocker locker(String name) {
        return fixture.open(withRid(fixture.onTarget(), name, Duration.ofSeconds(30)));
    }

    /** A lock whose last token no grant can exceed below 2^53: field "t" at 2^53 - 1. */
    private KeyColumn exhausted(RedisLocker via, String name) {
        KeyColumn lock = lock(name);
        byte[] key = via.redisKey(lock);
        fixture.admin().hset(key, b("t"), b(Long.toString((1L << 53) - 1)));
        fixture.admin().pexpire(key, 600_000);
        return lock;
    }

    private static void assertNamesTheLimit(PermanentLockingException e, KeyColumn lock) {
        assertTrue(e.getMessage().contains("fencing token"), e.getMessage());
        assertTrue(e.getMessage().contains(lock.toString()), "names the lock: " + e.getMessage());
    }

    @Test
    void anExhaustedLockIsAPermanentFailureForAcquire() {
        RedisLocker a = locker("ex-acquire");
        KeyColumn lock = exhausted(a, "acquire");
        assertNamesTheLimit(assertThrows(PermanentLockingException.class, () -> a.acquire(lock, "w")), lock);
        assertEquals(Optional.empty(), a.holder(lock));
    }

    @Test
    void anExhaustedLockIsAPermanentFailureForTheThreePhases() {
        RedisLocker a = locker("ex-phases");
        KeyColumn lock = exhausted(a, "phases");
        LockTransaction tx = new LockTransaction("w");
        PermanentLockingException e = assertThrows(PermanentLockingException.class, () -> {
            a.writeLock(lock, tx);
            a.checkLocks(tx);
        });
        a.deleteLocks(tx);
        assertNamesTheLimit(e, lock);
        assertEquals(Optional.empty(), a.holder(lock));
    }

    /** A waiting acquire must not wait out its maxWait on a refusal that will never change. */
    @Test
    void anExhaustedLockIsAPermanentFailureForAWaitingAcquire() {
        RedisLocker a = locker("ex-wait");
        KeyColumn lock = exhausted(a, "wait");
        assertNamesTheLimit(assertThrows(PermanentLockingException.class,
                () -> a.tryAcquire(lock, "w", Duration.ofSeconds(30)).ifPresent(Lease::close)), lock);
    }

    /** Also while another holds it: the waiter is queued, and the refusal comes once the holder releases. */
    @Test
    void anExhaustedLockIsAPermanentFailureForAWaiterServedAfterARelease() throws Exception {
        RedisLocker a = locker("ex-waiter-a");
        RedisLocker b = locker("ex-waiter-b");
        KeyColumn lock = lock("waiter");
        Lease held = a.acquire(lock, "first");
        byte[] key = a.redisKey(lock);
        // the holder's claim carries the last token; a "t" beside it, past what any grant may exceed
        fixture.admin().hset(key, b("t"), b(Long.toString((1L << 53) - 1)));
        Thread releaser = new Thread(() -> {
            try {
                Thread.sleep(200);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            held.close();
        });
        releaser.start();
        try {
            assertNamesTheLimit(assertThrows(PermanentLockingException.class,
                    () -> b.tryAcquire(lock, "second", Duration.ofSeconds(30)).ifPresent(Lease::close)), lock);
        } finally {
            releaser.join();
        }
    }

    /** All or nothing: the lock that could be granted is not left held when another of the set is exhausted. */
    @Test
    void anExhaustedLockIsAPermanentFailureForAcquireAllAndLeavesNothingHeld() {
        RedisLocker a = locker("ex-all");
        KeyColumn fine = lock("all-fine");
        KeyColumn bad = exhausted(a, "all-bad");
        PermanentLockingException e = assertThrows(PermanentLockingException.class,
                () -> a.acquireAll(List.of(fine, bad), "both"));
        assertNamesTheLimit(e, bad);
        assertEquals(Optional.empty(), a.holder(fine), "nothing of the set is left held");
        try (Lease again = locker("ex-all-other").acquire(fine, "free")) {
            assertTrue(again.isValid());
        }
    }

    @Test
    void anExhaustedLockIsAPermanentFailureForRunOnce() {
        RedisLocker a = locker("ex-run");
        KeyColumn job = exhausted(a, "run");
        assertNamesTheLimit(assertThrows(PermanentLockingException.class,
                () -> a.runOnce(job, "w", lease -> { })), job);
        assertTrue(a.lastRun(job).isEmpty(), "nothing ran");
    }

    /**
     * Forced release keeps field "t" (on purpose): the lock stays exhausted, and says so, rather than restart its
     * tokens; deleting the key (the operator's way out, in the README) makes it grantable again.
     */
    @Test
    void forcedReleaseKeepsAnExhaustedLockExhaustedAndDeletingItsKeyFreesIt() {
        RedisLocker a = locker("ex-force");
        KeyColumn lock = exhausted(a, "force");
        a.forceRelease(lock, "operator");
        assertThrows(PermanentLockingException.class, () -> a.acquire(lock, "w"));
        fixture.admin().del(a.redisKey(lock));
        try (Lease l = a.acquire(lock, "w")) {
            assertTrue(l.fencingToken() > 0);
        }
    }

    /**
     * A claim no script of ours wrote (an operator's HSET, another tool's restore) may carry a token past 2^63.
     * Removing it must keep a last token no grant can go below, never restart the lock's tokens. Forced release is
     * the path tried; release's fast path, withdraw and a scrubbing scan format "t" the same way.
     */
    @Test
    void removingAClaimWithATokenPastTheLongRangeNeverLowersTheNextToken() {
        RedisLocker a = locker("huge-claim");
        KeyColumn lock = lock("huge-claim");
        byte[] key = a.redisKey(lock);
        long now = fixture.serverMicros();
        // written now, 30 s, token delta 2^63 (the token is past the long range), counter 1, an inline owner
        fixture.admin().hset(key, b("c00000000000000ff"), b(now + " 30000 9223372036854775808 1 =someone"));
        fixture.admin().pexpire(key, 600_000);
        a.forceRelease(lock, "operator");
        Lease next;
        try {
            next = a.acquire(lock, "after");
        } catch (PermanentLockingException refused) {
            return; // refused: the last token could not be exceeded, which is what the limit is for
        }
        try (next) {
            assertTrue(next.fencingToken() > Long.MAX_VALUE / 2, "the token after a claim with token >= 2^63 is "
                    + next.fencingToken() + ": the lock's tokens went down (field t: "
                    + new String(fixture.admin().hget(key, b("t")) == null ? b("none") : fixture.admin().hget(key, b("t")),
                    StandardCharsets.UTF_8) + ")");
        }
    }

    private static final String A = "00000000000000aa";

    private static String hash(byte[] key) {
        StringBuilder out = new StringBuilder();
        fixture.admin().hgetAll(key).forEach((f, v) -> out.append(new String(f, StandardCharsets.UTF_8)).append('=')
                .append(new String(v, StandardCharsets.UTF_8)).append("; "));
        return out.toString();
    }

    /** The acquire script as RedisLocker calls it on a single server without marker: no guard, no eviction check. */
    private List<?> acquire(byte[] key, long counter) {
        return AcquireReply.of(RedisScript.ACQUIRE.run(fixture.admin(), 1, RedisScript.arg(key),
                RedisScript.arg(b("c" + A)), RedisScript.arg(b(Long.toHexString(counter))),
                RedisScript.arg(b("30000")), RedisScript.arg(b("=owner")), RedisScript.arg(b("0")),
                RedisScript.arg(b("1off")), RedisScript.arg(b("60001")), RedisScript.arg(b(""))),
                fixture.admin(), key, b("c" + A));
    }

    private long release(byte[] key, long counter) {
        return (Long) RedisScript.RELEASE.run(fixture.admin(), 1, RedisScript.arg(key), RedisScript.arg(b("c" + A)),
                RedisScript.arg(b(A + String.format("%016x", counter))), RedisScript.arg(b("chan")));
    }

    /**
     * "Never expire" written as {@code Duration.ofMillis(Long.MAX_VALUE)} is refused before any I/O, or holds the lock.
     * Formatted as a PEXPIRE past 2^63 it would print negative and delete the key of the lock just granted.
     */
    @Test
    void anExpiryOfLongMaxMillisIsRefusedOrHoldsTheLock() {
        Duration forever = Duration.ofMillis(Long.MAX_VALUE);
        KeyColumn lock = lock("forever");
        RedisLocker a;
        RedisLocker b;
        try {
            a = fixture.open(withRid(fixture.onTarget(), "forever-a", forever));
            b = fixture.open(withRid(fixture.onTarget(), "forever-b", forever));
        } catch (IllegalArgumentException refused) {
            return; // a clear error before any I/O is an answer too
        }
        try (Lease held = a.acquire(lock, "first")) {
            assertTrue(held.isValid(), "the first holder's lease is valid");
            boolean keyThere = fixture.admin().exists(a.redisKey(lock));
            Optional<Lease> second = b.tryAcquire(lock, "second", Duration.ZERO);
            second.ifPresent(Lease::close);
            assertFalse(second.isPresent(), "a second locker was granted the lock while the first holds it (the "
                    + "held lock's key " + (keyThere ? "existed" : "was already gone") + " before it asked)");
            assertTrue(keyThere, "the key of a held lock exists (the safety net deleted it at the grant)");
        }
    }

    /**
     * A field "t" the scripts never wrote ("1e19", which Lua's tonumber accepts) refuses the grant or yields a readable
     * claim. A token past 2^63 would overflow into a claim every later scan treats as dead: a second holder.
     */
    @Test
    void aTokenFieldOutOfRangeNeverYieldsAClaimOthersCannotSee() {
        KeyColumn lock = lock("t-out-of-range");
        RedisLocker a = fixture.open(withRid(fixture.onTarget(), "range-a", Duration.ofSeconds(30)));
        RedisLocker b = fixture.open(withRid(fixture.onTarget(), "range-b", Duration.ofSeconds(30)));
        byte[] key = a.redisKey(lock);
        fixture.admin().hset(key, b("t"), b("1e19"));
        fixture.admin().pexpire(key, 600_000);
        Lease held;
        try {
            held = a.acquire(lock, "first");
        } catch (RuntimeException refused) {
            return; // refusing the grant is an answer too
        }
        try (held) {
            Optional<Lease> second = b.tryAcquire(lock, "second", Duration.ZERO);
            second.ifPresent(Lease::close);
            assertFalse(second.isPresent(), "a second locker was granted the lock while the first holds it; "
                    + "the lock's hash: " + hash(key));
            assertTrue(held.fencingToken() > 0, "the token is positive, not " + held.fencingToken());
        }
    }

    /**
     * Near 2^53 a Lua double can no longer add one, so a grant there would repeat the last token. Every grant either
     * gets a token above the last one or is refused with a fencing-token error.
     */
    @Test
    void tokensKeepRisingNearTwoToTheFiftyThree() {
        byte[] key = new RedisKeys(fixture.prefix()).lockKey(lock("near-2-53"));
        fixture.admin().hset(key, b("t"), b(Long.toString((1L << 53) - 1)));
        fixture.admin().pexpire(key, 600_000);
        long previous = (1L << 53) - 1;
        for (long i = 1; i <= 3; i++) {
            List<?> r;
            try {
                r = acquire(key, i);
            } catch (JedisDataException refused) {
                // a grant whose token would not rise, or would reach 2^53, is refused (never a repeated token)
                assertTrue(refused.getMessage().contains("fencing token"), refused.getMessage());
                return;
            }
            assertEquals(1L, r.get(0), "granted");
            long token = (Long) r.get(1);
            assertTrue(token > previous, "grant " + i + ": token " + token + " not above the last one, " + previous);
            assertEquals(1L, release(key, i));
            previous = token;
        }
        assertTrue(fixture.serverMicros() < previous, "the server's clock is behind these tokens, as after a step back");
    }

    /**
     * A withdrawn grant leaves the last token in field "t", so the next grant's token rises even when the server's
     * clock is behind it. Clocks step back (NTP, a VM snapshot restore, a failover to a replica behind).
     *
     * <p>libfaketime cannot be preloaded into this redis-server build, so the test writes the state a clock step back
     * leaves: field "t" an hour ahead of TIME. The withdrawal is provoked with replicas=1 on a server without replicas:
     * WAIT answers 0.
     */
    @Test
    void aWithdrawnGrantKeepsTheLastTokenSoTokensRiseAfterAClockStepBack() {
        RedisLocker a = locker("holder");
        RedisLocker unacknowledged = fixture.open(withRid(fixture.onTarget().replicas(1)
                .replicaTimeout(Duration.ofMillis(10)), "unacknowledged", Duration.ofSeconds(30)));
        KeyColumn lock = lock("withdrawn");
        byte[] key = a.redisKey(lock);
        // the lock's hash as the server's clock stepping back an hour leaves it: its last token is ahead of TIME
        fixture.admin().hset(key, "t".getBytes(StandardCharsets.US_ASCII),
                Long.toString(fixture.serverMicros() + 3_600_000_000L).getBytes(StandardCharsets.US_ASCII));
        fixture.admin().pexpire(key, 600_000);
        long previous;
        try (Lease l = a.acquire(lock, "fenced writer")) {
            previous = l.fencingToken(); // last + 1, as it must be
        }
        assertThrows(TemporaryLockingException.class, () -> unacknowledged.acquire(lock, "granted, then withdrawn"));
        byte[] t = fixture.admin().hget(key, "t".getBytes(StandardCharsets.US_ASCII));
        try (Lease l = a.acquire(lock, "next writer")) {
            assertTrue(l.fencingToken() > previous, "the token went backwards: " + l.fencingToken() + " after "
                    + previous + " (field t after the withdrawal: "
                    + (t == null ? "absent" : new String(t, StandardCharsets.US_ASCII)) + ")");
        }
    }
}
