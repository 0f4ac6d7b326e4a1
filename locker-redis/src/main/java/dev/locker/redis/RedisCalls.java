package dev.locker.redis;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.Response;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.args.Rawable;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.exceptions.JedisNoScriptException;

import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * How the Redis driver sends a request: again on a fresh connection when one broke, and pipelined with
 * {@code WAIT} when replicas must acknowledge it. It never decides what a reply means.
 */
final class RedisCalls {

    private static final Logger log = LoggerFactory.getLogger(RedisCalls.class);

    private final UnifiedJedis client;
    private final String server;
    private final int retries;
    /** How many replicas must acknowledge a write: the {@code WAIT} pipelined with it. */
    final int replicas;
    /** How long a {@code WAIT} waits for them. */
    final Duration replicaTimeout;

    RedisCalls(UnifiedJedis client, String server, int retries, int replicas, Duration replicaTimeout) {
        this.client = client;
        this.server = server;
        this.retries = retries;
        this.replicas = replicas;
        this.replicaTimeout = replicaTimeout;
    }

    /** The Jedis client every request goes through. */
    UnifiedJedis client() {
        return client;
    }

    /** Who the requests go to, as named in error messages (never with a password). */
    String server() {
        return server;
    }

    /** A script and WAIT, pipelined on one connection so that WAIT counts this write's replication. */
    Object[] runAndWait(RedisScript lua, int keyCount, Rawable[] keysAndArgs) {
        List<byte[]> keyList = new ArrayList<>();
        List<byte[]> args = new ArrayList<>();
        for (int i = 0; i < keysAndArgs.length; i++) {
            (i < keyCount ? keyList : args).add(keysAndArgs[i].getRaw());
        }
        byte[] key = keyList.get(0);
        for (int attempt = 0; ; attempt++) {
            Response<Object> script;
            Response<Long> acks;
            try (AbstractPipeline p = client.pipelined()) {
                script = attempt == 0
                        ? p.evalsha(lua.shaBytes(), keyList, args)
                        : p.eval(lua.source(), keyList, args);
                acks = p.waitReplicas(key, replicas, replicaTimeout.toMillis());
                p.sync();
            }
            try {
                return new Object[]{script.get(), acks.get()};
            } catch (JedisNoScriptException e) {
                if (attempt > 0) {
                    throw e;
                }
            }
        }
    }

    /** False only when the connection failed before a command could be sent (refused, or connect timed out). */
    static boolean mayHaveReachedTheServer(JedisException e) {
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof java.net.ConnectException || (t instanceof SocketTimeoutException
                    && String.valueOf(t.getMessage()).toLowerCase(java.util.Locale.ROOT).contains("connect"))) {
                return false;
            }
        }
        return true;
    }

    /**
     * Runs {@code op}, again on a fresh connection when the connection broke (a server restart leaves the pool's
     * idle connections dead), at most {@link dev.locker.api.LockerConfig#retries()} times in all. Every script is
     * idempotent for its caller: a repeated acquire (same nonce) answers the claim its earlier attempt was granted,
     * a repeated release or renew finds the same state.
     */
    <T> T withRetries(Supplier<T> op) {
        return withRetries(op, null); // nobody reads the flag, so no array is made per release or renewal
    }

    /**
     * As above; {@code mayHaveBeenSent[0]} becomes true when any failed attempt may have reached the server. A caller
     * that does not ask passes null.
     */
    <T> T withRetries(Supplier<T> op, boolean[] mayHaveBeenSent) {
        int attempts = Math.max(1, retries);
        for (int i = 1; ; i++) {
            try {
                return op.get();
            } catch (JedisConnectionException e) {
                if (mayHaveBeenSent != null && mayHaveReachedTheServer(e)) {
                    mayHaveBeenSent[0] = true;
                }
                if (i >= attempts || RedisFailures.isTimeout(e) || !(client instanceof RedisClient)) {
                    throw e;
                }
                ((RedisClient) client).getPool().clear();
                log.debug("Connection to {} broke ({}); retrying on a fresh connection", server, e.toString());
            }
        }
    }
}
