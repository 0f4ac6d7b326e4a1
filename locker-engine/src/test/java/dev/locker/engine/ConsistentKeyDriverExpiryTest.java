package dev.locker.engine;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockerConfig;
import dev.locker.spi.Deadlines;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The wait-and-read-back driver gives a claim the expiry the engine passes, not the locker's configured one. */
class ConsistentKeyDriverExpiryTest {

    private static final Duration CONFIGURED = Duration.ofSeconds(60);

    private final VirtualClock clock = new VirtualClock();
    private final LockerConfig config = LockerConfig.builder().rid("a").expiry(CONFIGURED).scrubExpired(false)
            .timeSource(clock).build();
    private final ConsistentKeyDriver driver = new ConsistentKeyDriver(config, new InMemoryStore("ck-expiry"), true, 16);
    private final KeyColumn lock = KeyColumn.of("k", "c");

    @AfterEach
    void close() {
        driver.close();
    }

    @Test
    void aClaimWrittenForTenSecondsExpiresTenSecondsAfterItsWrite() {
        Instant writtenAt = clock.now();
        long startNanos = clock.nanoTime();
        ConsistentKeyClaim held = driver.verify(lock, driver.write(lock, config.owner("ten"), Duration.ofSeconds(10),
                null));

        assertTrue(held.isHeld(), "the read-back confirmed the only claim");
        assertEquals(writtenAt.plusSeconds(10), driver.readHolder(lock).orElseThrow().expiresAt());
        assertEquals(Deadlines.of(startNanos, Duration.ofSeconds(10).minus(config.lockWait())), held.deadlineNanos());
    }

    @Test
    void aRenewalForTwentySecondsMovesTheExpiryToTwentySecondsAfterTheRenewal() {
        ConsistentKeyClaim held = driver.verify(lock, driver.write(lock, config.owner("ten"), Duration.ofSeconds(10),
                null));
        clock.advance(Duration.ofSeconds(2));
        Instant renewedAt = clock.now();
        long startNanos = clock.nanoTime();

        ConsistentKeyClaim renewed = driver.renew(lock, held, Duration.ofSeconds(20));

        assertEquals(renewedAt.plusSeconds(20), driver.readHolder(lock).orElseThrow().expiresAt());
        assertEquals(Deadlines.of(startNanos, Duration.ofSeconds(20).minus(config.lockWait())),
                renewed.deadlineNanos());
        assertEquals(held.fencingToken(), renewed.fencingToken(), "a renewal keeps the claim's token");
    }
}
