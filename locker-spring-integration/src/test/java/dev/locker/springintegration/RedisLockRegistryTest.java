package dev.locker.springintegration;

import dev.locker.testkit.RedisServer;

/** The registry's Lock semantics on a real, freshly started {@code redis-server}. */
class RedisLockRegistryTest extends LockRegistrySuite {

    private RedisServer redis;

    @Override
    String startBackend() {
        redis = RedisServer.start();
        return redis.uri();
    }

    @Override
    void stopBackend() {
        if (redis != null) {
            redis.close();
        }
    }
}
