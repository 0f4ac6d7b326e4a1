package dev.locker.redis;

import dev.locker.testkit.RedisServer;
import redis.clients.jedis.UnifiedJedis;

import java.time.Duration;

/**
 * The Redis server a test class runs against: the one named by {@code LOCKER_REDIS_URI} when it is set (then the tests
 * that must kill or reconfigure a server are skipped), else a local {@link RedisServer}. Classes that only read and
 * write keys under a prefix of their own share one server per test JVM; the others start their own.
 */
final class RedisTarget implements AutoCloseable {

    static final String EXTERNAL_URI = System.getenv("LOCKER_REDIS_URI");

    private final RedisServer process;
    private final String uri;
    private final boolean owned;

    private RedisTarget(RedisServer process, String uri, boolean owned) {
        this.process = process;
        this.uri = uri;
        this.owned = owned;
    }

    static boolean isExternal() {
        return EXTERNAL_URI != null && !EXTERNAL_URI.isBlank();
    }

    /** A server of the caller's own, which it may kill, restart or reconfigure; closing the target stops it. */
    static RedisTarget start() {
        if (isExternal()) {
            return new RedisTarget(null, EXTERNAL_URI.trim(), false);
        }
        RedisServer p = RedisServer.start();
        return new RedisTarget(p, p.address(), true);
    }

    /** The server this JVM's test classes share: never killed or reconfigured, and left running by close. */
    static RedisTarget shared() {
        if (isExternal()) {
            return new RedisTarget(null, EXTERNAL_URI.trim(), false);
        }
        RedisServer p = RedisServer.shared();
        return new RedisTarget(p, p.address(), false);
    }

    /** Null when the server is external. */
    RedisServer process() {
        return process;
    }

    String uri() {
        return uri;
    }

    /** A locker builder on this server, with a key prefix of the test's own. */
    RedisLockerBuilder locker(String prefix) {
        return RedisLocker.builder().uri(uri).keyPrefix(prefix);
    }

    /** A plain client for looking at the server. */
    UnifiedJedis admin() {
        return RedisLocker.builder().uri(uri).newClient(1);
    }

    /**
     * Waits until the server has provably been up for at least {@code d}, so that a restart guard of {@code d} lets
     * grants through: {@code uptime_in_seconds} overstates the real uptime by up to a second, and the guard knows it.
     */
    static void awaitUptime(UnifiedJedis client, Duration d) {
        while (true) {
            String info = client.info("server");
            long up = Long.parseLong(info.replaceAll("(?s).*uptime_in_seconds:(\\d+).*", "$1"));
            if ((up - 1) * 1000 >= d.toMillis()) {
                return;
            }
            RedisServer.sleep(100);
        }
    }

    @Override
    public void close() {
        if (owned) {
            process.close();
        }
    }
}
