package dev.locker.micrometer;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.TemporaryLockingException;
import dev.locker.testkit.RedisServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The meters on a real redis-server (atomic: granted by the claim write), and backend errors when it is gone. */
class RedisLockerMetricsTest extends LockerMetricsScenarios {

    static RedisServer redis;

    @BeforeAll
    static void startRedis() {
        redis = RedisServer.start();
    }

    @AfterAll
    static void stopRedis() {
        if (redis != null) {
            redis.stop();
        }
    }

    @Override
    String uri() {
        return redis.uri() + "&timeout=500ms";
    }

    @Override
    String backend() {
        return "redis";
    }

    @Test
    void aStoppedServerIsCountedAsTemporaryBackendErrorsOfEachStep() {
        try (RedisServer own = RedisServer.start()) {
            LockerMetrics m = LockerMetrics.forUri(registry, own.uri());
            try (var locker = dev.locker.api.Lockers.open(own.uri() + "&timeout=500ms",
                    dev.locker.api.LockerConfig.builder().probe(m).build())) {
                Lease lease = locker.acquire(KeyColumn.named("x"), "before the outage");
                lease.keepAlive(false);
                own.stop();
                assertThrows(TemporaryLockingException.class, lease::renew);
                assertThrows(TemporaryLockingException.class, () -> locker.acquire(KeyColumn.named("y"), "during"));
                lease.close(); // the release fails too; it is logged, never thrown
                assertEquals(1, count("locker.renewals", "outcome", "temporary"));
                assertEquals(1, count("locker.errors", "step", "renew", "kind", "temporary"));
                assertEquals(1, count("locker.errors", "step", "write", "kind", "temporary"));
                assertTrue(count("locker.errors", "step", "release", "kind", "temporary") >= 1);
                assertEquals(0, count("locker.contention"));
            }
        }
    }
}
