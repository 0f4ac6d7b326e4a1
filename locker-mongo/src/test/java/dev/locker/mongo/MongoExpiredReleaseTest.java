package dev.locker.mongo;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LeaseOptions;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A release tells whether our claim was still ours: one that expired on the server, untaken, was not. */
class MongoExpiredReleaseTest extends MongoScenarios {

    private static final Duration EXPIRY = Duration.ofSeconds(5);

    /**
     * A's lease ends on the server's clock and nobody takes its lock. Its release must say the claim was no longer
     * ours, as Lease.release documents: a Spring unlock then reports the expired lock instead of a safe hold.
     */
    @Test
    void aReleaseAfterOurClaimExpiredOnTheServerUntakenSaysItWasNotOurs() {
        VirtualClock clock = new VirtualClock();
        mongo.clock().follow(clock);
        MongoLocker a = open(config("a", EXPIRY, clock).build(), Duration.ZERO);
        KeyColumn lock = MongoFixture.lock("expired-untaken");
        Lease lease = a.acquire(lock, "a task that outlived its lease", LeaseOptions.DEFAULTS.keepAlive(false));
        clock.advance(EXPIRY.multipliedBy(2)); // the claim's expiry passed on the server's clock; nobody came
        assertFalse(lease.isValid(), "the lease has ended by A's own clock too");
        boolean ours = lease.release();
        assertFalse(ours, "the claim had expired on the server before the release, so it was no longer ours");
    }

    /** The same lease released within its expiry was ours. */
    @Test
    void aReleaseWithinTheExpirySaysItWasOurs() {
        VirtualClock clock = new VirtualClock();
        mongo.clock().follow(clock);
        MongoLocker a = open(config("a", EXPIRY, clock).build(), Duration.ZERO);
        KeyColumn lock = MongoFixture.lock("released-in-time");
        Lease lease = a.acquire(lock, "a task within its lease", LeaseOptions.DEFAULTS.keepAlive(false));
        clock.advance(EXPIRY.dividedBy(2));
        assertTrue(lease.release(), "the claim was ours when released");
    }
}
