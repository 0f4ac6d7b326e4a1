package dev.locker.springboot;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.api.LockingException;
import dev.locker.testkit.FreezingProxy;
import dev.locker.testkit.RedisServer;
import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.Test;
import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.actuate.endpoint.annotation.DeleteOperation;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;
import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.actuate.health.Status;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Adversarial review of the Spring Boot starter (review-ops). Findings are {@code @Disabled("finding N: ...")} tests
 * that fail on today's code; the others pin down what was checked and found sound. Real backends: redis-server
 * (testkit RedisServer, behind a FreezingProxy where a hung backend is needed) and {@code mem:}.
 */
class StarterOpsReviewTest {

    static ConfigurableApplicationContext start(String... properties) {
        return new SpringApplicationBuilder(LockerTestApplication.class)
                .web(WebApplicationType.NONE)
                .properties(properties)
                .run();
    }

    /** Everything a failed start says: the exception chain's messages and what was logged on stderr meanwhile. */
    private static String failedStart(String... properties) {
        PrintStream err = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        Throwable thrown;
        try {
            thrown = assertThrows(Throwable.class, () -> start(properties).close());
        } finally {
            System.setErr(err);
        }
        StringBuilder all = new StringBuilder(captured.toString(StandardCharsets.UTF_8));
        for (Throwable t = thrown; t != null; t = t.getCause()) {
            all.append('\n').append(t);
        }
        return all.toString();
    }

    @SuppressWarnings("unchecked")
    private static List<Map<String, Object>> locks(Map<String, Object> page) {
        return (List<Map<String, Object>>) page.get("locks");
    }

    // =================================================================================================================
    // Findings (each fails on today's code)
    // =================================================================================================================

    /**
     * Finding 11. {@code locker.expiry=300} is bound by Spring's Duration converter, whose default unit is
     * milliseconds: the locker runs with a 300 ms expiry (on Redis, which has no lock-wait, even 30 is taken).
     * README's Configuration says a bare number is refused ("expiry=30 does not mean 30 ms"): true of the URI
     * options, not of the Spring properties (LockerProperties.java:21-27, plain Duration fields). An operator who
     * meant 300 s gets claims that end after 300 ms: holders lose their locks at the first pause, and the keep-alive
     * turns into a hot loop. The same for lock-wait and local-wait.
     */
    @Test
    void aBareNumberForADurationPropertyIsRefused() {
        // 300, not 30: mem:'s wait-and-read-back refuses an expiry under 2 x lockWait for its own reason
        String out = failedStart("locker.uri=mem:review-bare", "locker.expiry=300");
        assertTrue(out.contains("expiry"), out);
    }

    /**
     * Finding 12. A {@code locker.uri} with a mistyped scheme separator fails the start with the password in the
     * exception message and in Spring's "Application run failed" log: Lockers.redacted (Lockers.java:75-87) masks only
     * after a colon that comes after the scheme's colon, and in {@code redis//app:pw@h} the first colon is the
     * password's. The same URI typo in the CLI is finding 1.
     */
    @Test
    void aMistypedUriDoesNotPutThePasswordInTheStartupFailure() {
        String out = failedStart("locker.uri=redis//app:S3cretPw99@127.0.0.1:6379");
        assertFalse(out.contains("S3cretPw99"), out);
        String slash = failedStart("locker.uri=redis:/app:S3cretPw98@127.0.0.1:6379");
        assertFalse(slash.contains("S3cretPw98"), slash);
    }

    /**
     * Finding 13. The health indicator is switched by a plain {@code @ConditionalOnProperty(management.health.locker
     * .enabled)} (LockerActuatorAutoConfiguration.java:37), not by Spring Boot's {@code @ConditionalOnEnabledHealth
     * Indicator("locker")}: {@code management.health.defaults.enabled=false}, which turns every other indicator off,
     * leaves this one on (it keeps probing the backend, and a DOWN backend still fails the application's health).
     */
    @Test
    void theHealthIndicatorHonoursManagementHealthDefaultsEnabled() {
        try (ConfigurableApplicationContext app = start("locker.uri=mem:review-health-defaults",
                "management.health.defaults.enabled=false")) {
            assertTrue(app.getBeansOfType(LockerHealthIndicator.class).isEmpty());
        }
    }

    /**
     * Finding 14. The {@code locks} endpoint prints names with KeyColumn.printable (LockerEndpoint.java:51-52), which
     * cuts a key at 64 bytes ("...(70 bytes)") and writes '/' as {@code \x2f}: two different locks sharing their first
     * 64 bytes are listed with the same key, and no name it prints can be pasted into {@code locker show/release}
     * (the CLI's notation is {@code %XX}, and a {@code \x2f} there is three literal characters). An operator who
     * forces the release of what the endpoint listed names another lock, or none (and writes a misleading record).
     */
    @Test
    void theEndpointNamesEachLockExactlyAndInTheClisNotation() {
        try (ConfigurableApplicationContext app = start("locker.uri=mem:review-names?lockWait=1ms")) {
            Locker locker = app.getBean(Locker.class);
            String common = "jobs/" + "x".repeat(70);
            try (Lease a = locker.acquire(KeyColumn.named(common + "-1"), "a");
                 Lease b = locker.acquire(KeyColumn.named(common + "-2"), "b")) {
                List<Map<String, Object>> locks = locks(app.getBean(LockerEndpoint.class).locks("jobs/", null, null));
                assertEquals(2, locks.size(), locks::toString);
                Set<Object> keys = new HashSet<>();
                locks.forEach(l -> keys.add(l.get("key")));
                assertEquals(2, keys.size(), "two locks, two names: " + keys);
                assertTrue(keys.contains(common + "-1"), "as the CLI names it: " + keys);
            }
        }
    }

    // =================================================================================================================
    // Checked and found sound
    // =================================================================================================================

    @Test
    void healthOfAStoppedPasswordProtectedRedisIsDownWithoutThePasswordInDetailsOrLog() {
        RedisServer redis = RedisServer.start();
        try {
            try (Jedis admin = new Jedis(new HostAndPort("127.0.0.1", redis.port()))) {
                admin.aclSetUser("app", "on", ">S3cretPw99", "~*", "&*", "+@all");
            }
            try (ConfigurableApplicationContext app = start("locker.uri=redis://app:S3cretPw99@127.0.0.1:" + redis.port()
                    + "?restartGuard=0&timeout=500ms")) {
                LockerHealthIndicator health = app.getBean(LockerHealthIndicator.class);
                assertEquals(Status.UP, health.health().getStatus());
                redis.stop();
                PrintStream err = System.err;
                ByteArrayOutputStream captured = new ByteArrayOutputStream();
                System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
                Health down;
                try {
                    down = health.health();
                } finally {
                    System.setErr(err);
                }
                assertEquals(Status.DOWN, down.getStatus());
                assertEquals("redis", down.getDetails().get("backend"));
                assertFalse(down.getDetails().toString().contains("S3cretPw99"), down.getDetails().toString());
                assertFalse(captured.toString(StandardCharsets.UTF_8).contains("S3cretPw99"), captured::toString);
            }
        } finally {
            redis.stop();
        }
    }

    @Test
    void healthOfAHungBackendReturnsDownInsteadOfHanging() throws Exception {
        try (RedisServer redis = RedisServer.start(); FreezingProxy proxy = new FreezingProxy("127.0.0.1", redis.port());
             ConfigurableApplicationContext app = start("locker.uri=redis://127.0.0.1:" + proxy.port()
                     + "?restartGuard=0")) {
            LockerHealthIndicator health = app.getBean(LockerHealthIndicator.class);
            assertEquals(Status.UP, health.health().getStatus());
            proxy.freeze();
            try {
                // default timeouts (2 s socket, a few retries): a generous bound, a hang would never return
                Health down = CompletableFuture.supplyAsync(health::health).get(120, TimeUnit.SECONDS);
                assertEquals(Status.DOWN, down.getStatus());
            } finally {
                proxy.thaw();
            }
        }
    }

    @Test
    void theEndpointIsReadOnlyPagesAndRefusesBadArgumentsBeforeAnyIo() {
        for (Method m : LockerEndpoint.class.getMethods()) {
            assertFalse(m.isAnnotationPresent(WriteOperation.class) || m.isAnnotationPresent(DeleteOperation.class),
                    m + " writes");
        }
        try (ConfigurableApplicationContext app = start("locker.uri=mem:review-pages?lockWait=1ms")) {
            Locker locker = app.getBean(Locker.class);
            LockerEndpoint endpoint = app.getBean(LockerEndpoint.class);
            Lease[] leases = new Lease[5];
            try {
                for (int i = 0; i < leases.length; i++) {
                    leases[i] = locker.acquire(KeyColumn.named("pages/" + i), "page");
                }
                Set<Object> seen = new HashSet<>();
                String cursor = null;
                int calls = 0;
                do {
                    Map<String, Object> page = endpoint.locks("pages/", "2", cursor);
                    assertTrue(locks(page).size() <= 2);
                    locks(page).forEach(l -> assertTrue(seen.add(l.get("key")), "listed twice: " + l));
                    cursor = (String) page.get("nextCursor");
                    calls++;
                } while (cursor != null && calls < 100);
                assertEquals(5, seen.size(), seen::toString);
                assertThrows(InvalidEndpointRequestException.class, () -> endpoint.locks("pages/", "0", null));
                assertThrows(InvalidEndpointRequestException.class, () -> endpoint.locks("pages/", "1001", null));
                assertThrows(InvalidEndpointRequestException.class, () -> endpoint.locks("pages/", "2", "not-a-cursor"));
            } finally {
                for (Lease l : leases) {
                    if (l != null) {
                        l.close();
                    }
                }
            }
        }
    }

    @Test
    void aMissingBackendModuleFailsTheStartNamingTheModuleAndNotThePassword() {
        String out = failedStart("locker.uri=mongodb://app:S3cretPw99@db1:27017/?replicaSet=rs0");
        assertTrue(out.contains("mongodb") && out.contains("add the backend's module"), out);
        assertFalse(out.contains("S3cretPw99"), out);
        String blank = failedStart("locker.uri=");
        assertTrue(blank.contains("must not be empty"), blank);
    }

    @Test
    void twoContextsOnOneMemStoreExcludeEachOtherAndEachClosesOnlyItsOwnLeases() {
        KeyColumn lock = KeyColumn.named("two-contexts");
        try (ConfigurableApplicationContext one = start("locker.uri=mem:review-two?lockWait=1ms", "locker.rid=app");
             ConfigurableApplicationContext two = start("locker.uri=mem:review-two?lockWait=1ms", "locker.rid=app")) {
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

    @Test
    void durationPropertiesWithAUnitAndInvalidValuesAreHandled() {
        try (ConfigurableApplicationContext app = start("locker.uri=mem:review-units", "locker.expiry=30s",
                "locker.local-wait=250ms")) {
            assertEquals(Duration.ofSeconds(30), app.getBean(Locker.class).config().expiry());
        }
        String negative = failedStart("locker.uri=mem:review-units", "locker.expiry=-5s");
        assertTrue(negative.contains("expiry"), negative);
    }
}
