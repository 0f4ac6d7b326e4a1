package dev.locker.bench;

import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.core.SimpleLock;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisPool;
import redis.clients.jedis.params.SetParams;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/**
 * The Redis protocol ShedLock's own Redis providers document, written here as the baseline of the shedlock rows.
 * Lock: {@code SET key value NX PX lockAtMostFor}. Unlock: {@code DEL}, or, before lockAtLeastFor has passed,
 * {@code SET key value XX PX} for the time left. No fencing, no owner check at unlock, no wait.
 * ShedLock's provider artifacts for Redis are not served by the registry these builds use, so this is ours.
 */
final class ShedLockRedisProtocol implements LockProvider {

    private static final String PREFIX = "job-lock:default:";

    private final JedisPool pool;

    ShedLockRedisProtocol(JedisPool pool) {
        this.pool = pool;
    }

    @Override
    public Optional<SimpleLock> lock(LockConfiguration config) {
        String key = PREFIX + config.getName();
        String value = "ADDED:" + ClockProvider.now() + "@bench";
        long atMost = Math.max(1, Duration.between(ClockProvider.now(), config.getLockAtMostUntil()).toMillis());
        try (Jedis jedis = pool.getResource()) {
            if (!"OK".equals(jedis.set(key, value, SetParams.setParams().nx().px(atMost)))) {
                return Optional.empty();
            }
        }
        return Optional.of(() -> unlock(key, value, config.getLockAtLeastUntil()));
    }

    private void unlock(String key, String value, Instant atLeastUntil) {
        long left = Duration.between(ClockProvider.now(), atLeastUntil).toMillis();
        try (Jedis jedis = pool.getResource()) {
            if (left > 0) {
                jedis.set(key, value, SetParams.setParams().xx().px(left));
            } else {
                jedis.del(key);
            }
        }
    }
}
