package dev.locker.shedlock;

import dev.locker.testkit.RedisServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** ShedLock's provider suite on a real, freshly started {@code redis-server}. */
class RedisShedLockSuiteTest extends ShedLockSuiteOverLocker {

    private static RedisServer redis;
    private static LockerLockProvider provider;

    @BeforeAll
    static void open() {
        redis = RedisServer.start();
        provider = LockerLockProvider.open(redis.uri());
    }

    @AfterAll
    static void close() {
        provider.close();
        redis.close();
    }

    @Override
    LockerLockProvider provider() {
        return provider;
    }
}
