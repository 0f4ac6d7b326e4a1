package dev.locker.redis;

import dev.locker.testkit.FaultProxy;
import dev.locker.testkit.RedisServer;
import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockTransaction;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockingException;
import dev.locker.api.PermanentLockingException;
import dev.locker.api.TemporaryLockingException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisConnectionException;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Failures an operator meets: refused connections, timeouts, wrong passwords, ACL users, replicas that do not
 * acknowledge. Each must surface at once as a Temporary or Permanent exception that names the server.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RedisFailureTest {

    private static final String PASSWORD = "s3cret-admin";
    private RedisServer server;
    private final List<Locker> opened = new ArrayList<>();

    @BeforeAll
    void start() {
        Assumptions.assumeFalse(RedisTarget.isExternal(), "needs servers it can configure");
        server = RedisServer.start("--requirepass", PASSWORD, "--enable-debug-command", "local");
        server.cli("-a", PASSWORD, "--no-auth-warning", "ACL", "SETUSER", "limited", "on", ">limited-pw", "resetkeys",
                "~lim:*", "resetchannels", "-@all", "+evalsha", "+eval", "+info", "+time", "+hgetall", "+hget", "+hset", "+hdel", "+hkeys",
                "+pexpire");
        server.cli("-a", PASSWORD, "--no-auth-warning", "ACL", "SETUSER", "outsider", "on", ">outsider-pw",
                "resetkeys", "~other:*", "-@all", "+evalsha", "+eval", "+info", "+time", "+hgetall", "+hget", "+hset", "+hdel", "+hkeys",
                "+pexpire");
    }

    @AfterEach
    void closeLockers() {
        opened.forEach(Locker::close);
        opened.clear();
    }

    @AfterAll
    void stop() {
        if (server != null) {
            server.close();
        }
    }

    private RedisLocker open(RedisLockerBuilder b) {
        RedisLocker l = b.config(LockerConfig.builder().expiry(Duration.ofSeconds(5)).build())
                .restartGuard(Duration.ZERO).build();
        opened.add(l);
        return l;
    }

    private RedisLockerBuilder on(RedisServer s) {
        return RedisLocker.builder().node("127.0.0.1", s.port()).keyPrefix("lim:");
    }

    /** An acquire that must fail; each on a lock of its own (a timed-out acquire may still be granted later). */
    private static LockingException failure(Locker l) {
        KeyColumn lock = KeyColumn.named("job-" + LockerConfig.randomRid().substring(0, 8));
        LockingException e = assertThrows(LockingException.class, () -> l.acquire(lock, "test").close());
        assertEquals(lock, e.lock());
        return e;
    }

    private String where(RedisServer s) {
        return "127.0.0.1:" + s.port();
    }

    @Test
    void aRefusedConnectionIsTemporaryAndNamesTheServer() throws IOException {
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        RedisLocker l = open(RedisLocker.builder().node("127.0.0.1", port));
        LockingException e = failure(l);
        assertInstanceOf(TemporaryLockingException.class, e, e.toString());
        assertTrue(e.getMessage().contains("127.0.0.1:" + port), e.getMessage());
        assertInstanceOf(JedisConnectionException.class, e.getCause());
        assertThrows(TemporaryLockingException.class, () -> l.holder(KeyColumn.named("job")));
    }

    @Test
    void aWrongPasswordIsPermanentAndNamesTheServer() {
        LockingException e = failure(open(on(server).password("wrong-pw-here")));
        assertInstanceOf(PermanentLockingException.class, e, e.toString());
        assertTrue(e.getMessage().contains(where(server)), e.getMessage());
        assertTrue(e.getMessage().contains("password is wrong"), e.getMessage());
        assertFalse(e.getMessage().contains("wrong-pw-here"), e.getMessage());
        assertNotNull(e.getCause());
    }

    @Test
    void aMissingPasswordIsPermanentAndSaysWhereToGiveIt() {
        LockingException noAuth = failure(open(on(server)));
        assertInstanceOf(PermanentLockingException.class, noAuth, noAuth.toString());
        assertTrue(noAuth.getMessage().contains(where(server)), noAuth.getMessage());
        assertTrue(noAuth.getMessage().contains("requires a password and none was given"), noAuth.getMessage());
        assertTrue(noAuth.getMessage().contains("redis://:PASSWORD@host:port"), noAuth.getMessage());
    }

    @Test
    void anAclUserLimitedToTheLockPrefixCanLock() {
        RedisLocker a = open(on(server).user("limited").password("limited-pw"));
        RedisLocker b = open(on(server).user("limited").password("limited-pw"));
        KeyColumn lock = KeyColumn.of("acl", "col");
        try (Lease lease = a.acquire(lock, "limited user")) {
            assertTrue(lease.fencingToken() > 0);
            lease.renew();
            assertEquals(a.rid(), b.holder(lock).orElseThrow().rid());
            assertThrows(TemporaryLockingException.class, () -> b.acquire(lock, "me too"));
        }
        assertEquals(Optional.empty(), b.holder(lock));
        a.acquire(lock, "again");
        assertTrue(b.forceRelease(lock));
    }

    @Test
    void anAclUserWithoutRightsOnThePrefixFailsPermanently() {
        RedisLocker l = open(on(server).user("outsider").password("outsider-pw"));
        LockingException e = failure(l);
        assertInstanceOf(PermanentLockingException.class, e, e.toString());
        assertTrue(e.getMessage().contains(where(server)), e.getMessage());
        assertTrue(e.getMessage().contains("NOPERM"), e.getMessage());
        assertTrue(e.getMessage().contains("lacks a permission"), e.getMessage());
        assertThrows(PermanentLockingException.class, () -> l.holder(KeyColumn.named("job")));
    }

    @Test
    void theRestartGuardNeedsInfoAndSaysSo() {
        server.cli("-a", PASSWORD, "--no-auth-warning", "ACL", "SETUSER", "noinfo", "on", ">noinfo-pw", "resetkeys",
                "~lim:*", "-@all", "+evalsha", "+eval", "+time", "+hgetall", "+hget", "+hset", "+hdel", "+hkeys",
                "+pexpire");
        RedisLocker l = RedisLocker.builder().node("127.0.0.1", server.port()).keyPrefix("lim:").user("noinfo")
                .password("noinfo-pw").config(LockerConfig.builder().expiry(Duration.ofSeconds(5)).build()).build();
        opened.add(l);
        LockingException e = failure(l);
        assertInstanceOf(PermanentLockingException.class, e, e.toString());
        assertTrue(e.getMessage().contains("restart guard needs the INFO command"), e.getMessage());
    }

    /**
     * A stalled server ({@code DEBUG SLEEP}): the call times out, is reported as temporary naming the server, and
     * is not retried: once the server wakes up it finds exactly one EVALSHA in its input. On a loaded machine the
     * probe may take a slow answer for the sleep, or the sleep may end first; the scenario then runs again.
     */
    @Test
    void aTimeoutIsTemporaryAndNotRetried() {
        GuardedLockers.rerunUntil("the acquire reached the server while it slept", this::aTimeoutOnASleepingServer);
    }

    /** The scenario above, with the server asleep for 3 s times {@code stretch}. */
    private boolean aTimeoutOnASleepingServer(int stretch) {
        RedisLocker l = open(on(server).password(PASSWORD).socketTimeout(Duration.ofMillis(300)));
        l.acquire(KeyColumn.named("warm-up"), "test").close(); // loads the scripts, writes the owner record
        // the owner record's look, once a second, may take the idle connection while the server sleeps; with two
        // more open, the acquire needs no new one, whose handshake would time out before the script is sent
        try {
            ((RedisClient) l.client()).getPool().addObjects(2);
        } catch (Exception e) {
            throw new AssertionError("could not open two more connections", e);
        }
        server.cli("-a", PASSWORD, "--no-auth-warning", "CONFIG", "SET", "slowlog-log-slower-than", "0");
        try {
            server.cli("-a", PASSWORD, "--no-auth-warning", "CONFIG", "SET", "slowlog-max-len", "1000");
            server.cli("-a", PASSWORD, "--no-auth-warning", "SLOWLOG", "RESET");
            Thread sleeper = new Thread(() -> server.cli("-a", PASSWORD, "--no-auth-warning", "DEBUG", "SLEEP",
                    Integer.toString(3 * stretch)));
            sleeper.start();
            awaitUnresponsive(server);
            LockingException e = refusal(l);
            join(sleeper);
            if (e == null) {
                return false; // granted: the server was not asleep yet, or awake again, when the acquire reached it
            }
            assertInstanceOf(TemporaryLockingException.class, e, e.toString());
            assertTrue(e.getMessage().contains("timed out"), e.getMessage());
            assertTrue(e.getMessage().contains(where(server)), e.getMessage());
            // every command the server ran is in the slow log with its arguments: count the acquire script's runs
            // (the withdrawal of the unknown outcome is another script, retried in the background until it gets
            // through)
            String log = server.cli("-a", PASSWORD, "--no-auth-warning", "SLOWLOG", "GET", "1000");
            int acquires = log.split(RedisScript.ACQUIRE.sha(), -1).length - 1;
            if (acquires == 0) {
                return false; // the acquire timed out before its script was sent: nothing to count
            }
            assertEquals(1, acquires, "exactly one acquire attempt reached the server: " + log);
            return true;
        } finally {
            server.cli("-a", PASSWORD, "--no-auth-warning", "CONFIG", "SET", "slowlog-log-slower-than", "10000");
        }
    }

    /** The failure of an acquire on a lock of its own, or null when it was granted (the lease is closed at once). */
    private static LockingException refusal(Locker l) {
        KeyColumn lock = KeyColumn.named("job-" + LockerConfig.randomRid().substring(0, 8));
        try {
            l.acquire(lock, "test").close();
            return null;
        } catch (LockingException e) {
            assertEquals(lock, e.lock());
            return e;
        }
    }

    private static void join(Thread t) {
        try {
            t.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted while the server slept", e);
        }
    }

    /**
     * Given an acquire whose script ran on the server but whose reply came too late (the client timed out), the
     * claim's fate is unknown to its locker: it must be given back (compare-and-delete on its nonce) rather than
     * block every other process until it expires.
     */
    @Test
    void aTimedOutAcquireThatTheServerGrantedIsWithdrawn() throws Exception {
        try (FaultProxy proxy = new FaultProxy("127.0.0.1", server.port())) {
            RedisLocker late = open(RedisLocker.builder().node("127.0.0.1", proxy.port()).keyPrefix("lim:")
                    .password(PASSWORD).socketTimeout(Duration.ofMillis(300)));
            RedisLocker other = open(on(server).password(PASSWORD));
            // loads the scripts and writes the owner record (the pair's first claim waits for it, on a connection of its own)
            late.acquire(KeyColumn.named("warm-up"), "reply lost").close();
            late.awaitOwnerRecord();
            KeyColumn lock = KeyColumn.named("late-reply-" + LockerConfig.randomRid().substring(0, 8));
            proxy.stallRepliesOnOpenConnections(Duration.ofSeconds(2));
            LockingException e = assertThrows(LockingException.class, () -> late.acquire(lock, "reply lost"));
            assertInstanceOf(TemporaryLockingException.class, e, e.toString());
            assertTrue(e.getMessage().contains("timed out"), e.getMessage());
            assertEquals(Optional.empty(), other.holder(lock), "no orphan claim is left behind");
            other.acquire(lock, "next").close();
        }
    }

    /**
     * Given an acquire whose request (not its reply) is held up on the way until after its client timed out and
     * withdrew it: the withdrawal finds nothing to remove, and the request reaches the server afterwards. It must grant
     * nothing: neither another process nor the same locker may find the lock blocked by a claim nobody waits for.
     * The owner record's background look may take the one connection first and time out on it; the acquire then goes
     * out on a fresh connection, which the proxy does not hold, so the scenario runs again.
     */
    @Test
    void aLateAcquireRequestGrantsNothingOnceItWasWithdrawn() {
        GuardedLockers.rerunUntil("the acquire went out on the connection whose requests were held",
                this::aLateAcquireRequest);
    }

    /** The scenario above, with a socket timeout of 300 ms times {@code stretch}. */
    private boolean aLateAcquireRequest(int stretch) {
        // the proxy counts the acquire script's calls, so a repeated acquire is told from one on a fresh connection
        try (FaultProxy proxy = new FaultProxy("127.0.0.1", server.port(), RedisScript.ACQUIRE.sha())) {
            RedisLocker late = open(RedisLocker.builder().node("127.0.0.1", proxy.port()).keyPrefix("lim:")
                    .password(PASSWORD).socketTimeout(Duration.ofMillis(300L * stretch)).poolSize(1));
            RedisLocker other = open(on(server).password(PASSWORD));
            late.acquire(KeyColumn.named("warm-up"), "request held up").close(); // its one connection is open now
            late.acquire(KeyColumn.named("warm-up"), "the same locker, next attempt").close(); // and the owner record
            late.awaitOwnerRecord(); // has both pairs: no write of it competes for the connection below
            KeyColumn lock = KeyColumn.named("late-request-" + LockerConfig.randomRid().substring(0, 8));

            proxy.holdRequestsOnOpenConnections();
            int acquiresBefore = proxy.markedRequests();
            LockingException e;
            try (Lease granted = late.acquire(lock, "request held up")) {
                assertEquals(1, proxy.markedRequests() - acquiresBefore, "the acquire was sent once");
                return false; // it went out on a connection opened after the hold, so nothing held it
            } catch (LockingException refused) {
                e = refused;
            }
            if (proxy.markedRequests() == acquiresBefore) {
                return false; // the acquire failed before it was sent: the look's timeout broke its connection
            }
            assertInstanceOf(TemporaryLockingException.class, e, e.toString());
            assertTrue(e.getMessage().contains("timed out"), e.getMessage());
            proxy.awaitHeldRequest(Duration.ofSeconds(10));
            assertEquals(Optional.empty(), other.holder(lock), "the request has not reached the server yet");

            proxy.releaseRequests();
            proxy.awaitReplyToHeldRequest(Duration.ofSeconds(10)); // the server has run the late acquire now
            assertEquals(Optional.empty(), other.holder(lock), "the late request granted nothing");
            try (Lease again = late.acquire(lock, "the same locker, next attempt")) {
                assertTrue(again.fencingToken() > 0);
            }
            other.acquire(lock, "another process").close();
            return true;
        } catch (InterruptedException interrupted) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted while the owner record was written", interrupted);
        }
    }

    /** Waits until the server stops answering PING within 100 ms (it is inside DEBUG SLEEP). */
    private static void awaitUnresponsive(RedisServer s) {
        while (true) {
            try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), s.port())) {
                socket.setSoTimeout(100);
                socket.getOutputStream().write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
                socket.getInputStream().read();
                RedisServer.sleep(10); // it answered (NOAUTH): not asleep yet
            } catch (SocketTimeoutException asleep) {
                return;
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }

    /**
     * The failover knob covers renewals too: given a holder whose replica was promoted (the old master does not know
     * yet), a renewal only the old master saw must not extend the holder's expiry, or the holder would go on past the
     * expiry its claim has on the new master, where another process takes the lock.
     */
    @Test
    void aRenewalCountsOnlyOnceTheReplicasAcknowledgedIt() {
        RedisServer master = RedisServer.start("--repl-diskless-sync-delay", "0"); // no 5 s wait to sync
        RedisServer replica = RedisServer.start("--replicaof", "127.0.0.1", Integer.toString(master.port()));
        try {
            while (!master.cli("INFO", "replication").contains("connected_slaves:1")
                    || !replica.cli("INFO", "replication").contains("master_link_status:up")
                    || !master.cli("WAIT", "1", "100").trim().equals("1")) {
                RedisServer.sleep(50);
            }
            RedisLocker a = on(master).replicas(1).replicaTimeout(Duration.ofSeconds(1))
                    .config(LockerConfig.builder().expiry(Duration.ofSeconds(3)).build())
                    .restartGuard(Duration.ZERO).build();
            opened.add(a);
            KeyColumn lock = KeyColumn.named("failover-" + LockerConfig.randomRid().substring(0, 8));
            LockTransaction tx = new LockTransaction("holder");
            a.writeLock(lock, tx);
            a.checkLocks(tx);
            replica.cli("REPLICAOF", "NO", "ONE"); // promoted; on it, the claim expires 3 s after it was granted
            RedisServer.sleep(1500);
            // unacknowledged, the renewal would have moved the holder's expiry to ~4.5 s
            assertThrows(TemporaryLockingException.class, () -> a.renewLocks(tx), "no replica saw the renewal");
            RedisServer.sleep(2000); // ~3.5 s or later: the claim is dead on the promoted replica
            RedisLocker b = open(on(replica));
            try (Lease lease = b.acquire(lock, "on the new master")) {
                assertThrows(ExpiredLockException.class, () -> a.checkLocks(tx), "the holder knows it lost the lock");
            }
        } finally {
            replica.close();
            master.close();
        }
    }

    /** The failover knob: a claim counts only once N replicas acknowledged it. */
    @Test
    void aClaimWaitsForReplicaAcknowledgements() {
        RedisServer master = RedisServer.start("--repl-diskless-sync-delay", "0"); // no 5 s wait to sync
        RedisServer replica = RedisServer.start("--replicaof", "127.0.0.1", Integer.toString(master.port()));
        try {
            while (!master.cli("INFO", "replication").contains("connected_slaves:1")
                    || !replica.cli("INFO", "replication").contains("master_link_status:up")) {
                RedisServer.sleep(50);
            }
            RedisLocker one = open(on(master).replicas(1).replicaTimeout(Duration.ofSeconds(2)));
            KeyColumn lock = KeyColumn.named("replicated");
            try (Lease lease = one.acquire(lock, "acknowledged by one replica")) {
                assertTrue(lease.fencingToken() > 0);
                try (UnifiedJedis onReplica = RedisLocker.builder().node("127.0.0.1", replica.port()).newClient(1)) {
                    assertEquals(1, onReplica.hlen(one.redisKey(lock)), "the replica has the claim (it carries the token)");
                }
            }
            RedisLocker two = open(on(master).replicas(2).replicaTimeout(Duration.ofMillis(200)));
            LockingException e = assertThrows(TemporaryLockingException.class,
                    () -> two.acquire(lock, "wants two replicas"));
            assertTrue(e.getMessage().contains("only 1 of 2 replicas"), e.getMessage());
            assertEquals(Optional.empty(), one.holder(lock), "the unacknowledged claim was withdrawn");
            LockTransaction tx = new LockTransaction();
            assertThrows(TemporaryLockingException.class, () -> two.writeLock(lock, tx));
            assertEquals(Optional.empty(), two.status(lock, tx));
        } finally {
            replica.close();
            master.close();
        }
    }
}
