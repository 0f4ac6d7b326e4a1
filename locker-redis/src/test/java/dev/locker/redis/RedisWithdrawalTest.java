package dev.locker.redis;

import dev.locker.testkit.FaultProxy;
import dev.locker.testkit.RedisServer;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockingException;
import dev.locker.api.PermanentLockingException;
import dev.locker.api.TemporaryLockingException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import redis.clients.jedis.UnifiedJedis;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.fail;

/** A claim granted under an unknown or failed outcome is withdrawn, so nobody is refused by a claim nobody holds. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RedisWithdrawalTest {

    private static final Duration EXPIRY = Duration.ofSeconds(30);
    private final List<Locker> opened = new ArrayList<>();
    private final List<AutoCloseable> closeables = new ArrayList<>();
    private RedisServer server;

    @BeforeEach
    void start() {
        Assumptions.assumeFalse(RedisTarget.isExternal(), "needs servers it can configure");
        server = RedisServer.start();
        closeables.add(server);
    }

    @AfterEach
    void closeAll() throws Exception {
        opened.forEach(Locker::close);
        for (AutoCloseable c : closeables) {
            c.close();
        }
    }

    private RedisLocker open(RedisLockerBuilder b) {
        RedisLocker l = b.keyPrefix("r2:").config(LockerConfig.builder().expiry(EXPIRY).build())
                .restartGuard(Duration.ZERO).build();
        opened.add(l);
        return l;
    }

    private RedisLockerBuilder direct() {
        return RedisLocker.builder().node("127.0.0.1", server.port());
    }

    private static KeyColumn lock() {
        return KeyColumn.named("job-" + LockerConfig.randomRid().substring(0, 8));
    }

    /** B's view: can a process that nobody competes with take the lock? */
    private static String tryToTake(Locker b, KeyColumn lock) {
        try (Lease lease = b.acquire(lock, "B")) {
            return null;
        } catch (TemporaryLockingException e) {
            return e.getMessage() + " (holder: " + e.holder() + ")";
        }
    }

    /**
     * A's acquire reaches the server, which grants it; the connection is reset before the reply arrives. The retries
     * then meet a refused connection, which alone would say "never sent". Since an earlier attempt may have reached
     * the server, the grant is withdrawn, retried in the background until the endpoint is back.
     */
    @Test
    void aGrantWhoseReplyWasLostIsWithdrawnOnceTheEndpointIsBack() throws Exception {
        RedisLocker b = open(direct());
        KeyColumn lock = lock();
        b.acquire(KeyColumn.named("warm-up-" + lock.hashCode()), "loads the scripts").close();
        FaultProxy proxy = new FaultProxy("127.0.0.1", server.port(), "EVAL");
        closeables.add(proxy);
        RedisLocker a = open(RedisLocker.builder().node("127.0.0.1", proxy.port()).timeout(Duration.ofSeconds(2)));
        proxy.dropNextMarkedReplyAndGoDown();
        LockingException e = assertThrows(LockingException.class, () -> a.acquire(lock, "A"));
        assertInstanceOf(TemporaryLockingException.class, e, e.toString());
        assertEquals(1, proxy.markedRequests(), "the acquire reached the server once");

        proxy.comeBack(); // the endpoint is reachable again a moment later
        String refused = null;
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (System.nanoTime() < until && (refused = tryToTake(b, lock)) != null) {
            RedisServer.sleep(100);
        }
        if (refused != null) {
            fail("A's acquire failed (" + e.getMessage() + "), so nobody holds the lock, yet 5 s after A's endpoint "
                    + "came back B is still refused: " + refused + ". A's granted claim was never withdrawn (the "
                    + "decision looked only at the retries' ConnectException, and a withdrawal that cannot be made at "
                    + "once is never tried again); it blocks the lock for the full " + EXPIRY);
        }
    }

    /**
     * A repeated acquire that meets a tombstone with a higher counter of its own instance removes its own grant.
     * Script-level replay on a real server (the scripts exactly as the locker sends them; instance I, counters n < m):
     * <ol>
     *   <li>acquire(I, n) runs and grants (claim field c+rid carries nonce I|n); its reply is lost (connection
     *       reset), so the client will repeat it on a fresh connection, with the same nonce;</li>
     *   <li>meanwhile a later acquire of the same instance on the same lock, nonce I|m (m > n), timed out and was
     *       withdrawn: tombstone w+I = m. (Two acquires of one instance on one lock at once: the first one's JVM-local
     *       record passed its deadline while it retried, so a second transaction of the locker took the lock
     *       locally; or deleteLocks of the first from a timeout thread.)</li>
     *   <li>the repeat of acquire(I, n) arrives: n <= m, the script answers -3 ("withdrawn, nobody waits"). It
     *       removes the claim of attempt 1 first, so another locker is granted the lock at once.</li>
     * </ol>
     */
    @Test
    void aRetriedAcquireRefusedByAHigherTombstoneRemovesItsOwnGrant() {
        try (UnifiedJedis jedis = RedisLocker.builder().node("127.0.0.1", server.port()).newClient(1)) {
            byte[] key = "r2:retried-lock".getBytes(StandardCharsets.UTF_8);
            String instance = "00000000000000aa";
            byte[] field = ("c" + instance).getBytes(StandardCharsets.UTF_8); // a locker's field: "c" and its instance
            byte[] n = (instance + "0000000000000001").getBytes(StandardCharsets.US_ASCII);
            byte[] m = (instance + "0000000000000002").getBytes(StandardCharsets.US_ASCII);
            byte[] owner = new dev.locker.api.LockOwner("a", "host", 1, "t", "why", null).toBytes();

            List<?> first = AcquireReply.of(RedisScript.ACQUIRE.run(jedis, key, acquireArgs(field, n, owner)), jedis,
                    key, field);
            assertEquals(1L, first.get(0), "attempt 1 is granted (its reply is lost)");
            RedisScript.WITHDRAW.run(jedis, key, List.of(field, m, ms(Duration.ofMinutes(20)), ms(EXPIRY), b("1")));
            List<?> repeat = AcquireReply.of(RedisScript.ACQUIRE.run(jedis, key, acquireArgs(field, n, owner)), jedis,
                    key, field);
            assertEquals(-3L, repeat.get(0), "the repeat meets the tombstone");

            byte[] left = jedis.hget(key, field);
            byte[] otherField = "c00000000000000bb".getBytes(StandardCharsets.UTF_8);
            List<?> other = AcquireReply.of(RedisScript.ACQUIRE.run(jedis, key, acquireArgs(otherField,
                    ("00000000000000bb" + "0000000000000001").getBytes(StandardCharsets.US_ASCII), owner)), jedis, key,
                    otherField);
            assertEquals(1L, other.get(0), "the repeat of a granted acquire was refused (-3) and its grant was left "
                    + "behind: " + (left == null ? null : new String(left, StandardCharsets.UTF_8).split("\n")[0])
                    + "; nobody waits for it, and another locker is refused for " + EXPIRY);
        }
    }

    private static List<byte[]> acquireArgs(byte[] field, byte[] nonce, byte[] owner) {
        // the acquire's counter: the nonce's last 16 hex digits without leading zeros
        String counter = Long.toHexString(Long.parseUnsignedLong(new String(nonce, 16, 16, StandardCharsets.US_ASCII), 16));
        return List.of(field, b(counter), ms(EXPIRY), owner, b("0"), b("1off"), ScriptArgs.keyTtl(ms(EXPIRY)));
    }

    private static byte[] ms(Duration d) {
        return Long.toString(d.toMillis()).getBytes(StandardCharsets.US_ASCII);
    }

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    /**
     * The acquire script and WAIT are pipelined: the script grants, and WAIT fails with an error (an ACL without
     * +wait). The caller gets a PermanentLockingException, and the grant is withdrawn: B takes the lock.
     */
    @Test
    void aFailedWaitAfterAGrantIsPermanentAndWithdrawsTheGrant() {
        server.cli("ACL", "SETUSER", "nowait", "on", ">nowait-pw", "~*", "&*", "+@all", "-wait");
        RedisLocker a = open(direct().user("nowait").password("nowait-pw").replicas(1)
                .replicaTimeout(Duration.ofMillis(100)));
        RedisLocker b = open(direct());
        KeyColumn lock = lock();
        LockingException e = assertThrows(LockingException.class, () -> a.acquire(lock, "A"));
        assertInstanceOf(PermanentLockingException.class, e, e.toString());
        String refused = tryToTake(b, lock);
        if (refused != null) {
            fail("A's acquire failed permanently (" + e.getMessage() + "), yet its grant was not withdrawn: B is "
                    + "refused: " + refused);
        }
    }
}
