package dev.locker.mongo;

import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import com.mongodb.client.model.Filters;
import dev.locker.api.KeyColumn;
import dev.locker.api.LockerConfig;
import dev.locker.engine.ClaimStatus;
import dev.locker.spi.Deadlines;
import dev.locker.testkit.VirtualClock;
import org.bson.Document;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.util.Date;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The lock collection's driver gives a claim the expiry the engine passes, not the locker's configured one. */
class MongoDriverExpiryTest {

    private static final Duration CONFIGURED = Duration.ofSeconds(60);

    private final VirtualClock clock = new VirtualClock();
    private final InProcessMongo mongo = started(clock);
    private final LockerConfig config = LockerConfig.builder().rid("a").expiry(CONFIGURED).timeSource(clock).build();
    private final MongoDriver driver = new MongoDriver(config, new MongoOptions("locker", "driver_expiry",
            Duration.ofSeconds(10), Duration.ZERO, Duration.ofHours(1), Duration.ZERO),
            MongoConnections.open(mongo.uri(), null, null));
    private final MongoClient reader = MongoClients.create(mongo.uri());
    private final KeyColumn lock = KeyColumn.of("k", "c");

    private static InProcessMongo started(VirtualClock clock) {
        InProcessMongo m = InProcessMongo.start();
        m.clock().follow(clock); // the server's clock is the virtual one: its expiries are exact
        return m;
    }

    @AfterEach
    void close() {
        driver.close();
        reader.close();
        mongo.close();
    }

    @Test
    void aClaimWrittenForTenSecondsExpiresTenSecondsAfterItsWrite() {
        Instant writtenAt = clock.now();
        long startNanos = clock.nanoTime();

        ClaimStatus held = driver.write(lock, config.owner("ten"), Duration.ofSeconds(10), null);

        assertEquals(writtenAt.plusSeconds(10), driver.readHolder(lock).orElseThrow().expiresAt());
        assertEquals(Date.from(writtenAt.plusSeconds(10)), ttlField(), "the TTL field follows the claim's expiry");
        assertDeadlineCountsOn(Duration.ofSeconds(10), startNanos, held);
    }

    @Test
    void aRenewalForTwentySecondsMovesTheExpiryToTwentySecondsAfterTheRenewal() {
        ClaimStatus held = driver.write(lock, config.owner("ten"), Duration.ofSeconds(10), null);
        clock.advance(Duration.ofSeconds(2));
        Instant renewedAt = clock.now();
        long startNanos = clock.nanoTime();

        ClaimStatus renewed = driver.renew(lock, held, Duration.ofSeconds(20));

        assertEquals(renewedAt.plusSeconds(20), driver.readHolder(lock).orElseThrow().expiresAt());
        assertEquals(Date.from(renewedAt.plusSeconds(20)), ttlField(), "the TTL field follows the claim's expiry");
        assertDeadlineCountsOn(Duration.ofSeconds(20), startNanos, renewed);
        assertEquals(held.fencingToken(), renewed.fencingToken(), "a renewal keeps the claim's token");
    }

    /** The holder counts on {@code expiry} less the server-clock estimate's small uncertainty: never on the configured. */
    private static void assertDeadlineCountsOn(Duration expiry, long startNanos, ClaimStatus claim) {
        assertTrue(claim.deadlineNanos() <= Deadlines.of(startNanos, expiry), "not beyond " + expiry);
        assertTrue(claim.deadlineNanos() > Deadlines.of(startNanos, expiry.minusSeconds(1)),
                "counts on " + expiry + " less the estimate's uncertainty");
    }

    private Date ttlField() {
        Document doc = reader.getDatabase("locker").getCollection("driver_expiry")
                .find(Filters.eq(LockDocument.ID, LockDocument.id(lock))).first();
        return doc.getDate(LockDocument.EXPIRES_AT);
    }
}
