package dev.locker.hbase;

import dev.locker.api.Acquisition;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LeaseOptions;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A lease's terms on HBase: an expiry the claims family cannot keep is bad input; an interrupt costs no release. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class HBaseLeaseTermsTest {

    private static final Duration EXPIRY = Duration.ofSeconds(30);
    /** Past the claims family's TTL of one hour: the region server would drop such a claim while it is held. */
    private static final Duration TOO_LONG = Duration.ofHours(2);

    private final HBaseOptions options = HBaseOptions.builder().table("locker_lease_terms").ttl(Duration.ofHours(1))
            .serverClockSkew(Duration.ZERO).build();
    private HBaseLockers lockers;

    @BeforeAll
    void connect() {
        lockers = new HBaseLockers(options, EXPIRY);
    }

    @AfterAll
    void close() throws Exception {
        lockers.close();
    }

    private static KeyColumn lock(String name) {
        return KeyColumn.of("lease-terms/" + name + "-" + LockerConfig.randomRid().substring(0, 8), "c");
    }

    @Test
    void aLeaseExpiryPastTheClaimsFamilysTtlIsRefusedBeforeAnyIo() {
        Locker a = lockers.open("a");
        KeyColumn lock = lock("too-long");
        assertThrows(IllegalArgumentException.class,
                () -> a.acquire(lock, "too long", LeaseOptions.expiry(TOO_LONG).keepAlive(false)));
        assertFalse(a.holding(lock).isPresent(), "nothing was claimed");
    }

    @Test
    void aRenewalPastTheClaimsFamilysTtlIsRefusedAndKeepsTheLease() {
        Locker a = lockers.open("a");
        KeyColumn lock = lock("renewed-too-long");
        try (Lease lease = a.acquire(lock, "job", LeaseOptions.DEFAULTS.keepAlive(false))) {
            assertThrows(IllegalArgumentException.class, () -> lease.renewFor(TOO_LONG));
            assertTrue(lease.isValid(), "a refused renewal leaves the lease as it was");
            lease.check();
        }
    }

    /** A lease closed on an interrupted thread (a cancelled task) still removes its claim. */
    @Test
    void aLeaseClosedOnAnInterruptedThreadReleasesItsClaim() {
        Locker a = lockers.open("a");
        Locker b = lockers.open("b");
        KeyColumn lock = lock("interrupted-close");
        Lease lease = a.acquire(lock, "a cancelled task", LeaseOptions.DEFAULTS.keepAlive(false));
        Thread.currentThread().interrupt();
        try {
            lease.close();
        } finally {
            assertTrue(Thread.interrupted(), "the caller's interrupt is kept for it (and cleared here)");
        }
        assertFalse(b.holding(lock).isPresent(), "the interrupted close removed the claim: " + b.holding(lock));
        // a bounded wait, not one attempt: a loaded mini cluster may time out a single call
        Acquisition next = b.acquireWithin(lock, "next", Duration.ofSeconds(30));
        assertTrue(next.lease().isPresent(), "the lock is free for others: " + next);
        next.lease().get().close();
    }
}
