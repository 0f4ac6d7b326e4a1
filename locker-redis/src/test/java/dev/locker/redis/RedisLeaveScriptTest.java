package dev.locker.redis;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.args.Rawable;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import static dev.locker.redis.RedisWaitingFixture.lock;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The leave script sets only our own live claim to exactly the time left, and nothing later lengthens it. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RedisLeaveScriptTest {

    private static final String A = "00000000000000aa";
    private static final String B = "00000000000000bb";
    private static final String EXPIRY_MS = "30000";
    private static final long LEFT_MS = 2_000;

    @RegisterExtension
    static final RedisWaitingFixture fixture = RedisWaitingFixture.onTarget("leave");

    private static UnifiedJedis admin() {
        return fixture.admin();
    }

    private byte[] key(String name) {
        return new RedisKeys(fixture.prefix()).lockKey(lock(name));
    }

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static String nonce(String instance, long counter) {
        return instance + String.format("%016x", counter);
    }

    /** The acquire script as a locker without guard or eviction check calls it; returns the token. */
    private long acquire(byte[] key, String instance, long counter) {
        List<byte[]> args = List.of(b("c" + instance), b(Long.toHexString(counter)), b(EXPIRY_MS),
                b("=owner " + instance), b("0"), b("1off"), ScriptArgs.keyTtl(b(EXPIRY_MS)), b(""));
        Rawable[] call = new Rawable[1 + args.size()];
        call[0] = RedisScript.arg(key);
        for (int i = 0; i < args.size(); i++) {
            call[1 + i] = RedisScript.arg(args.get(i));
        }
        List<?> r = AcquireReply.of(RedisScript.ACQUIRE.run(admin(), 1, call), admin(), key, b("c" + instance));
        assertEquals(1L, r.get(0), "granted: " + r);
        return (Long) r.get(1);
    }

    private Object run(RedisScript script, byte[] key, String... args) {
        List<byte[]> a = new java.util.ArrayList<>();
        for (String x : args) {
            a.add(b(x));
        }
        return script.run(admin(), key, a);
    }

    private List<?> leave(byte[] key, String instance, long counter, long ms) {
        return (List<?>) run(RedisScript.LEAVE, key, "c" + instance, nonce(instance, counter), Long.toString(ms), "1");
    }

    private Map<String, String> hash(byte[] key) {
        Map<String, String> m = new TreeMap<>();
        admin().hgetAll(key).forEach((f, v) -> m.put(new String(f, StandardCharsets.UTF_8),
                new String(v, StandardCharsets.UTF_8)));
        return m;
    }

    /** Given a claim of 30 s left with 2 s to go, it ends 2 s after the leave, still ours, still the holder. */
    @Test
    void aLeftClaimEndsWhenTheTimeLeftEndsNotWithItsLease() {
        byte[] key = key("left");
        long token = acquire(key, A, 7);
        List<?> r = leave(key, A, 7, LEFT_MS);
        long after = fixture.serverMicros();
        assertEquals(1L, r.get(0), "left: " + r);
        assertEquals(token, r.get(1), "the same token");
        String value = hash(key).get("c" + A);
        assertTrue(value.matches("\\d+ 0[1-9]\\d* \\d+ 7 =owner " + A), "marked left, owner kept: " + value);
        RedisOwners.Claim c = RedisOwners.Claim.parse(b(value));
        assertEquals(token, c.token(), "the claim still carries its token");
        assertTrue(c.expiryMicros() <= after + LEFT_MS * 1000 + 1000,
                "set to the time left (rounded up to a millisecond), not the lease's 30 s: " + value);
        assertEquals(List.of(1L), run(RedisScript.VERIFY, key, "c" + A, nonce(A, 7), Long.toString(token)),
                "still ours until then");
        List<?> holder = (List<?>) run(RedisScript.HOLDER, key, "1");
        assertEquals("c" + A, new String((byte[]) holder.get(2), StandardCharsets.UTF_8), "still the holder");
    }

    /** Given a left claim, a renewal whose request lands afterwards is refused and writes nothing. */
    @Test
    void aRenewalLandingAfterTheLeaveNeitherLowersNorLengthensIt() {
        byte[] key = key("late-renewal");
        acquire(key, A, 7);
        assertEquals(1L, leave(key, A, 7, LEFT_MS).get(0));
        Map<String, String> left = hash(key);
        assertEquals(List.of(-1L), run(RedisScript.RENEW, key, "c" + A, nonce(A, 7), EXPIRY_MS, "1"),
                "a left claim is renewed no more");
        assertEquals(List.of(-1L), run(RedisScript.RENEW, key, "c" + A, nonce(A, 7), "1", "1"),
                "nor shortened by a renewal");
        assertEquals(left, hash(key), "the renewals wrote nothing");
    }

    /** Given a leave whose reply was lost, its repeat answers as the first did and changes nothing. */
    @Test
    void aRepeatedLeaveKeepsTheEndTheFirstOneSet() {
        byte[] key = key("repeat");
        long token = acquire(key, A, 7);
        List<?> first = leave(key, A, 7, LEFT_MS);
        Map<String, String> left = hash(key);
        List<?> again = leave(key, A, 7, 20_000);
        assertEquals(first, again, "the same answer: ours, left");
        assertEquals(token, again.get(1));
        assertEquals(left, hash(key), "the first leave's end stands");
    }

    /** Given another locker's claim, or another transaction's in our own field, a leave touches neither. */
    @Test
    void aLeaveNeverTouchesAnotherClaim() {
        byte[] key = key("others");
        acquire(key, B, 3);
        Map<String, String> before = hash(key);
        List<?> r = leave(key, A, 7, LEFT_MS);
        assertEquals(-1L, r.get(0), "we have no claim here: " + r);
        assertEquals(before, hash(key));

        byte[] mine = key("another-transaction");
        acquire(mine, A, 8);
        before = hash(mine);
        assertEquals(-1L, leave(mine, A, 7, LEFT_MS).get(0), "our field holds another nonce's claim");
        assertEquals(before, hash(mine));
    }

    /** Given our claim dead already, the leave brings nothing back to life. */
    @Test
    void aLeaveOfADeadClaimIsRefused() {
        byte[] key = key("dead");
        admin().hset(key, b("c" + A), b((fixture.serverMicros() - 10_000_000) + " 1 0 7 =owner " + A));
        assertEquals(-1L, leave(key, A, 7, LEFT_MS).get(0));
        assertTrue(hash(key).getOrDefault("c" + A, "").isEmpty(), "scrubbed, not left: " + hash(key));
    }
}
