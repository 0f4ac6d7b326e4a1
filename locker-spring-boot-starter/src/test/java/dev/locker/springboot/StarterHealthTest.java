package dev.locker.springboot;

import dev.locker.testkit.FaultProxy;
import dev.locker.testkit.RedisServer;
import org.junit.jupiter.api.Test;
import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.actuate.health.Status;
import org.springframework.context.ConfigurableApplicationContext;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static dev.locker.springboot.StarterApps.start;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The locker health indicator: switched like Spring Boot's own, DOWN for a stopped or hung backend, never a password. */
class StarterHealthTest {

    /** management.health.defaults.enabled=false turns every indicator off, and the locker's with them. */
    @Test
    void theHealthIndicatorHonoursManagementHealthDefaultsEnabled() {
        try (ConfigurableApplicationContext app = start("locker.uri=mem:health-defaults",
                "management.health.defaults.enabled=false")) {
            assertTrue(app.getBeansOfType(LockerHealthIndicator.class).isEmpty());
        }
    }

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
        try (RedisServer redis = RedisServer.start(); FaultProxy proxy = new FaultProxy("127.0.0.1", redis.port());
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
}
