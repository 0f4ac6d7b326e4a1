package dev.locker.redis;

import dev.locker.testkit.RedisServer;

/**
 * The name locker-cli's and locker-janusgraph's tests still use, through this module's test-jar: a thin view of the
 * one launcher, {@link RedisServer}. Its {@link #uri()} is the plain address, with no option. New tests use
 * {@link RedisServer} directly; this class goes once those modules do.
 */
public final class RedisServerProcess implements AutoCloseable {

    private final RedisServer server;

    private RedisServerProcess(RedisServer server) {
        this.server = server;
    }

    /** A throw-away server (no RDB snapshots, no AOF) with these extra {@code redis-server} options. */
    public static RedisServerProcess start(String... extraArgs) {
        return new RedisServerProcess(RedisServer.start(extraArgs));
    }

    public int port() {
        return server.port();
    }

    /** {@code redis://127.0.0.1:port}: a locker on it keeps its default restart guard. */
    public String uri() {
        return server.address();
    }

    @Override
    public void close() {
        server.close();
    }

    @Override
    public String toString() {
        return server.toString();
    }
}
