package dev.locker.mongo;

import com.mongodb.ConnectionString;
import com.mongodb.MongoClientSettings;
import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockingException;
import dev.locker.api.TemporaryLockingException;
import dev.locker.testkit.FreezingProxy;
import dev.locker.testkit.VirtualClock;
import org.bson.Document;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static dev.locker.mongo.MongoFixture.lock;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/** A renewal whose request lands after a later renewal never shortens the claim its holder counts on. */
class MongoLateRenewalTest extends MongoScenarios {

    private static final Duration EXPIRY = Duration.ofSeconds(10);
    private static final Duration SKEW = Duration.ofSeconds(2);

    /**
     * A locker through {@code address} with the skew bound, on a client of its own. Retryable writes are off, as when
     * the driver's own retry failed too; the locker's next renewal is then a request of its own.
     */
    private MongoLocker openThrough(String address, String name, VirtualClock clock) {
        MongoClient client = fixture.closeLast(MongoClients.create(MongoClientSettings.builder()
                .applyConnectionString(new ConnectionString("mongodb://" + address + "/?serverSelectionTimeoutMS=3000"
                        + "&connectTimeoutMS=3000&socketTimeoutMS=500&retryWrites=false"))
                .build()));
        return fixture.closeFirst(MongoLocker.builder().client(client).database("locker")
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
        try (FreezingProxy proxy = new FreezingProxy("127.0.0.1", mongo.port())) {
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
}
