package dev.locker.redis;

import redis.clients.jedis.UnifiedJedis;

import java.time.Duration;

/**
 * The Redis server a test class runs against: the one named by the environment variable {@code LOCKER_REDIS_URI}
 * when it is set (then the tests that must kill or reconfigure a server are skipped), else a fresh local
 * {@link RedisServerProcess}.
 */
final class RedisTarget implements AutoCloseable {

    static final String EXTERNAL_URI = System.getenv("LOCKER_REDIS_URI");

    private final RedisServerProcess process;
    private final String uri;

    private RedisTarget(RedisServerProcess process, String uri) {
        this.process = process;
        this.uri = uri;
    }

    static boolean isExternal() {
        return EXTERNAL_URI != null && !EXTERNAL_URI.isBlank();
    }

    static RedisTarget start() {
        if (isExternal()) {
            return new RedisTarget(null, EXTERNAL_URI.trim());
        }
        RedisServerProcess p = RedisServerProcess.start();
        return new RedisTarget(p, p.uri());
    }

    /** Null when the server is external. */
    RedisServerProcess process() {
        return process;
    }

    String uri() {
        return uri;
    }

    /** A locker builder on this server, with a key prefix of the test's own. */
    RedisLocker.Builder locker(String prefix) {
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
            RedisServerProcess.sleep(100);
        }
    }

    @Override
    public void close() {
        if (process != null) {
            process.close();
        }
    }
}
