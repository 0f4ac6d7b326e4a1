package dev.locker.redis;

import dev.locker.testkit.RedisServer;
import dev.locker.api.Acquisition;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockProbe;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

import redis.clients.jedis.UnifiedJedis;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Waiting, releasing and withdrawing work for a least-privilege ACL user, a channel-less user, a one-connection pool. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RedisRestrictedWaitingTest {

    private static final String PASSWORD = "s3cret-admin";
    private RedisServer server;
    private final List<Locker> opened = new ArrayList<>();
    private final ExecutorService pool = Executors.newCachedThreadPool();

    @BeforeAll
    void start() {
        Assumptions.assumeFalse(RedisTarget.isExternal(), "needs a server it can configure");
        server = RedisServer.start("--requirepass", PASSWORD);
        // exactly the least-privilege ACL the README documents (section "Redis", ACL line)
        server.cli("-a", PASSWORD, "--no-auth-warning", "ACL", "SETUSER", "locker", "on", ">pw", "resetkeys",
                "~locker:*", "-@all", "+evalsha", "+eval", "+time", "+hgetall", "+hget", "+hset", "+hdel", "+hkeys",
                "+pexpire", "+info");
        // every command, every key, but no pub/sub channel: Redis 7's default for a new ACL user (resetchannels)
        server.cli("-a", PASSWORD, "--no-auth-warning", "ACL", "SETUSER", "nochan", "on", ">pw", "~*", "+@all",
                "resetchannels");
    }

    @AfterEach
    void closeLockers() {
        opened.forEach(Locker::close);
        opened.clear();
    }

    @AfterAll
    void stop() {
        pool.shutdownNow();
        if (server != null) {
            server.close();
        }
    }

    private RedisLockerBuilder readmeAclUser(String name) {
        return RedisLocker.builder().node("127.0.0.1", server.port()).keyPrefix("locker:").user("locker").password("pw")
                .config(LockerConfig.builder().rid(name + "-" + LockerConfig.randomRid().substring(0, 8))
                        .expiry(Duration.ofSeconds(3)).build())
                .restartGuard(Duration.ZERO);
    }

    private RedisLocker admin(String name, int poolSize) {
        RedisLocker l = RedisLocker.builder().node("127.0.0.1", server.port()).keyPrefix("adm:").password(PASSWORD)
                .config(LockerConfig.builder().rid(name + "-" + LockerConfig.randomRid().substring(0, 8))
                        .expiry(Duration.ofSeconds(3)).build())
                .restartGuard(Duration.ZERO).poolSize(poolSize).build();
        opened.add(l);
        return l;
    }

    private RedisLocker open(RedisLockerBuilder b) {
        RedisLocker l = b.build();
        opened.add(l);
        return l;
    }

    private static KeyColumn lock(String name) {
        return KeyColumn.named(name + "-" + LockerConfig.randomRid().substring(0, 6));
    }

    /**
     * A user with the README's least-privilege ACL can wait for a lock. The waiter's first refusal queues it inside
     * acquire.lua, and the lock released 300 ms later is granted, not refused with NOPERM.
     */
    @Test
    void aWaiterWithTheReadmeLeastPrivilegeAclWaitsForTheRelease() throws Exception {
        RedisLocker a = open(readmeAclUser("a"));
        RedisLocker b = open(readmeAclUser("b"));
        KeyColumn lock = lock("acl-wait");
        Lease held = a.acquire(lock, "first");
        Future<Acquisition> waiting = pool.submit(() -> b.acquireWithin(lock, "patient", Duration.ofSeconds(10)));
        Thread.sleep(300);
        held.close();
        Acquisition got = waiting.get(30, TimeUnit.SECONDS);
        assertEquals(Acquisition.Outcome.ACQUIRED, got.outcome(), "the wait must outlast the release: " + got);
        got.lease().orElseThrow().close();
    }

    /**
     * A release by a user with the README's least-privilege ACL removes the claim and fails in no step (no NOPERM,
     * nothing logged at WARN).
     */
    @Test
    void aReleaseWithTheReadmeLeastPrivilegeAclDoesNotFail() {
        List<RuntimeException> releaseFailures = new CopyOnWriteArrayList<>();
        LockProbe probe = new LockProbe() {
            @Override
            public void after(Step step, KeyColumn lock, String rid, RuntimeException failure) {
                if (step == Step.RELEASE && failure != null) {
                    releaseFailures.add(failure);
                }
            }
        };
        RedisLocker a = open(readmeAclUser("a").config(LockerConfig.builder()
                .rid("a-" + LockerConfig.randomRid().substring(0, 8)).expiry(Duration.ofSeconds(3)).probe(probe)
                .build()));
        KeyColumn lock = lock("acl-release");
        a.acquire(lock, "once").close();
        assertEquals(List.of(), releaseFailures, "a plain release must not fail under the documented ACL");
    }

    /**
     * poolSize(1) is accepted by the builder. The wake-up subscription must not hold that one pooled connection while
     * anyone waits: a lock freed after 300 ms is taken.
     */
    @Test
    void aWaiterOnAOneConnectionPoolGetsTheLockOnceItIsFreed() throws Exception {
        RedisLocker a = admin("a", 4);
        RedisLocker b = admin("b", 1);
        KeyColumn lock = lock("pool1");
        Lease held = a.acquire(lock, "first");
        Future<Acquisition> waiting = pool.submit(() -> b.acquireWithin(lock, "patient", Duration.ofSeconds(8)));
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!b.wakeupsSubscribed() && System.nanoTime() < until) {
            Thread.sleep(5);
        }
        held.close();
        Acquisition got = waiting.get(30, TimeUnit.SECONDS);
        assertEquals(Acquisition.Outcome.ACQUIRED, got.outcome(), "freed lock must be taken: " + got);
        got.lease().orElseThrow().close();
    }

    /**
     * While a locker with a small pool waits, a lease it holds on another lock still renews. Its subscription must not
     * take the connection the renewal needs.
     */
    @Test
    void aLeaseOfAWaitingLockerStillRenews() throws Exception {
        RedisLocker a = admin("a", 4);
        RedisLocker b = admin("b", 1);
        KeyColumn busy = lock("busy");
        KeyColumn mine = lock("mine");
        Lease other = a.acquire(busy, "held long");
        Lease lease = b.acquire(mine, "mine");
        Future<Acquisition> waiting = pool.submit(() -> b.acquireWithin(busy, "patient", Duration.ofSeconds(6)));
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!b.wakeupsSubscribed() && System.nanoTime() < until) {
            Thread.sleep(5);
        }
        assertTrue(b.wakeupsSubscribed(), "the waiter subscribed");
        try {
            lease.renew();
        } finally {
            other.close();
            waiting.get(30, TimeUnit.SECONDS).lease().ifPresent(Lease::close);
            lease.close();
        }
    }

    /**
     * A channel-less user waits on 20 held locks in turn: the server refuses its wake-up channels, so it polls. Once
     * the waits ended, it keeps no entry for any of those locks, although no linger runs without a connection.
     */
    @Test
    void waitsOfAUserRefusedItsChannelsLeaveNoEntryPerLockBehind() throws Exception {
        RedisLocker holder = admin("holder", 4);
        RedisLocker waiter = open(RedisLocker.builder().node("127.0.0.1", server.port()).keyPrefix("adm:")
                .user("nochan").password("pw").restartGuard(Duration.ZERO).wakeupLinger(Duration.ofMinutes(10))
                .config(LockerConfig.builder().rid("w-" + LockerConfig.randomRid().substring(0, 8))
                        .expiry(Duration.ofSeconds(3)).build()));
        int locks = 20;
        for (int i = 0; i < locks; i++) {
            KeyColumn lock = lock("refused-" + i);
            try (Lease held = holder.acquire(lock, "holds it")) {
                assertTrue(waiter.tryAcquire(lock, "refused", Duration.ofMillis(50)).isEmpty(), "held by another");
            }
        }
        assertFalse(waiter.wakeupsSubscribed(), "the server refuses this user's channels");
        RedisWaitingFixture.awaitTrue(() -> RedisWakeupBookkeepingTest.watched(waiter) == 0,
                () -> "the locker still keeps " + RedisWakeupBookkeepingTest.watched(waiter) + " of " + locks
                        + " lock entries after their waits ended");
    }

    /**
     * A withdrawal with a waiter queued leaves its tombstone even when PUBLISH fails: no channel permission is Redis
     * 7's default for a new ACL user. Else a late duplicate of the withdrawn acquire is granted to a client that gave
     * up, and blocks the lock for its whole expiry.
     */
    @Test
    void aWithdrawalWithWaitersQueuedStillLeavesItsTombstone() throws Exception {
        RedisLockerBuilder nb = RedisLocker.builder().node("127.0.0.1", server.port()).keyPrefix("nc:")
                .user("nochan").password("pw").restartGuard(Duration.ZERO);
        RedisLocker a = open(nb.config(LockerConfig.builder().rid("a-" + LockerConfig.randomRid().substring(0, 8))
                .expiry(Duration.ofSeconds(3)).build()));
        RedisLocker b = open(RedisLocker.builder().node("127.0.0.1", server.port()).keyPrefix("nc:")
                .user("nochan").password("pw").restartGuard(Duration.ZERO)
                .config(LockerConfig.builder().rid("b-" + LockerConfig.randomRid().substring(0, 8))
                        .expiry(Duration.ofSeconds(3)).build()));
        KeyColumn lock = lock("withdraw");
        byte[] key = a.redisKey(lock);
        Lease held = a.acquire(lock, "first");
        Future<Acquisition> waiting = pool.submit(() -> b.acquireWithin(lock, "patient", Duration.ofSeconds(10)));
        try (UnifiedJedis c = nb.newClient(1)) {
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (c.hgetAll(key).keySet().stream().noneMatch(f -> f[0] == 'q') && System.nanoTime() < until) {
                Thread.sleep(5);
            }
            byte[] ownField = a.claimField();
            byte[] value = c.hget(key, ownField);
            String[] header = new String(value, StandardCharsets.US_ASCII).split(" "); // see common.lua
            String counter = header[3];
            String nonce = new String(ownField, 1, 16, StandardCharsets.US_ASCII)
                    + "0".repeat(16 - counter.length()) + counter;
            byte[] owner = header[4].getBytes(StandardCharsets.US_ASCII);
            byte[] channel = "nc:released".getBytes(StandardCharsets.US_ASCII);
            // a's client gave up on the acquire whose nonce this is (say its reply timed out): it withdraws it
            String withdrawFailure = "none";
            try {
                RedisScript.WITHDRAW.run(c, key, List.of(ownField, nonce.getBytes(StandardCharsets.US_ASCII),
                        "600000".getBytes(), "3000".getBytes(), "1".getBytes(), channel));
            } catch (RuntimeException expectedHere) {
                withdrawFailure = expectedHere.toString();
                // the failure itself is tolerable (a withdraw may fail); what it leaves behind is not
            }
            Acquisition bGot = waiting.get(30, TimeUnit.SECONDS);
            bGot.lease().ifPresent(Lease::close); // queue now empty, lock free
            // the withdrawn request, resent earlier on another connection, arrives only now
            String lateCounter = Long.toHexString(Long.parseUnsignedLong(nonce.substring(16), 16));
            Object late = RedisScript.ACQUIRE.run(c, key, List.of(ownField, lateCounter.getBytes(StandardCharsets.US_ASCII),
                    "3000".getBytes(), owner, "0".getBytes(), "1off".getBytes(), "6001".getBytes(),
                    new byte[0]));
            long code = late instanceof Long ? 1 : (Long) ((List<?>) late).get(0); // a bare token is a grant
            assertEquals(-3L, code, "a withdrawn request must grant nothing (tombstone), got code " + code
                    + "; the withdraw failed with: " + withdrawFailure);
        } finally {
            held.close();
        }
    }

    private static int indexOf(byte[] a, byte b) {
        for (int i = 0; i < a.length; i++) {
            if (a[i] == b) {
                return i;
            }
        }
        return -1;
    }
}
