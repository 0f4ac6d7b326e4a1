package dev.locker.janusgraph;

import dev.locker.redis.RedisServerProcess;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** The graph-level race with the locks on a real redis-server. */
class RedisGraphRaceTest extends GraphRaceTest {

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
        return redis.uri() + "?prefix=jg-race:&restartGuard=0ms";
    }
}
