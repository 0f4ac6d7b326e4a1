package dev.locker.redis;

import dev.locker.testkit.RedisServer;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockerConfig;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.UnifiedJedis;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What the Redis test classes on one server share (waiting and handoff, the compact claim, listing, the locker's own
 * behaviour): one server, a key prefix of the test class's own, the lockers a test opens (closed after it, with
 * whatever else it asked to be closed), a pool for the waits, and the views of a lock's queue and of a locker's
 * wake-up subscription that the waiting scenarios assert on. A JUnit extension, registered
 * in a static field of the test class ({@code @RegisterExtension}). The server is the JVM's shared one, or the class's
 * own ({@link #ownServer}) started before its tests and stopped after them; lockers are closed after each test.
 */
final class RedisWaitingFixture implements BeforeAllCallback, AfterEachCallback, AfterAllCallback {

    private final boolean ownServer;
    private final boolean fresh;
    private final String prefix;
    private final List<RedisLocker> opened = new ArrayList<>();
    private final List<AutoCloseable> closeables = new ArrayList<>();
    private RedisTarget target;
    private UnifiedJedis admin;
    private ExecutorService pool;

    private RedisWaitingFixture(boolean ownServer, boolean fresh, String stem) {
        this.ownServer = ownServer;
        this.fresh = fresh;
        this.prefix = stem + "-" + LockerConfig.randomRid().substring(0, 8) + ":";
    }

    /** On the JVM's shared server (or {@code LOCKER_REDIS_URI}'s); keys under {@code stem-<random>:}. */
    static RedisWaitingFixture onTarget(String stem) {
        return new RedisWaitingFixture(false, false, stem);
    }

    /**
     * On a fresh server of the class's own (or {@code LOCKER_REDIS_URI}'s), for assertions that need a nearly empty
     * keyspace: one listing page of a few SCANs finds every lock there.
     */
    static RedisWaitingFixture onFreshTarget(String stem) {
        return new RedisWaitingFixture(false, true, stem);
    }

    /**
     * On a redis-server of the class's own, for tests that kill clients and servers: the class is skipped (an
     * assumption fails) when {@code LOCKER_REDIS_URI} names an external server.
     */
    static RedisWaitingFixture ownServer(String stem) {
        return new RedisWaitingFixture(true, true, stem);
    }

    /** The server's process ({@link #ownServer} only). */
    RedisServer server() {
        return target.process();
    }

    /** The server (its URI, and its process unless it is external). */
    RedisTarget target() {
        return target;
    }

    /** A plain client for looking at the server. */
    UnifiedJedis admin() {
        return admin;
    }

    /** The server's clock (TIME) in microseconds, the unit of tokens and claim times. */
    long serverMicros() {
        return (Long) admin.eval("local t = redis.call('TIME') return tonumber(t[1]) * 1000000 + tonumber(t[2])");
    }

    /** The key prefix of this fixture's lockers. */
    String prefix() {
        return prefix;
    }

    // ---- lockers ------------------------------------------------------------------------------------------------

    /** A builder on this server by its URI, with the fixture's key prefix. */
    RedisLockerBuilder onTarget() {
        return target.locker(prefix);
    }

    /** A builder on 127.0.0.1:{@code port} (this server, another one, or a proxy in front of one), same prefix. */
    RedisLockerBuilder on(int port) {
        return RedisLocker.builder().node("127.0.0.1", port).keyPrefix(prefix);
    }

    /** {@code b} for a locker called {@code name} (its rid: name-random), no restart guard, and this linger. */
    static RedisLockerBuilder configured(RedisLockerBuilder b, String name, Duration expiry, Duration linger) {
        return withRid(b, name + "-" + LockerConfig.randomRid().substring(0, 8), expiry).wakeupLinger(linger);
    }

    /** {@code b} for a locker whose rid is {@code rid} exactly, with this expiry and no restart guard. */
    static RedisLockerBuilder withRid(RedisLockerBuilder b, String rid, Duration expiry) {
        return b.config(LockerConfig.builder().rid(rid).expiry(expiry).build()).restartGuard(Duration.ZERO);
    }

    /** Builds the locker, to be closed after the test. */
    RedisLocker open(RedisLockerBuilder b) {
        return adopt(b.build());
    }

    /** {@code l}, built by the test, is closed after it with the lockers it opened (in the order they came). */
    RedisLocker adopt(RedisLocker l) {
        opened.add(l);
        return l;
    }

    /** Closes the lockers opened so far in this test (what {@link #afterEach} does first). */
    void closeLockers() {
        opened.forEach(RedisLocker::close);
        opened.clear();
    }

    /** {@code c} is closed after the test, after its lockers. */
    <T extends AutoCloseable> T closeAfterTest(T c) {
        closeables.add(c);
        return c;
    }

    /** A lock of its own: {@code name} and a random suffix. */
    static KeyColumn lock(String name) {
        return KeyColumn.named(name + "-" + LockerConfig.randomRid().substring(0, 6));
    }

    /** Runs {@code task} on the fixture's pool. */
    <T> Future<T> submit(Callable<T> task) {
        return pool.submit(task);
    }

    // ---- views --------------------------------------------------------------------------------------------------

    /** The queue entries in the lock's hash ("q" fields), by field. */
    List<String> queued(RedisLocker l, KeyColumn lock) {
        List<String> out = new ArrayList<>();
        for (Map.Entry<byte[], byte[]> e : admin.hgetAll(l.redisKey(lock)).entrySet()) {
            if (e.getKey().length > 0 && e.getKey()[0] == 'q') {
                out.add(new String(e.getKey(), StandardCharsets.US_ASCII));
            }
        }
        return out;
    }

    /** Waits (30 s at most) until at least {@code n} are queued for {@code lock}. */
    void awaitQueued(RedisLocker l, KeyColumn lock, int n) throws InterruptedException {
        awaitTrue(() -> queued(l, lock).size() >= n, () -> "never saw " + n + " queued: " + queued(l, lock));
    }

    /** How many live threads listen for {@code l}'s releases. */
    static long listeners(RedisLocker l) {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().equals("locker-redis-wakeups-" + l.rid()) && t.isAlive()).count();
    }

    /** How many connections {@code on} counts as subscribed to the release channel of this fixture's prefix. */
    long subscribers(UnifiedJedis on) {
        List<?> r = (List<?>) on.sendCommand(Protocol.Command.PUBSUB, "NUMSUB", prefix + "released");
        return (Long) r.get(1);
    }

    /** {@link #subscribers} on this fixture's server. */
    long subscribersOnServer() {
        return subscribers(admin);
    }

    // ---- waiting ------------------------------------------------------------------------------------------------

    /** Waits (30 s at most, looking every 5 ms) until {@code done}; else fails with {@code failure}. */
    static void awaitTrue(BooleanSupplier done, String failure) throws InterruptedException {
        awaitTrue(done, () -> failure);
    }

    static void awaitTrue(BooleanSupplier done, Supplier<String> failure) throws InterruptedException {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!done.getAsBoolean()) {
            assertTrue(System.nanoTime() < until, failure);
            Thread.sleep(5);
        }
    }

    /**
     * {@code holder} takes the lock, {@code waiter} queues for it (waiting up to {@code wait}), the holder releases:
     * the waiter is granted (within {@code granted}), and releases.
     */
    void handOver(RedisLocker holder, RedisLocker waiter, KeyColumn lock, Duration wait, Duration granted)
            throws Exception {
        Lease held = holder.acquire(lock, "holding");
        Future<Lease> grant = submit(() -> waiter.tryAcquire(lock, "waiting", wait).orElseThrow());
        awaitQueued(holder, lock, 1);
        held.close();
        grant.get(granted.toMillis(), TimeUnit.MILLISECONDS).close();
    }

    // ---- lifecycle ----------------------------------------------------------------------------------------------

    @Override
    public void beforeAll(ExtensionContext context) {
        if (ownServer) {
            Assumptions.assumeFalse(RedisTarget.isExternal(), "kills clients and servers: needs a server of its own");
        }
        target = fresh ? RedisTarget.start() : RedisTarget.shared();
        admin = target.admin();
        pool = Executors.newCachedThreadPool();
    }

    /** Closes the test's lockers, then what it asked to be closed. */
    @Override
    public void afterEach(ExtensionContext context) throws Exception {
        closeLockers();
        for (AutoCloseable c : closeables) {
            c.close();
        }
        closeables.clear();
    }

    @Override
    public void afterAll(ExtensionContext context) {
        if (target == null) {
            return; // skipped
        }
        pool.shutdownNow();
        admin.close();
        target.close();
    }
}
