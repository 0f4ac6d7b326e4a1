package dev.locker.mongo;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LeaseOptions;
import dev.locker.api.LockingException;
import dev.locker.api.TemporaryLockingException;
import dev.locker.testkit.FaultProxy;
import dev.locker.testkit.VirtualClock;
import org.bson.Document;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static dev.locker.mongo.MongoFixture.lock;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/** A renewal whose request lands late never shortens a held claim, nor lengthens one left for its hold-at-least. */
class MongoLateRenewalTest extends MongoScenarios {

    private static final Duration EXPIRY = Duration.ofSeconds(10);
    private static final Duration SKEW = Duration.ofSeconds(2);

    /**
     * A locker through {@code address} with the skew bound, on a client of its own ({@link #clientThrough}). The
     * locker's next renewal after a failed one is then a request of its own.
     */
    private MongoLocker openThrough(String address, String name, VirtualClock clock) {
        return fixture.closeFirst(MongoLocker.builder().client(clientThrough(address)).database("locker")
                .collection(fixture.collection()).serverClockSkew(SKEW).clockCheckInterval(Duration.ZERO)
                .config(config(name, EXPIRY, clock).build()).build());
    }

    private MongoLocker openDirect(String name, VirtualClock clock) {
        return fixture.closeFirst(MongoLocker.builder().connectionString(mongo.uri()).database("locker")
                .collection(fixture.collection()).serverClockSkew(SKEW).clockCheckInterval(Duration.ZERO)
                .config(config(name, EXPIRY, clock).build()).build());
    }

    /**
     * A's renewal at 1 s is held in a stalled path and fails; its renewal at 6 s succeeds, so A counts on its lease until
     * about 13.9 s. The held request then lands and writes back the expiry of 11 s. At 12 s, while A still counts on
     * its lease, B must be refused.
     */
    @Test
    void aRenewalLandingAfterALaterRenewalDoesNotShortenTheHoldersClaim() throws Exception {
        VirtualClock clock = new VirtualClock();
        mongo.clock().follow(clock);
        try (FaultProxy proxy = new FaultProxy("127.0.0.1", mongo.port())) {
            MongoLocker a = openThrough("127.0.0.1:" + proxy.port(), "a", clock);
            MongoLocker b = openDirect("b", clock);
            a.acquire(lock("warm-up"), "opens the pooled connection").close();
            KeyColumn lock = lock("renewed-twice");
            Lease mine = a.acquire(lock, "holder").keepAlive(false);

            clock.advance(Duration.ofSeconds(1));
            proxy.holdRequestsOnOpenConnections();
            assertThrows(LockingException.class, mine::renew, "the held renewal times out on the client");
            proxy.awaitHeldRequest(PATIENCE);
            assertTrue(mine.isValid(), "a failed renewal leaves the lease as it was");

            clock.advance(Duration.ofSeconds(5));
            mine.renew();
            Duration counted = mine.remaining();

            proxy.releaseRequests();
            proxy.awaitReplyToHeldRequest(PATIENCE);
            Document landed = rawDoc(lock);

            clock.advance(Duration.ofSeconds(6));
            assertTrue(mine.isValid(), "A still counts on its lease (" + counted + " from its last renewal)");
            try {
                Lease taken = b.acquire(lock, "while A counts on its lease");
                fail("two holders: A (token " + mine.fencingToken() + ") counts on its lease for " + mine.remaining()
                        + " more, and B was granted token " + taken.fencingToken() + "; the late renewal had left "
                        + landed.toJson());
            } catch (TemporaryLockingException refused) {
                assertEquals(a.rid(), refused.holder().rid(), refused::getMessage);
            }
        }
    }

    /**
     * A's renewal at 1 s is held in a stalled path and fails. A then releases inside its hold-at-least (4 s), which
     * leaves the claim until about 4 s. The held renewal lands afterwards, asking for 11 s. At 7 s, past the
     * hold-at-least and the skew allowance, B must be granted the lock.
     */
    @Test
    void aRenewalLandingAfterAHoldAtLeastReleaseDoesNotKeepTheClaimLonger() throws Exception {
        VirtualClock clock = new VirtualClock();
        mongo.clock().follow(clock);
        try (FaultProxy proxy = new FaultProxy("127.0.0.1", mongo.port())) {
            MongoLocker a = openThrough("127.0.0.1:" + proxy.port(), "a", clock);
            MongoLocker b = openDirect("b", clock);
            a.acquire(lock("warm-up"), "opens the pooled connection").close();
            KeyColumn lock = lock("left-then-renewed");
            Lease mine = a.acquire(lock, "holder", LeaseOptions.expiry(EXPIRY).holdAtLeast(Duration.ofSeconds(4))
                    .keepAlive(false));

            clock.advance(Duration.ofSeconds(1));
            proxy.holdRequestsOnOpenConnections();
            assertThrows(LockingException.class, mine::renew, "the held renewal times out on the client");
            proxy.awaitHeldRequest(PATIENCE);
            assertTrue(mine.release(), "our claim is left for its hold-at-least");

            proxy.releaseRequests();
            proxy.awaitReplyToHeldRequest(PATIENCE);
            Document landed = rawDoc(lock);

            clock.advance(Duration.ofSeconds(6));
            try (Lease taken = b.tryAcquire(lock, "after the hold-at-least", Duration.ZERO).orElseThrow(
                    () -> new AssertionError("the late renewal kept the left claim alive: " + landed.toJson()))) {
                assertTrue(taken.fencingToken() > 0);
            }
        }
    }
}
