package dev.locker.redis;

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

/**
 * Second adversarial review of the Redis protocol (tombstones, withdrawal after an unknown outcome, classification).
 * Each test failed on the code as reviewed and passes since the fixes (withdrawal when any attempt may have reached
 * the server, retried in the background; withdrawal when WAIT fails after a grant; a refused repeat removes its own
 * grant). Each is a liveness finding (a claim nobody holds blocks the lock for a full
 * expiry), not a safety one: no second holder, no repeated token.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RedisSecondReviewTest {

    private static final Duration EXPIRY = Duration.ofSeconds(30);
    private final List<Locker> opened = new ArrayList<>();
    private final List<AutoCloseable> closeables = new ArrayList<>();
    private RedisServerProcess server;

    @BeforeEach
    void start() {
        Assumptions.assumeFalse(RedisTarget.isExternal(), "needs servers it can configure");
        server = RedisServerProcess.start();
        closeables.add(server);
    }

    @AfterEach
    void closeAll() throws Exception {
        opened.forEach(Locker::close);
        for (AutoCloseable c : closeables) {
            c.close();
        }
    }

    private RedisLocker open(RedisLocker.Builder b) {
        RedisLocker l = b.keyPrefix("r2:").config(LockerConfig.builder().expiry(EXPIRY).build())
                .restartGuard(Duration.ZERO).build();
        opened.add(l);
        return l;
    }

    private RedisLocker.Builder direct() {
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

    // =================================================================================================================
    // NR1: the decision to withdraw looks only at the LAST attempt's failure. Attempt 1 reached the server (granted),
    // its reply was lost with the connection; the retries could not connect (ConnectException): no withdrawal.
    // =================================================================================================================

    /**
     * Interleaving: A's acquire (EVALSHA) reaches the server, which grants the claim; the connection is reset before
     * the reply arrives (a proxy or load balancer failing over, a network blip). withRetries clears the pool and
     * retries on fresh connections, but the endpoint refuses connections for a moment (ConnectException, twice).
     * writeSingleLock asks mayHaveReachedTheServer(<the last exception>): a ConnectException, so "never sent", and
     * withdraws nothing (and a withdrawal that could not be made then would never be tried again either). A's acquire
     * fails with TemporaryLockingException; the endpoint is back a moment later; A's granted claim stays on the
     * server for the full expiry; B, with nobody holding the lock, is refused for 30 s.
     */
    @Test
    void nr1_aGrantWhoseReplyWasLostIsNotWithdrawnWhenTheRetriesCannotConnect() throws Exception {
        RedisLocker b = open(direct());
        KeyColumn lock = lock();
        b.acquire(KeyColumn.named("warm-up-" + lock.hashCode()), "loads the scripts").close();
        ResettingProxy proxy = new ResettingProxy(server.port());
        closeables.add(proxy);
        RedisLocker a = open(RedisLocker.builder().node("127.0.0.1", proxy.port()).timeout(Duration.ofSeconds(2)));
        proxy.dropTheReplyToTheNextScriptAndGoDown();
        LockingException e = assertThrows(LockingException.class, () -> a.acquire(lock, "A"));
        assertInstanceOf(TemporaryLockingException.class, e, e.toString());
        assertEquals(1, proxy.scriptsForwarded(), "the acquire reached the server once");

        proxy.comeBack(); // the endpoint is reachable again a moment later
        String refused = null;
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (System.nanoTime() < until && (refused = tryToTake(b, lock)) != null) {
            RedisServerProcess.sleep(100);
        }
        if (refused != null) {
            fail("A's acquire failed (" + e.getMessage() + "), so nobody holds the lock, yet 5 s after A's endpoint "
                    + "came back B is still refused: " + refused + ". A's granted claim was never withdrawn (the "
                    + "decision looked only at the retries' ConnectException, and a withdrawal that cannot be made at "
                    + "once is never tried again); it blocks the lock for the full " + EXPIRY);
        }
    }

    // =================================================================================================================
    // NR2: a repeated acquire (same nonce, after a lost reply) that meets a tombstone with a HIGHER counter of the same
    // instance is answered -3 before the script looks at its own claim: the claim its first attempt was granted stays.
    // =================================================================================================================

    /**
     * Script-level replay on a real server (the scripts exactly as the locker sends them; instance I, counters n < m):
     * <ol>
     *   <li>acquire(I, n) runs and grants (claim field c+rid carries nonce I|n); its reply is lost (connection
     *       reset), so the client will repeat it on a fresh connection, with the same nonce;</li>
     *   <li>meanwhile a later acquire of the same instance on the same lock, nonce I|m (m > n), timed out and was
     *       withdrawn: tombstone w+I = m. (Two acquires of one instance on one lock at once: the first one's JVM-local
     *       record passed its deadline while it retried, so a second transaction of the locker took the lock
     *       locally; or deleteLocks of the first from a timeout thread.)</li>
     *   <li>the repeat of acquire(I, n) arrives: n <= m, the script answers -3 ("withdrawn, nobody waits") and
     *       returns before its {@code if s.own then HDEL} branch. The client, which does wait, throws
     *       TemporaryLockingException without withdrawing (a definite reply). The granted claim of attempt 1 is
     *       an orphan for the full expiry.</li>
     * </ol>
     */
    @Test
    void nr2_aRetriedAcquireRefusedByAHigherTombstoneLeavesItsGrantBehind() {
        try (UnifiedJedis jedis = RedisLocker.builder().node("127.0.0.1", server.port()).newClient(1)) {
            byte[] key = "r2:nr2-lock".getBytes(StandardCharsets.UTF_8);
            byte[] field = "crid-a".getBytes(StandardCharsets.UTF_8);
            String instance = "00000000000000aa";
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
            byte[] otherField = "crid-b".getBytes(StandardCharsets.UTF_8);
            List<?> other = AcquireReply.of(RedisScript.ACQUIRE.run(jedis, key, acquireArgs(otherField,
                    ("00000000000000bb" + "0000000000000001").getBytes(StandardCharsets.US_ASCII), owner)), jedis, key,
                    otherField);
            assertEquals(1L, other.get(0), "the repeat of a granted acquire was refused (-3) and its grant was left "
                    + "behind: " + (left == null ? null : new String(left, StandardCharsets.UTF_8).split("\n")[0])
                    + "; nobody waits for it, and another locker is refused for " + EXPIRY);
        }
    }

    private static List<byte[]> acquireArgs(byte[] field, byte[] nonce, byte[] owner) {
        return List.of(field, nonce, ms(EXPIRY), owner, b("0"), b("1"), b("off"));
    }

    private static byte[] ms(Duration d) {
        return Long.toString(d.toMillis()).getBytes(StandardCharsets.US_ASCII);
    }

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    // =================================================================================================================
    // NR3: with replicas > 0, a WAIT that fails with an error reply (ACL without +wait) throws out of runAndWait after
    // the script GRANTED the claim: classified as a permanent refusal (NOPERM), and nothing withdraws the grant.
    // =================================================================================================================

    /**
     * The acquire script and WAIT are pipelined; the script's reply is {1, token} (granted), WAIT's is an error.
     * {@code new Object[]{script.get(), acks.get()}} throws the JedisDataException; writeSingleLock withdraws only for
     * connection and cluster failures; the caller gets PermanentLockingException and the claim lives for the expiry.
     * Every later acquire of this locker is refused by its own orphan ("lock is held", naming itself), and so is
     * everybody else.
     */
    @Test
    void nr3_aFailedWaitAfterAGrantIsPermanentAndLeavesTheGrantBehind() {
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

    /**
     * A proxy that, when told, lets the next script request (EVALSHA/EVAL) through, drops the server's reply to it,
     * resets the client's connection and stops accepting connections (refused) until closed.
     */
    static final class ResettingProxy implements AutoCloseable {
        private volatile ServerSocket listener;
        private final int target;
        private final List<Socket> sockets = new CopyOnWriteArrayList<>();
        private volatile boolean armed;
        private volatile int scripts;

        ResettingProxy(int target) throws IOException {
            this.target = target;
            this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
            this.port = listener.getLocalPort();
            Thread t = new Thread(this::accept, "resetting-proxy");
            t.setDaemon(true);
            t.start();
        }

        private final int port;

        int port() {
            return port;
        }

        /** Accepts connections again, on the same port. */
        void comeBack() throws IOException {
            ServerSocket again = new ServerSocket();
            again.setReuseAddress(true);
            again.bind(new java.net.InetSocketAddress(InetAddress.getLoopbackAddress(), port), 50);
            listener = again;
            Thread t = new Thread(this::accept, "resetting-proxy");
            t.setDaemon(true);
            t.start();
        }

        void dropTheReplyToTheNextScriptAndGoDown() {
            armed = true;
        }

        int scriptsForwarded() {
            return scripts;
        }

        private void accept() {
            ServerSocket l = listener;
            while (!l.isClosed()) {
                try {
                    Socket client = l.accept();
                    Socket server = new Socket(InetAddress.getLoopbackAddress(), target);
                    sockets.add(client);
                    sockets.add(server);
                    boolean[] dropNext = {false};
                    daemon(() -> pump(client, server, dropNext, true));
                    daemon(() -> pump(server, client, dropNext, false));
                } catch (IOException e) {
                    return;
                }
            }
        }

        private void pump(Socket from, Socket to, boolean[] dropNext, boolean up) {
            byte[] buf = new byte[16 * 1024];
            try {
                InputStream in = from.getInputStream();
                OutputStream out = to.getOutputStream();
                int n;
                while ((n = in.read(buf)) >= 0) {
                    if (up) {
                        String s = new String(buf, 0, n, StandardCharsets.ISO_8859_1).toUpperCase();
                        if (s.contains("EVALSHA") || s.contains("EVAL")) {
                            scripts++;
                            synchronized (dropNext) {
                                if (armed) {
                                    armed = false;
                                    dropNext[0] = true;
                                }
                            }
                        }
                    } else {
                        synchronized (dropNext) {
                            if (dropNext[0]) { // the server ran the script: lose its reply with the connection
                                listener.close(); // the endpoint is down for a moment: connections are refused
                                to.setSoLinger(true, 0);
                                to.close();
                                from.close();
                                return;
                            }
                        }
                    }
                    out.write(buf, 0, n);
                    out.flush();
                }
            } catch (IOException e) {
                // a side closed
            } finally {
                try {
                    from.close();
                    to.close();
                } catch (IOException ignored) {
                    // closed
                }
            }
        }

        private static void daemon(Runnable r) {
            Thread t = new Thread(r, "resetting-proxy-pump");
            t.setDaemon(true);
            t.start();
        }

        @Override
        public void close() throws IOException {
            listener.close();
            for (Socket s : sockets) {
                s.close();
            }
        }
    }
}
