package dev.locker.mongo;

import com.mongodb.ConnectionString;
import com.mongodb.MongoClientSettings;
import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import com.mongodb.event.CommandListener;
import com.mongodb.event.CommandStartedEvent;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LeaseOptions;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertNotNull;
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

    /**
     * A clock sample taken on a slow round trip (800 ms: 401 ms uncertain) does not refuse a 300 ms lease for good:
     * the locker measures again, and the sharper sample lets the lease through.
     */
    @Test
    void aBlurredClockSampleIsMeasuredAgainBeforeALeaseIsRefused() {
        VirtualClock clock = new VirtualClock();
        mongo.clock().follow(clock);
        AtomicReference<Duration> rtt = new AtomicReference<>(Duration.ofMillis(800));
        CommandListener slowClockRead = new CommandListener() {
            @Override
            public void commandStarted(CommandStartedEvent e) {
                if (e.getCommandName().equalsIgnoreCase("isMaster") || e.getCommandName().equals("hello")) {
                    clock.advance(rtt.get()); // the round trip's time, all before the server reads its clock
                }
            }
        };
        try (MongoClient client = MongoClients.create(MongoClientSettings.builder()
                .applyConnectionString(new ConnectionString(mongo.uri())).addCommandListener(slowClockRead).build())) {
            MongoLocker a = fixture.closeFirst(MongoLocker.builder().client(client).database("locker")
                    .collection(fixture.collection()).clockCheckInterval(Duration.ZERO)
                    .config(config("a", EXPIRY, clock).build()).build());
            rtt.set(Duration.ZERO);
            KeyColumn lock = MongoFixture.lock("blurred-sample");
            try (Lease lease = a.acquire(lock, "short", LeaseOptions.expiry(Duration.ofMillis(300)).keepAlive(false))) {
                assertTrue(lease.isValid(), "a sharper sample leaves the 300 ms lease validity to count on");
                assertNotNull(rawDoc(lock), "the claim is on the server");
            }
        }
    }
}
