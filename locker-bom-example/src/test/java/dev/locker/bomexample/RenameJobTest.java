package dev.locker.bomexample;

import dev.locker.testkit.RedisServer;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** The user's project runs: the backend found by URI scheme through the BOM-managed jars, a lease on a real Redis. */
class RenameJobTest {

    @Test
    void runsUnderAFencingTokenOnARealRedis() {
        try (RedisServer redis = RedisServer.start()) {
            long first = RenameJob.runOnce(redis.uri());
            long second = RenameJob.runOnce(redis.uri());
            assertTrue(second > first, "each run holds the lock with a greater token: " + first + ", " + second);
        }
    }
}
