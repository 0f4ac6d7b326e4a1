package dev.locker.micrometer;

import dev.locker.api.Acquisition;
import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.Lockers;
import dev.locker.api.TemporaryLockingException;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.UUID;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The meters of one locker ("ours", metered) while another locker of another "process" ("theirs", unmetered) contends
 * on the same backend. Each backend's test class says how to reach its real server.
 */
abstract class LockerMetricsScenarios {

    SimpleMeterRegistry registry;
    LockerMetrics metrics;
    Locker ours;
    Locker theirs;
    String prefix;

    /** The URI of the backend under test (both lockers open it). */
    abstract String uri();

    /** The backend tag expected for {@link #uri()}. */
    abstract String backend();

    @BeforeEach
    void open() {
        prefix = "orders-" + UUID.randomUUID() + ":";
        registry = new SimpleMeterRegistry();
        metrics = LockerMetrics.builder(registry).backend(LockerMetrics.schemeOf(uri())).lockNamePrefixes(prefix).build();
        ours = Lockers.open(uri(), LockerConfig.builder().rid("ours").expiry(Duration.ofSeconds(30))
                .lockWait(Duration.ofMillis(20)).probe(metrics).build());
        theirs = Lockers.open(uri(), LockerConfig.builder().rid("theirs").expiry(Duration.ofSeconds(30))
                .lockWait(Duration.ofMillis(20)).build());
    }

    @AfterEach
    void close() {
        if (ours != null) {
            ours.close();
        }
        if (theirs != null) {
            theirs.close();
        }
    }

    KeyColumn lock(String name) {
        return KeyColumn.of(prefix + name, "c");
    }

    double count(String name, String... tags) {
        return registry.get(name).tag("backend", backend()).tags(tags).meters().stream()
                .mapToDouble(m -> m.measure().iterator().next().getValue()).sum();
    }

    long timed(String name, String... tags) {
        return registry.get(name).tag("backend", backend()).tags(tags).timers().stream().mapToLong(t -> t.count()).sum();
    }

    @Test
    void aLeaseTakenRenewedAndReleasedIsTimedOnceInItsPrefix() {
        try (Lease lease = ours.acquire(lock("a"), "metrics test")) {
            lease.renew();
            assertEquals(1, timed("locker.acquire", "lock.prefix", prefix));
            assertEquals(0, timed("locker.held"), "still held: not timed yet");
        }
        assertEquals(1, timed("locker.held", "lock.prefix", prefix, "end", "released"));
        assertEquals(0, timed("locker.held", "end", "lost"));
        assertTrue(count("locker.renewals", "outcome", "renewed") >= 1);
        assertEquals(0, count("locker.lost"));
        assertEquals(0, count("locker.errors"));
        assertEquals(0, metrics.claimsInFlight(), "nothing left behind once released");
    }

    @Test
    void aLockOutsideEveryPrefixIsTaggedOther() {
        ours.acquire(KeyColumn.named("elsewhere-" + UUID.randomUUID()), "metrics test").close();
        assertEquals(1, timed("locker.acquire", "lock.prefix", "other"));
        assertEquals(0, timed("locker.acquire", "lock.prefix", prefix));
    }

    @Test
    void aLockHeldElsewhereIsCountedAsContentionNotAsAnError() {
        try (Lease held = theirs.acquire(lock("b"), "they hold it")) {
            assertThrows(TemporaryLockingException.class, () -> ours.acquire(lock("b"), "we try"));
            assertEquals(1, count("locker.contention", "lock.prefix", prefix));
            assertEquals(0, count("locker.errors"));
            assertEquals(0, timed("locker.acquire"));
            assertEquals(0, metrics.claimsInFlight(), "the refused claim is forgotten");
        }
    }

    @Test
    void aBoundedWaitIsTimedByOutcome() {
        try (Lease held = theirs.acquire(lock("c"), "they hold it")) {
            Acquisition busy = ours.acquireWithin(lock("c"), "we wait", Duration.ofMillis(50));
            assertEquals(Acquisition.Outcome.BUSY, busy.outcome());
        }
        Acquisition got = ours.acquireWithin(lock("c"), "we wait again", Duration.ofSeconds(10));
        got.lease().orElseThrow().close();
        assertEquals(1, timed("locker.wait", "outcome", "busy", "lock.prefix", prefix));
        assertEquals(1, timed("locker.wait", "outcome", "acquired", "lock.prefix", prefix));
    }

    @Test
    void aForceReleasedLeaseIsLostAndItsHoldIsTimedAsLost() {
        Lease lease = ours.acquire(lock("d"), "we hold it");
        assertTrue(theirs.forceRelease(lock("d")));
        assertThrows(ExpiredLockException.class, lease::check);
        lease.close();
        assertEquals(1, count("locker.lost", "lock.prefix", prefix));
        assertEquals(1, timed("locker.held", "end", "lost"));
        assertEquals(0, timed("locker.held", "end", "released"));
        assertEquals(0, count("locker.errors"), "a loss is no backend error");
    }

    @Test
    void closingTheLockerLosesItsLeasesForThatReason() {
        ours.acquire(lock("e"), "left open");
        ours.close();
        assertEquals(1, count("locker.lost", "reason", "locker_closed"));
        assertEquals(1, timed("locker.held", "end", "lost"));
    }
}
