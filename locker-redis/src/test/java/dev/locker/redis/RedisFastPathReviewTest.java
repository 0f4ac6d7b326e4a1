package dev.locker.redis;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
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
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Adversarial review of the acquire and release scripts' fast paths (branch lua, issue 14).
 *
 * <p>The fast paths themselves were found to answer as the general path does: a differential run of the scripts of
 * main against those of lua (same hash, same arguments, same TIME reply fed to both, about 20 000 random cases over
 * every script: empty hashes, "t" alone with odd values, our claim alone in every layout and digit shape, dead and live
 * claims, tombstones, queue entries, "n", look-alike fields, nonces of other shapes, markers, guards and checks) found
 * no difference in reply, hash or TTL but one harmless one (a negative "t" is rewritten to "0" by the general path's
 * scan before a refusal, and left as it is by the fast path). The findings below are therefore inputs that break the
 * protocol on BOTH paths: they were there before issue 14, the fast paths keep them. Each test fails today; it is
 * disabled so that the build stays green.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RedisFastPathReviewTest {

    private static final String A = "00000000000000aa";

    @RegisterExtension
    static final RedisWaitingFixture fixture = RedisWaitingFixture.onTarget("fastreview");

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static String hash(byte[] key) {
        StringBuilder out = new StringBuilder();
        fixture.admin().hgetAll(key).forEach((f, v) -> out.append(new String(f, StandardCharsets.UTF_8)).append('=')
                .append(new String(v, StandardCharsets.UTF_8)).append("; "));
        return out.toString();
    }

    private long serverMicros() {
        return (Long) fixture.admin().eval(
                "local t = redis.call('TIME') return tonumber(t[1]) * 1000000 + tonumber(t[2])");
    }

    /** The acquire script as RedisLocker calls it on a single server without marker: no guard, no eviction check. */
    private List<?> acquire(byte[] key, long counter) {
        return AcquireReply.of(RedisScript.ACQUIRE.run(fixture.admin(), 1, RedisScript.arg(key),
                RedisScript.arg(b("c" + A)), RedisScript.arg(b(A + String.format("%016x", counter))),
                RedisScript.arg(b("30000")), RedisScript.arg(b("=owner")), RedisScript.arg(b("0")),
                RedisScript.arg(b("1")), RedisScript.arg(b("off")), RedisScript.arg(b("")), RedisScript.arg(b("3000"))),
                fixture.admin(), key, b("c" + A));
    }

    private long release(byte[] key, long counter) {
        return (Long) RedisScript.RELEASE.run(fixture.admin(), 1, RedisScript.arg(key), RedisScript.arg(b("c" + A)),
                RedisScript.arg(b(A + String.format("%016x", counter))), RedisScript.arg(b("chan")));
    }

    /*
     * Finding 1 (most severe: two holders from a configuration the code says it accepts).
     * LockerConfig accepts any positive expiry, and AbstractLocker.saturatedNanos says outright that "an expiry above
     * ~292 years is accepted"; RedisLocker sends it to the scripts as whole milliseconds. "Never expire" written as
     * Duration.ofMillis(Long.MAX_VALUE) (or any expiry from about 4.6e18 ms on) then grants a lease whose key is gone
     * at once: the fast path's safety net PEXPIRE 2 * expms + 1 (the general path's keep_until computes the same)
     * is formatted with string.format('%d') from a double at or above 2^63, which prints -9223372036854775808, and a
     * PEXPIRE with a negative time deletes the key. (With expms = Long.MAX_VALUE the claim's own <expms> digits
     * overflow the same way, so even a surviving claim would be unreadable, i.e. dead, to every scan.) The holder's
     * lease believes it holds for ~73 years (saturated); the next locker is granted the same lock at once.
     * Between ~4.6e18 - now and 2^63 ms the PEXPIRE fails instead ("invalid expire time") after the HSET: the script
     * errors, RedisLocker rethrows without withdrawing (replicas = 0), and a claim nobody holds blocks the lock.
     * Fix: refuse such an expiry before any I/O (cap it where the scripts' doubles and PEXPIRE stay exact, e.g.
     * 2^53 us), as the common rules ask for bad input.
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
            return; // a clear error before any I/O is the fix
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

    /*
     * Finding 2: a field "t" that is not a token the scripts wrote (the brief's "fields named like t but with other
     * values": an operator's HSET, a restore from another tool, a bug) fails OPEN. The fast path reads it with
     * tonumber, which in Redis's Lua 5.1 accepts "1e19", "inf" or "0x7fffffffffffffff"; the grant's token is then
     * last + 1 at or above 2^63, the claim's token delta is formatted with %d and overflows to -9223372036854775808,
     * so the claim just written is unreadable (parse wants digits) and every later scan treats it as dead: the next
     * locker is granted the held lock. The holder's token comes back as Long.MIN_VALUE (Redis converts the double
     * by overflowing cast), i.e. the lowest token ever, which a fencing resource refuses or, worse, compares wrongly.
     * The general path (main) does exactly the same. Fix: a "t" that does not parse as a plain integer below 2^53
     * should refuse the grant (or be treated as unreadable and raise an error), never yield a claim nobody can read.
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
            return; // refusing the grant is a fix
        }
        try (held) {
            Optional<Lease> second = b.tryAcquire(lock, "second", Duration.ZERO);
            second.ifPresent(Lease::close);
            assertFalse(second.isPresent(), "a second locker was granted the lock while the first holds it; "
                    + "the lock's hash: " + hash(key));
            assertTrue(held.fencingToken() > 0, "the token is positive, not " + held.fencingToken());
        }
    }

    /*
     * Finding 3 (low: needs a last token at 2^53 - 1 or above, i.e. a server clock that once read a date past the
     * year 2255, or a corrupted "t"): tokens stop rising. last + 1 is computed in Lua doubles, so from 2^53 on it is
     * last itself: every grant gets the same token 9007199254740992 while the key keeps "t". The fast acquire and
     * the fast release (token ts + tokd, a double) both do it, as the general path did. The protocol promises
     * strictly increasing tokens "while the hash keeps the last one". Fix: refuse a grant whose token would not
     * exceed the last one (tok <= last), rather than hand out a duplicate.
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
                // the fix: a grant whose token would not rise, or would reach 2^53, is refused (never a repeated token)
                assertTrue(refused.getMessage().contains("fencing token"), refused.getMessage());
                return;
            }
            assertEquals(1L, r.get(0), "granted");
            long token = (Long) r.get(1);
            assertTrue(token > previous, "grant " + i + ": token " + token + " not above the last one, " + previous);
            assertEquals(1L, release(key, i));
            previous = token;
        }
        assertTrue(serverMicros() < previous, "the server's clock is behind these tokens, as after a step back");
    }
}
