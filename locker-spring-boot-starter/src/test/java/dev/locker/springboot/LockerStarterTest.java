package dev.locker.springboot;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.api.LockingException;
import dev.locker.micrometer.LockerMetrics;
import dev.locker.testkit.RedisServer;
import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.Test;
import org.springframework.boot.actuate.health.Status;
import org.springframework.context.ConfigurableApplicationContext;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The test application on a real backend: it starts, takes a lease, reports health, and shuts down cleanly. */
class LockerStarterTest {

    static ConfigurableApplicationContext start(String... properties) {
        return StarterApps.start(properties);
    }

    @Test
    void startsTakesALeaseListsItMetersItAndClosesTheLockerWithTheContext() {
        try (RedisServer redis = RedisServer.start()) {
            Locker locker;
            try (ConfigurableApplicationContext app = start("locker.uri=" + redis.uri(), "locker.expiry=20s",
                    "locker.rid=starter-test", "locker.metrics.lock-name-prefixes=jobs:")) {
                locker = app.getBean(Locker.class);
                assertEquals(Duration.ofSeconds(20), locker.config().expiry());
                assertTrue(locker.rid().startsWith("starter-test-"), locker.rid());
                assertTrue(app.getBean(LockerMetrics.class) == locker.config().probe(), "the meters are the locker's probe");

                try (Lease lease = locker.acquire(KeyColumn.of("jobs:nightly", "run"), "nightly job")) {
                    Map<String, Object> page = app.getBean(LockerEndpoint.class).locks("jobs:", null, null);
                    @SuppressWarnings("unchecked")
                    List<Map<String, Object>> locks = (List<Map<String, Object>>) page.get("locks");
                    assertEquals(1, locks.size(), page.toString());
                    assertEquals("jobs:nightly", locks.get(0).get("key"));
                    assertEquals(lease.fencingToken(), locks.get(0).get("fencingToken"));
                    @SuppressWarnings("unchecked")
                    Map<String, Object> holder = (Map<String, Object>) locks.get(0).get("holder");
                    assertEquals(locker.rid(), holder.get("rid"));
                    assertEquals("nightly job", holder.get("why"));
                }
                MeterRegistry registry = app.getBean(MeterRegistry.class);
                assertEquals(1, registry.get("locker.acquire").tag("backend", "redis").tag("lock.prefix", "jobs:")
                        .timer().count());
                assertEquals(1, registry.get("locker.held").tag("end", "released").tag("lock.prefix", "jobs:")
                        .timer().count());
                assertEquals(Status.UP, app.getBean(LockerHealthIndicator.class).health().getStatus());
                locker.acquire(KeyColumn.named("left-open"), "released by the shutdown");
            }
            assertThrows(IllegalStateException.class, () -> locker.holder(KeyColumn.named("x")),
                    "the context closed the locker");
            try (ConfigurableApplicationContext again = start("locker.uri=" + redis.uri())) {
                assertTrue(again.getBean(Locker.class).holder(KeyColumn.named("left-open")).isEmpty(),
                        "closing the context released the lease it left open");
            }
        }
    }

    @Test
    void healthIsUpWithALiveBackendAndDownWithItStopped() {
        RedisServer redis = RedisServer.start();
        try (ConfigurableApplicationContext app = start("locker.uri=" + redis.uri() + "&timeout=500ms")) {
            LockerHealthIndicator health = app.getBean(LockerHealthIndicator.class);
            assertEquals(Status.UP, health.health().getStatus());
            assertEquals("redis", health.health().getDetails().get("backend"));

            redis.stop();
            var down = health.health();
            assertEquals(Status.DOWN, down.getStatus());
            assertFalse(down.getDetails().toString().contains("password"), down.getDetails().toString());
        } finally {
            redis.stop();
        }
    }

    @Test
    void withoutAUriThereIsNoLocker() {
        try (ConfigurableApplicationContext app = start()) {
            assertTrue(app.getBeansOfType(Locker.class).isEmpty());
            assertTrue(app.getBeansOfType(LockerHealthIndicator.class).isEmpty());
        }
    }

    @Test
    void metricsCanBeTurnedOffAndMemWorksToo() {
        try (ConfigurableApplicationContext app = start("locker.uri=mem:starter", "locker.metrics.enabled=false")) {
            assertTrue(app.getBeansOfType(LockerMetrics.class).isEmpty());
            Locker locker = app.getBean(Locker.class);
            try (Lease lease = locker.acquire(KeyColumn.named("mem-job"), "test")) {
                assertTrue(lease.isValid());
            }
            assertEquals(Status.UP, app.getBean(LockerHealthIndicator.class).health().getStatus());
        }
    }

    @Test
    void twoContextsOnOneMemStoreExcludeEachOtherAndEachClosesOnlyItsOwnLeases() {
        KeyColumn lock = KeyColumn.named("two-contexts");
        try (ConfigurableApplicationContext one = start("locker.uri=mem:two?lockWait=1ms", "locker.rid=app");
             ConfigurableApplicationContext two = start("locker.uri=mem:two?lockWait=1ms", "locker.rid=app")) {
            Locker a = one.getBean(Locker.class);
            Locker b = two.getBean(Locker.class);
            assertNotEquals(a.rid(), b.rid(), "one locker.rid, two owners");
            Lease held = a.acquire(lock, "context one");
            assertThrows(LockingException.class, () -> b.acquire(lock, "context two"));
            Lease other = b.acquire(KeyColumn.named("two-contexts-b"), "context two");
            one.close();
            assertFalse(held.isValid(), "context one's close released its lease");
            assertTrue(b.holder(lock).isEmpty(), "and the lock is free for context two");
            assertTrue(other.isValid(), "context two's lease is untouched");
            other.close();
        }
    }
}
