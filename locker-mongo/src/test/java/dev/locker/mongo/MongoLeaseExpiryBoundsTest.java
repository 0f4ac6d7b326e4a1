package dev.locker.mongo;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LeaseOptions;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A lease expiry that serverClockSkew leaves no validity in is refused before any I/O, as the locker's own is. */
class MongoLeaseExpiryBoundsTest extends MongoScenarios {

    private static final Duration SKEW = Duration.ofSeconds(2);
    private static final Duration EXPIRY = Duration.ofSeconds(10);

    private MongoLocker skewed(String name, VirtualClock clock) {
        return openBounded(mongo, SKEW, config(name, EXPIRY, clock).build());
    }

    /** Given serverClockSkew = 2 s, a lease of 1 s is refused with an IllegalArgumentException, and nothing is written. */
    @Test
    void aLeaseExpiryWithinTheServerClockSkewIsRefusedBeforeAnyIo() {
        VirtualClock clock = new VirtualClock();
        mongo.clock().follow(clock);
        MongoLocker a = skewed("a", clock);
        KeyColumn lock = MongoFixture.lock("short-lease");
        assertThrows(IllegalArgumentException.class,
                () -> a.acquire(lock, "too short", LeaseOptions.expiry(Duration.ofSeconds(1)).keepAlive(false)));
        assertNull(rawDoc(lock), "nothing reached the server");
    }

    /**
     * Given serverClockSkew = 2 s and a held lease, renewFor(1 s) is refused before any I/O, and the lease stays valid
     * on the expiry it had.
     */
    @Test
    void aRenewalToAnExpiryWithinTheServerClockSkewIsRefusedAndKeepsTheLease() {
        VirtualClock clock = new VirtualClock();
        mongo.clock().follow(clock);
        MongoLocker a = skewed("a", clock);
        KeyColumn lock = MongoFixture.lock("short-renewal");
        try (Lease lease = a.acquire(lock, "job", LeaseOptions.DEFAULTS.keepAlive(false))) {
            assertThrows(IllegalArgumentException.class, () -> lease.renewFor(Duration.ofSeconds(1)));
            assertTrue(lease.isValid(), "a refused renewal leaves the lease as it was");
            lease.check();
        }
    }
}
