package dev.locker.redis;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockOwner;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.TemporaryLockingException;
import dev.locker.testkit.FaultProxy;
import dev.locker.testkit.RedisServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import redis.clients.jedis.UnifiedJedis;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A late or repeated copy of an acquire (same nonce) grants nothing its caller does not know, and leaves no claim. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RedisLateAcquireTest {

    private static final Duration EXPIRY = Duration.ofSeconds(30);
    private static final String A = "00000000000000aa";
    private static final String B = "00000000000000bb";
    private final List<Locker> opened = new ArrayList<>();
    private final List<AutoCloseable> closeables = new ArrayList<>();
    private RedisServer server;
    private UnifiedJedis admin;

    @BeforeEach
    void start() {
        Assumptions.assumeFalse(RedisTarget.isExternal(), "needs a server behind a proxy of its own");
        server = RedisServer.start();
        closeables.add(server);
        admin = RedisLocker.builder().node("127.0.0.1", server.port()).newClient(1);
        closeables.add(admin);
    }

    @AfterEach
    void closeAll() throws Exception {
        opened.forEach(Locker::close);
        for (int i = closeables.size() - 1; i >= 0; i--) {
            closeables.get(i).close();
        }
    }

    private RedisLocker open(int port) {
        RedisLocker l = RedisLocker.builder().node("127.0.0.1", port).keyPrefix("late:")
                .config(LockerConfig.builder().expiry(EXPIRY).build()).restartGuard(Duration.ZERO).build();
        opened.add(l);
        return l;
    }

    private static KeyColumn lock() {
        return KeyColumn.named("job-" + LockerConfig.randomRid().substring(0, 8));
    }

    /** Null when {@code b} takes the lock at once; otherwise why it was refused. */
    private static String tryToTake(Locker b, KeyColumn lock) {
        try (Lease lease = b.acquire(lock, "B")) {
            return null;
        } catch (TemporaryLockingException e) {
            return e.getMessage() + " (holder: " + e.holder() + ")";
        }
    }

    /** A locker through a proxy whose first acquire is repeated on a fresh connection, its first copy held back. */
    private record Late(RedisLocker locker, FaultProxy proxy) {
    }

    private Late lateLocker(RedisLocker warm) {
        warm.acquire(KeyColumn.named("warm-up-" + System.nanoTime()), "loads the scripts").close();
        FaultProxy proxy = new FaultProxy("127.0.0.1", server.port());
        closeables.add(proxy);
        RedisLocker a = open(proxy.port());
        proxy.holdNextRequestCarrying(RedisScript.ACQUIRE.sha());
        return new Late(a, proxy);
    }

    // ---- through a real locker: the first copy held back, the repeat granted ---------------------------------------

    @Test
    void aLateFirstCopyOfAnAcquireLeavesTheLiveClaimAsItsRepeatGrantedIt() throws Exception {
        RedisLocker b = open(server.port());
        Late late = lateLocker(b);
        KeyColumn lock = lock();
        try (Lease lease = late.locker().acquire(lock, "A")) {
            assertTrue(late.proxy().holdsALateCopy(), "the first copy was held back, the repeat granted");
            byte[] key = late.locker().redisKey(lock);
            byte[] field = late.locker().claimField();
            String before = s(admin.hget(key, field));
            String reply = late.proxy().deliverLateCopy();
            assertEquals(before, s(admin.hget(key, field)), "the late first copy (reply " + reply.trim() + ") "
                    + "rewrote the holder's claim: a new token, seniority or expiry its caller does not know");
            assertEquals(":" + lease.fencingToken(), reply.trim(), "the late copy answers the holder's token");
            lease.check(); // the claim still carries the holder's token
        }
        assertNull(tryToTake(b, lock), "released: free for B");
    }

    @Test
    void aLateFirstCopyOfAnAcquireGrantsNothingAfterTheLeaseWasReleased() throws Exception {
        RedisLocker b = open(server.port());
        Late late = lateLocker(b);
        KeyColumn lock = lock();
        late.locker().acquire(lock, "A").close();
        String reply = late.proxy().deliverLateCopy();
        String refused = tryToTake(b, lock);
        assertNull(refused, "A released its lease; the first copy of its acquire, arriving only then (reply "
                + reply.trim() + "), granted a claim nobody holds: B is refused: " + refused);
    }

    @Test
    void aLateFirstCopyOfAnAcquireGrantsNothingAfterTheLeaseWasReleasedBesideOtherFields() throws Exception {
        RedisLocker b = open(server.port());
        Late late = lateLocker(b);
        KeyColumn lock = lock();
        // another locker's tombstone in the lock's hash: the release takes the general path, which removes our field
        byte[] key = late.locker().redisKey(lock);
        RedisScript.WITHDRAW.run(admin, key, List.of(b("c" + B), b(B + "0000000000000001"), b("600000"),
                b(Long.toString(EXPIRY.toMillis())), b("1"), b("late:released")));
        late.locker().acquire(lock, "A").close();
        String reply = late.proxy().deliverLateCopy();
        String refused = tryToTake(b, lock);
        assertNull(refused, "A released its lease; the first copy of its acquire, arriving only then (reply "
                + reply.trim() + "), granted a claim nobody holds: B is refused: " + refused);
    }

    @Test
    void aLateFirstCopyOfAnAcquireGrantsNothingAfterItsLeaseWasLostAndClosed() throws Exception {
        RedisLocker b = open(server.port());
        Late late = lateLocker(b);
        KeyColumn lock = lock();
        Lease lease = late.locker().acquire(lock, "A");
        assertTrue(b.forceRelease(lock), "B forces A's claim away");
        assertNull(tryToTake(b, lock), "B takes the lock and releases it");
        lease.close(); // A is done with the lease it lost
        String reply = late.proxy().deliverLateCopy();
        String refused = tryToTake(b, lock);
        assertNull(refused, "A lost and closed its lease; the first copy of its acquire, arriving only then (reply "
                + reply.trim() + "), granted a claim nobody holds: B is refused: " + refused);
    }

    // ---- the acquire script called twice with one nonce ------------------------------------------------------------

    @Test
    void aRepeatOverItsOwnLiveClaimAnswersTheSameTokenAndMovesNothing() {
        byte[] key = b("late:live");
        long first = token(acquire(key, A, 7, EXPIRY));
        String claim = field(key, A);
        Object again = acquire(key, A, 7, EXPIRY);
        assertEquals(first, again, "the repeat answers the token its first copy was granted");
        assertEquals(claim, field(key, A), "the repeat keeps the claim as it stands: written, expiry, token");
    }

    @Test
    void aRepeatAfterItsClaimWasReleasedGrantsNothing() {
        byte[] key = b("late:released");
        acquire(key, A, 7, EXPIRY);
        assertEquals(1L, release(key, A, 7));
        assertEquals(-3L, code(acquire(key, A, 7, EXPIRY)), "the repeat of a released claim's acquire");
        assertEquals(1L, code(acquire(key, B, 1, EXPIRY)), "free for another locker");
    }

    @Test
    void aRepeatOlderThanALaterReleasedClaimOfItsLockerGrantsNothing() {
        byte[] key = b("late:older");
        acquire(key, A, 7, EXPIRY);
        assertEquals(1L, release(key, A, 7));
        acquire(key, A, 8, EXPIRY);
        assertEquals(1L, release(key, A, 8));
        assertEquals(-3L, code(acquire(key, A, 7, EXPIRY)), "a copy of the earlier acquire, after the later one");
        assertEquals(1L, code(acquire(key, B, 1, EXPIRY)), "free for another locker");
    }

    @Test
    void aRepeatAfterItsClaimLapsedGrantsNothing() {
        byte[] key = b("late:lapsed");
        // another locker's tombstone keeps the key (alone, a lapsed claim's key lapses too, and with it our field)
        RedisScript.WITHDRAW.run(admin, key, List.of(b("c" + B), b(nonce(B, 1)), b("600000"), b("30000"), b("1"),
                b("late:released")));
        acquire(key, A, 7, Duration.ofMillis(20));
        RedisServer.sleep(60); // the claim lapses on the server
        assertEquals(-3L, code(acquire(key, A, 7, EXPIRY)), "the repeat of a lapsed claim's acquire");
        assertEquals(1L, code(acquire(key, B, 2, EXPIRY)), "free for another locker");
    }

    @Test
    void aLateCopyOfAWaitingAcquireWhoseClaimWasReleasedIsNeitherGrantedNorQueued() {
        byte[] key = b("late:waiter");
        acquire(key, A, 7, EXPIRY, "0", null);
        assertEquals(1L, release(key, A, 7));
        assertEquals(1L, code(acquire(key, B, 1, EXPIRY, "0", null)), "B takes the lock, our released claim kept");
        Object late = acquire(key, A, 7, EXPIRY, "0", A + "0000000000000001");
        assertEquals(-3L, code(late), "the late copy of our waiting acquire, after its claim was released");
        assertTrue(admin.hkeys(key).stream().noneMatch(f -> f[0] == 'q'), "a late copy queued a waiter nobody is: "
                + "while it lives, nobody who arrives later is granted the lock");
    }

    @Test
    void aNewAcquireOfTheSameLockerAfterItsReleaseIsGranted() {
        byte[] key = b("late:next");
        long first = token(acquire(key, A, 7, EXPIRY));
        assertEquals(1L, release(key, A, 7));
        long next = token(acquire(key, A, 8, EXPIRY));
        assertTrue(next > first, "the next acquire of the same locker: a higher token");
    }

    /**
     * The first copy is granted on the master and its reply lost; its write has not reached the stalled replica. The
     * repeat, on a fresh connection, is pipelined with WAIT as the driver sends it. Its answer must wait for the
     * replica to hold the first copy's write, although the repeat itself changes nothing.
     */
    @Test
    void aRepeatOverItsOwnLiveClaimIsAcknowledgedOnlyOnceTheReplicaHasTheFirstWrite() {
        try (RedisServer replica = RedisServer.start("--replicaof", "127.0.0.1", Integer.toString(server.port()))) {
            while (!replica.cli("INFO", "replication").contains("master_link_status:up")
                    || !server.cli("WAIT", "1", "100").trim().equals("1")) {
                RedisServer.sleep(50);
            }
            byte[] key = b("late:replicated");
            String pid = Long.toString(replica.pid());
            RedisServer.run(List.of("kill", "-STOP", pid)); // the replica stalls: it acknowledges nothing more
            try (UnifiedJedis fresh = RedisLocker.builder().node("127.0.0.1", server.port()).newClient(1)) {
                long first = token(acquire(key, A, 7, EXPIRY));
                // the repeat goes on a connection of its own, as after the broken one: WAIT counts its writes only
                RedisCalls calls = new RedisCalls(fresh, "test", 1, 1, Duration.ofMillis(300));
                byte[] owner = new LockOwner("a", "host", 1, "t", "why", null).toBytes();
                List<byte[]> args = List.of(key, b("c" + A), b("7"), b(Long.toString(EXPIRY.toMillis())),
                        owner, b("0"), b("1off"), ScriptArgs.keyTtl(b(Long.toString(EXPIRY.toMillis()))));
                redis.clients.jedis.args.Rawable[] call = args.stream().map(RedisScript::arg)
                        .toArray(redis.clients.jedis.args.Rawable[]::new);
                Object[] both = calls.runAndWait(RedisScript.ACQUIRE, 1, call);
                assertEquals(first, both[0], "the repeat answers the first copy's token");
                assertEquals(0L, both[1], "the stalled replica does not hold the first copy's write, yet the "
                        + "repeat's WAIT counted it: a failover to it would lose the claim its caller now trusts");
            } finally {
                RedisServer.run(List.of("kill", "-CONT", pid));
            }
        }
    }

    private Object acquire(byte[] key, String instance, long counter, Duration expiry) {
        return acquire(key, instance, counter, expiry, "1", null);
    }

    /** The acquire script as the driver calls it; {@code waiter} null for an acquire that does not wait. */
    private Object acquire(byte[] key, String instance, long counter, Duration expiry, String scrub, String waiter) {
        byte[] owner = new LockOwner("a", "host", 1, "t", "why", null).toBytes();
        List<byte[]> args = new ArrayList<>(List.of(b("c" + instance), b(Long.toHexString(counter)),
                b(Long.toString(expiry.toMillis())), owner, b("0"), b(scrub + "off"),
                ScriptArgs.keyTtl(b(Long.toString(expiry.toMillis())))));
        if (waiter != null) {
            args.add(b(waiter + " 3000")); // "<waiter id> <queue ms>"
        }
        return RedisScript.ACQUIRE.run(admin, key, args);
    }

    private long release(byte[] key, String instance, long counter) {
        return (Long) RedisScript.RELEASE.run(admin, key, List.of(b("c" + instance), b(nonce(instance, counter)),
                b("late:released")));
    }

    private String field(byte[] key, String instance) {
        return s(admin.hget(key, b("c" + instance)));
    }

    private static long token(Object reply) {
        if (reply instanceof Long) {
            return (Long) reply;
        }
        throw new AssertionError("not a grant: " + reply);
    }

    private static long code(Object reply) {
        return reply instanceof Long ? 1 : (Long) ((List<?>) reply).get(0);
    }

    private static String nonce(String instance, long counter) {
        return instance + String.format("%016x", counter);
    }

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static String s(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }
}
