package dev.locker.redis;

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
import redis.clients.jedis.exceptions.JedisDataException;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What a failure means decides its type: {@link TemporaryLockingException} when the same request may succeed later
 * without anyone changing anything (server-side resource limits, transient states, and server errors we do not know),
 * {@link PermanentLockingException} when it will not (refused credentials or permissions, a request the server cannot
 * run). Each state is provoked on a real redis-server.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RedisFailureMeaningTest {

    private final List<Locker> opened = new ArrayList<>();
    private final List<AutoCloseable> servers = new ArrayList<>();

    @BeforeEach
    void needsOwnServers() {
        Assumptions.assumeFalse(RedisTarget.isExternal(), "needs servers it can reconfigure");
    }

    @AfterEach
    void closeAll() throws Exception {
        opened.forEach(Locker::close);
        opened.clear();
        for (AutoCloseable s : servers) {
            s.close();
        }
        servers.clear();
    }

    private RedisServer server(String... args) {
        RedisServer s = RedisServer.start(args);
        servers.add(s);
        return s;
    }

    private RedisLocker locker(RedisServer s) {
        RedisLocker l = RedisLocker.builder().node("127.0.0.1", s.port()).keyPrefix("meaning:")
                .config(LockerConfig.builder().expiry(Duration.ofSeconds(5)).build())
                .restartGuard(Duration.ZERO).build();
        opened.add(l);
        return l;
    }

    private static KeyColumn lock(String name) {
        return KeyColumn.named(name + "-" + LockerConfig.randomRid().substring(0, 8));
    }

    private static LockingException failure(Locker l, KeyColumn lock) {
        LockingException e = assertThrows(LockingException.class, () -> l.acquire(lock, "test").close());
        assertEquals(lock, e.lock());
        return e;
    }

    /** The failure, checked to be temporary, to name the server, and to carry the server's words. */
    private static void assertTemporary(Locker l, RedisServer s, String serverSays) {
        LockingException e = failure(l, lock("temporary"));
        assertInstanceOf(TemporaryLockingException.class, e, e.toString());
        assertTrue(e.getMessage().contains("127.0.0.1:" + s.port()), e.getMessage());
        assertTrue(e.getMessage().contains(serverSays), e.getMessage());
    }

    /**
     * Given a server at its {@code maxclients} (one client, held by someone else), a locker's connection is refused
     * with {@code ERR max number of clients reached}: a resource limit that frees itself, so tryAcquire keeps trying
     * instead of giving up at once, and the lock is granted once a connection slot is free.
     */
    @Test
    void maxClientsReachedIsTemporary() throws IOException {
        RedisServer s = server("--maxclients", "1");
        KeyColumn lock = lock("max-clients");
        RedisLocker l;
        try (Socket hog = occupyTheOnlySlot(s)) {
            l = locker(s); // built while the server is full (the client connects lazily)
            assertTemporary(l, s, "max number of clients");
            assertEquals(Optional.empty(), l.tryAcquire(lock, "meanwhile", Duration.ofMillis(200)),
                    "tryAcquire waits and reports no lease, it does not give up with an exception");
        }
        Optional<Lease> later = l.tryAcquire(lock, "once a slot is free", Duration.ofSeconds(30));
        assertTrue(later.isPresent(), "granted once the other client left");
        later.get().close();
    }

    /** Holds the server's only client slot: a raw connection that the server has accepted (it answered PING). */
    private static Socket occupyTheOnlySlot(RedisServer s) throws IOException {
        while (true) {
            Socket socket = new Socket(InetAddress.getLoopbackAddress(), s.port());
            socket.getOutputStream().write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
            String reply = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.US_ASCII))
                    .readLine();
            if ("+PONG".equals(reply)) {
                return socket;
            }
            socket.close(); // the server had not yet noticed that an earlier client (the start-up PING) left
            RedisServer.sleep(20);
        }
    }

    /** {@code OOM}: over {@code maxmemory} under {@code noeviction}, writes are refused until memory is freed. */
    @Test
    void outOfMemoryIsTemporary() {
        RedisServer s = server();
        RedisLocker l = locker(s);
        s.cli("CONFIG", "SET", "maxmemory", "1");
        assertTemporary(l, s, "OOM");
        s.cli("CONFIG", "SET", "maxmemory", "0");
        l.acquire(lock("after-oom"), "memory freed").close();
    }

    /** {@code NOREPLICAS}: fewer good replicas than {@code min-replicas-to-write}; they may come back. */
    @Test
    void tooFewReplicasIsTemporary() {
        RedisServer s = server();
        RedisLocker l = locker(s);
        s.cli("CONFIG", "SET", "min-replicas-to-write", "1");
        assertTemporary(l, s, "NOREPLICAS");
        s.cli("CONFIG", "SET", "min-replicas-to-write", "0");
        l.acquire(lock("after-noreplicas"), "").close();
    }

    /**
     * {@code READONLY} and {@code MASTERDOWN}: the node a locker talks to was demoted (as after a failover, before the
     * client follows the new master), with its master unreachable: a state that changes when the topology settles.
     */
    @Test
    void aDemotedMasterIsTemporary() {
        RedisServer s = server();
        RedisLocker l = locker(s);
        int nobody = RedisServer.freePort(false);
        s.cli("REPLICAOF", "127.0.0.1", Integer.toString(nobody));
        assertTemporary(l, s, "READONLY");
        s.cli("CONFIG", "SET", "replica-serve-stale-data", "no");
        assertTemporary(l, s, "MASTERDOWN");
        s.cli("REPLICAOF", "NO", "ONE");
        l.acquire(lock("promoted-again"), "").close();
    }

    /** {@code BUSY}: another client's script runs past {@code busy-reply-threshold}; it ends or is killed. */
    @Test
    void aServerBusyWithAScriptIsTemporary() throws Exception {
        RedisServer s = server("--busy-reply-threshold", "50");
        RedisLocker l = locker(s);
        l.acquire(lock("warm-up"), "").close();
        Thread busy = new Thread(() -> s.cli("EVAL", "while true do end", "0"), "busy-script");
        busy.start();
        awaitReply(s, "-BUSY");
        assertTemporary(l, s, "BUSY");
        s.cli("SCRIPT", "KILL");
        busy.join();
        l.acquire(lock("after-busy"), "").close();
    }

    /**
     * {@code LOADING}: a server still loading its data set (here slowed down with {@code key-load-delay}) answers
     * every command with LOADING until it is done.
     */
    @Test
    void aServerLoadingItsDataIsTemporary() {
        RedisServer s = server("--enable-debug-command", "local", "--key-load-delay", "2000",
                "--loading-process-events-interval-bytes", "1024");
        s.cli("DEBUG", "POPULATE", "2000", "filler", "100");
        s.cli("SAVE");
        s.kill9();
        s.startAgainWhileLoading();
        RedisLocker l = locker(s);
        assertTemporary(l, s, "LOADING");
    }

    /** Waits until the server answers PING with a reply starting with {@code prefix}. */
    private static void awaitReply(RedisServer s, String prefix) {
        while (true) {
            try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), s.port())) {
                socket.getOutputStream().write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
                String reply = new BufferedReader(new InputStreamReader(socket.getInputStream(),
                        StandardCharsets.US_ASCII)).readLine();
                if (reply != null && reply.startsWith(prefix)) {
                    return;
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            RedisServer.sleep(10);
        }
    }

    /**
     * {@code WRONGTYPE}: our lock's key holds another application's string. No retry will change that: permanent,
     * naming the server.
     */
    @Test
    void anotherTypeUnderOurKeyIsPermanent() {
        RedisServer s = server();
        RedisLocker l = locker(s);
        KeyColumn lock = lock("wrong-type");
        try (var admin = RedisLocker.builder().node("127.0.0.1", s.port()).newClient(1)) {
            admin.set(l.redisKey(lock), "not a hash".getBytes(StandardCharsets.US_ASCII));
        }
        LockingException e = failure(l, lock);
        assertInstanceOf(PermanentLockingException.class, e, e.toString());
        assertTrue(e.getMessage().contains("WRONGTYPE"), e.getMessage());
        assertTrue(e.getMessage().contains("127.0.0.1:" + s.port()), e.getMessage());
    }

    /** A server whose operator disabled scripting ({@code rename-command EVALSHA ""}) will never run the protocol. */
    @Test
    void aServerWithoutScriptingIsPermanent() {
        RedisServer s = server("--rename-command", "EVALSHA", "", "--rename-command", "EVAL", "");
        LockingException e = failure(locker(s), lock("no-scripts"));
        assertInstanceOf(PermanentLockingException.class, e, e.toString());
        assertTrue(e.getMessage().contains("unknown command"), e.getMessage());
    }

    /**
     * A server-side error this library does not know (a newer server's state, a proxy's own refusal) errs towards
     * temporary: a caller's bounded retry costs little, while giving up at once on a transient state cannot be undone.
     */
    @Test
    void anUnknownServerErrorIsTemporary() {
        for (String reply : List.of("SOMENEWSTATE the server is rebalancing", "ERR proxy: backend pool exhausted",
                "ERR max number of clients reached")) {
            LockingException e = RedisLocker.classify(new JedisDataException(reply), lock("unknown"), "writing a "
                    + "claim", "Redis redis://127.0.0.1:1");
            assertInstanceOf(TemporaryLockingException.class, e, reply);
            assertTrue(e.getMessage().contains(reply), e.getMessage());
        }
        for (String reply : List.of("NOPERM this user has no permissions to run the 'evalsha' command",
                "WRONGPASS invalid username-password pair or user is disabled.",
                "ERR user_script:12: attempt to compare nil with number script: 0123, on @user_script:12.",
                "ERR Error compiling script (new function): user_script:1: unexpected symbol",
                "WRONGTYPE Operation against a key holding the wrong kind of value")) {
            LockingException e = RedisLocker.classify(new JedisDataException(reply), lock("known"), "writing a "
                    + "claim", "Redis redis://127.0.0.1:1");
            assertInstanceOf(PermanentLockingException.class, e, reply);
        }
    }
}
