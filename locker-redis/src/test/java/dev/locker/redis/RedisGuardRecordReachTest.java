package dev.locker.redis;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.PermanentLockingException;
import dev.locker.spi.DeploymentCheck;
import dev.locker.testkit.RedisServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.providers.PooledConnectionProvider;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Every locker of a single server keeps its prefix's guard record, and the doctor reads it as the scripts do. */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class RedisGuardRecordReachTest {

    private final List<Locker> opened = new ArrayList<>();

    @BeforeEach
    void needsOwnServers() {
        Assumptions.assumeFalse(RedisTarget.isExternal(), "needs fresh servers of its own");
    }

    @AfterEach
    void closeLockers() {
        opened.forEach(Locker::close);
        opened.clear();
    }

    private RedisLocker open(RedisLockerBuilder b, String name, Duration guard) {
        RedisLocker l = b.restartGuard(guard).config(LockerConfig.builder()
                .rid(name + "-" + LockerConfig.randomRid().substring(0, 8)).expiry(guard).build()).build();
        opened.add(l);
        return l;
    }

    /**
     * Given A holding a lock under a 4 s guard on a single server, through a client its caller built, B on the same
     * server and prefix with a 1 s guard must be refused, naming both guards, as it is through a locker's own client.
     * A single server is one server whatever client reaches it.
     */
    @Test
    void aSingleServerReachedThroughTheCallersOwnClientRefusesAnotherGuard() {
        try (RedisServer server = RedisServer.start();
             UnifiedJedis own = new UnifiedJedis(new PooledConnectionProvider(new HostAndPort("127.0.0.1",
                     server.port())), 3, Duration.ofSeconds(2))) {
            RedisTarget.awaitUptime(own, Duration.ofSeconds(4));
            RedisLocker a = open(RedisLocker.builder().client(own).keyPrefix("managed:"), "a", Duration.ofSeconds(4));
            RedisLocker b = open(RedisLocker.builder().client(own).keyPrefix("managed:"), "b", Duration.ofSeconds(1));
            try (Lease held = a.acquire(KeyColumn.named("nightly"), "nightly")) {
                PermanentLockingException refused = assertThrows(PermanentLockingException.class,
                        () -> b.acquire(KeyColumn.named("hourly"), "a second guard").close(),
                        "B (1 s guard) was granted beside A (4 s guard) on one server: after a restart without data "
                                + "B would take A's locks while A's leases are valid");
                assertTrue(refused.getMessage().contains("PT4S"), refused.getMessage());
            }
        }
    }

    /**
     * Given A holding a lock under a guard of 2.0005 s, which the scripts count and record as 2001 ms, the doctor
     * must not fail a URI giving that same guard: it differs from the record only in how it is rounded.
     */
    @Test
    void theDoctorPassesAGuardEqualToTheRecordedOneInTheMillisecondsTheScriptsCount() {
        try (RedisServer server = RedisServer.start()) {
            Duration guard = Duration.ofMillis(2_000).plusNanos(500_000);
            try (UnifiedJedis admin = RedisLocker.builder().node("127.0.0.1", server.port()).newClient(1)) {
                RedisTarget.awaitUptime(admin, Duration.ofMillis(2_001));
            }
            RedisLocker a = open(RedisLocker.builder().node("127.0.0.1", server.port()).keyPrefix("fine:"), "a",
                    guard);
            try (Lease held = a.acquire(KeyColumn.named("nightly"), "nightly")) {
                assertTrue(server.cli("GET", "fine:{}restartGuard").trim().equals("2001"),
                        "precondition: the record holds the guard in whole ms, rounded up");
                List<DeploymentCheck.Finding> doctor = new RedisDoctor().check(server.address()
                        + "?prefix=fine:&expiry=PT2.0005S&restartGuard=PT2.0005S", p -> { });
                DeploymentCheck.Finding found = doctor.stream().filter(f -> f.check().equals("restart-guard"))
                        .findFirst().orElseThrow();
                assertNotEquals(DeploymentCheck.Level.FAIL, found.level(), found::toString);
            }
        }
    }
}
