package dev.locker.file;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockerConfig;
import dev.locker.engine.ClaimStatus;
import dev.locker.spi.Deadlines;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The lock directory's driver gives a claim the expiry the engine passes, not the locker's configured one. */
class FileDriverExpiryTest {

    private static final Duration CONFIGURED = Duration.ofSeconds(60);

    private final FileFixture fixture = new FileFixture("driver-expiry");
    private final VirtualClock clock = new VirtualClock();
    private final LockerConfig config = LockerConfig.builder().rid("a").expiry(CONFIGURED).timeSource(clock).build();
    private final FileDriver driver = new FileDriver(config, new HostClock(clock, false),
            LockDirectory.open(fixture.dir(), false));
    private final KeyColumn lock = KeyColumn.of("k", "c");

    @AfterEach
    void close() throws Exception {
        driver.close();
        fixture.close();
    }

    @Test
    void aClaimWrittenForTenSecondsExpiresTenSecondsAfterItsWrite() {
        Instant writtenAt = clock.now();
        long startNanos = clock.nanoTime();

        ClaimStatus held = driver.write(lock, config.owner("ten"), Duration.ofSeconds(10), null);

        assertEquals(writtenAt.plusSeconds(10), driver.readHolder(lock).orElseThrow().expiresAt());
        assertEquals(Deadlines.of(startNanos, Duration.ofSeconds(10)), held.deadlineNanos());
    }

    @Test
    void aRenewalForTwentySecondsMovesTheExpiryToTwentySecondsAfterTheRenewal() {
        ClaimStatus held = driver.write(lock, config.owner("ten"), Duration.ofSeconds(10), null);
        clock.advance(Duration.ofSeconds(2));
        Instant renewedAt = clock.now();
        long startNanos = clock.nanoTime();

        ClaimStatus renewed = driver.renew(lock, held, Duration.ofSeconds(20));

        assertEquals(renewedAt.plusSeconds(20), driver.readHolder(lock).orElseThrow().expiresAt());
        assertEquals(Deadlines.of(startNanos, Duration.ofSeconds(20)), renewed.deadlineNanos());
        assertEquals(held.fencingToken(), renewed.fencingToken(), "a renewal keeps the claim's token");
    }
}
