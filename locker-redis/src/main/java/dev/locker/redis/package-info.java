/**
 * The Redis backend ({@code redis://}, {@code rediss://}): claims decided atomically on the server by Lua scripts, on
 * a single server or a Redis Cluster, through Jedis.
 *
 * <p>Start with {@link dev.locker.redis.RedisLocker}: its class comment is the safety argument (what decides the
 * holder, which clock decides expiry, what each guarantee assumes), and {@link dev.locker.redis.RedisLocker#builder()}
 * lists every option. The Lua scripts are resources next to it.
 */
package dev.locker.redis;
