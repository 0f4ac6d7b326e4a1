package dev.locker.redis;

import dev.locker.api.KeyColumn;
import dev.locker.api.LeaseOptions;
import dev.locker.api.LockInfo;
import dev.locker.api.LockerConfig;
import dev.locker.engine.ClaimStatus;
import dev.locker.spi.Deadlines;
import dev.locker.testkit.RedisServer;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.Jedis;

import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The Redis driver gives a claim the expiry the engine passes, not the locker's configured one. */
class RedisDriverExpiryTest {

    private static final Duration CONFIGURED = Duration.ofSeconds(60);

    private final RedisServer server = RedisServer.shared();
    private final String prefix = "driver-expiry-" + LockerConfig.randomRid().substring(0, 8) + ":";
    private final VirtualClock clock = new VirtualClock();
    private final LockerConfig config = LockerConfig.builder().rid("a").expiry(CONFIGURED).timeSource(clock).build();
    private final KeyColumn lock = KeyColumn.of("k", "c");
    private RedisDriver driver;

    @AfterEach
    void close() {
        if (driver != null) {
            driver.close();
        }
    }

    /** A driver on the shared server, with this test's prefix, whose engine never closes. */
    private RedisDriver driver(Duration restartGuard) {
        RedisLockerBuilder b = RedisLocker.builder().node("127.0.0.1", server.port()).keyPrefix(prefix)
                .restartGuard(restartGuard).config(config);
        driver = new RedisDriver(b, config, b.newClient(config.retries()), true, new RedisDriver.Engine() {
            @Override
            public void later(Runnable task, Duration delay) {
            }

            @Override
            public boolean isClosed() {
                return false;
            }
        });
        return driver;
    }

    /** The milliseconds the server keeps the lock's key: the safety net follows the claim's expiry. */
    private long keyLifeMillis() {
        try (Jedis admin = new Jedis("127.0.0.1", server.port())) {
            return admin.pttl(driver.keys().lockKey(lock));
        }
    }

    @Test
    void aClaimWrittenForTenSecondsExpiresTenSecondsAfterItsWrite() {
        RedisDriver d = driver(Duration.ZERO);
        Instant before = Instant.now().truncatedTo(ChronoUnit.MILLIS);
        long startNanos = clock.nanoTime();

        ClaimStatus held = d.write(lock, config.owner("ten"), Duration.ofSeconds(10), null);

        Instant after = Instant.now().plusMillis(1);
        LockInfo info = d.readHolder(lock).orElseThrow();
        assertFalse(info.expiresAt().isBefore(before.plusSeconds(10)), info.toString());
        assertFalse(info.expiresAt().isAfter(after.plusSeconds(10)), info.toString());
        assertEquals(Deadlines.of(startNanos, Duration.ofSeconds(10)), held.deadlineNanos());
        assertTrue(keyLifeMillis() <= 20_001, "the key lives twice the claim's expiry at most");
    }

    @Test
    void aRenewalForTwentySecondsMovesTheExpiryToTwentySecondsAfterTheRenewal() {
        RedisDriver d = driver(Duration.ZERO);
        ClaimStatus held = d.write(lock, config.owner("ten"), Duration.ofSeconds(10), null);
        clock.advance(Duration.ofSeconds(2));
        Instant before = Instant.now().truncatedTo(ChronoUnit.MILLIS);
        long startNanos = clock.nanoTime();

        ClaimStatus renewed = d.renew(lock, held, Duration.ofSeconds(20));

        Instant after = Instant.now().plusMillis(1);
        LockInfo info = d.readHolder(lock).orElseThrow();
        assertFalse(info.expiresAt().isBefore(before.plusSeconds(20)), info.toString());
        assertFalse(info.expiresAt().isAfter(after.plusSeconds(20)), info.toString());
        assertEquals(Deadlines.of(startNanos, Duration.ofSeconds(20)), renewed.deadlineNanos());
        assertEquals(held.fencingToken(), renewed.fencingToken(), "a renewal keeps the claim's token");
        assertTrue(keyLifeMillis() <= 40_001, "the key lives twice the claim's expiry at most");
    }

    @Test
    void aClaimThatWouldOutliveTheRestartGuardIsRefusedBeforeAnyRequest() {
        RedisDriver d = driver(Duration.ofSeconds(30));

        assertThrows(IllegalArgumentException.class,
                () -> d.write(lock, config.owner("long"), Duration.ofSeconds(31), null));

        assertEquals(-2, keyLifeMillis(), "nothing was written for the lock");
    }

    @Test
    void aLeaseThatWouldOutliveTheRestartGuardIsRefusedBeforeAnyRequest() {
        LockerConfig tenSeconds = LockerConfig.builder().rid("b").expiry(Duration.ofSeconds(10)).build();
        try (RedisLocker locker = RedisLocker.builder().node("127.0.0.1", server.port()).keyPrefix(prefix)
                .restartGuard(Duration.ofSeconds(30)).config(tenSeconds).build()) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> locker.acquire(lock, "too long", LeaseOptions.expiry(Duration.ofSeconds(31))));
            assertTrue(e.getMessage().contains("restartGuard"), e.getMessage());
            try (Jedis admin = new Jedis("127.0.0.1", server.port())) {
                assertEquals(-2, admin.pttl(new RedisKeys(prefix).lockKey(lock)), "nothing was written for the lock");
            }
        }
    }
}
