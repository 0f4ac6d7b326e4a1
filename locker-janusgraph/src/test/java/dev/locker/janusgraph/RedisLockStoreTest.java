package dev.locker.janusgraph;

import dev.locker.redis.RedisServerProcess;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** JanusGraph's lock tests with the locks on a real redis-server started for this class. */
class RedisLockStoreTest extends AtomicLockerLockStoreTest {

    private static RedisServerProcess redis;

    @BeforeAll
    static void startRedis() {
        redis = RedisServerProcess.start();
    }

    @AfterAll
    static void stopRedis() {
        redis.close();
    }

    @Override
    String lockerUri() {
        // a fresh server, not a restart: no restart guard to wait out
        return redis.uri() + "?prefix=jg:&restartGuard=0ms";
    }
}
