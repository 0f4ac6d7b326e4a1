package dev.locker.hbase;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LeaseOptions;
import dev.locker.api.Locker;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.time.Duration;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** A lease renewed to a shorter expiry ends on the backend at that expiry, not at the one it was granted with. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class HBaseShorterRenewalTest {

    private HBaseClockFixture fixture;

    @BeforeAll
    void connect() {
        fixture = new HBaseClockFixture("hbase-shorter-renewal/");
    }

    @AfterAll
    void close() throws Exception {
        fixture.close();
    }

    /**
     * A's lease is granted for 60 s, then renewed to 2 s (a ShedLock extension to a shorter lockAtMostFor, a Spring
     * renewLock with a shorter ttl). Once 2 s plus the clock allowance have passed, the claim is over on the backend:
     * B gets the lock, and nothing of A's first, longer cell comes back.
     */
    @Test
    void aLeaseRenewedToAShorterExpiryEndsOnTheBackendAtThatExpiry() throws Exception {
        HBaseOptions options = HBaseClockFixture.options("locker_shorter_renewal", Duration.ofSeconds(1));
        Locker a = fixture.locker(options, "a", Duration.ofSeconds(60));
        Locker b = fixture.locker(options, "b", Duration.ofSeconds(60));
        KeyColumn lock = fixture.lock("shortened");
        Lease lease = a.acquire(lock, "a task that needs less time than it asked for",
                LeaseOptions.DEFAULTS.keepAlive(false));
        lease.renewFor(Duration.ofSeconds(2)); // the holder cell's TTL: 2 s plus the 1 s allowance
        Thread.sleep(4_000); // past the renewed cell's TTL on the region server's clock (a bound, not a timing)
        assertTrue(!lease.isValid(), "A's lease ended by its own clock");
        Optional<Lease> second = b.tryAcquire(lock, "after A's shorter lease ended", Duration.ZERO);
        String holder = String.valueOf(b.holding(lock));
        second.ifPresent(Lease::close);
        lease.close();
        assertTrue(second.isPresent(), "A's renewed claim ended 3 s after its renewal, yet the lock is held: "
                + holder);
    }
}
