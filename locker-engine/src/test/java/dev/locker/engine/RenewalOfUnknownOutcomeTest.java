package dev.locker.engine;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LeaseOptions;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockingException;
import dev.locker.api.TemporaryLockingException;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.testkit.Interleavings;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A renewal whose write landed but whose answer failed leaves no holder believing more than its claim says. */
class RenewalOfUnknownOutcomeTest {

    private static final Duration LOCK_WAIT = Duration.ofMillis(100);
    private static final Duration EXPIRY = Duration.ofSeconds(30);

    private final VirtualClock clock = new VirtualClock();
    private final InMemoryStore shared = new InMemoryStore("renewal-unknown-outcome");
    private final List<Locker> lockers = new ArrayList<>();
    private final KeyColumn lock = KeyColumn.of("vertex:42", "name");

    @AfterEach
    void tearDown() {
        lockers.forEach(Locker::close);
    }

    private Locker locker(String rid, KeyColumnValueStore store) {
        LockerConfig config = LockerConfig.builder().rid(rid).expiry(EXPIRY).lockWait(LOCK_WAIT).timeSource(clock)
                .build();
        Locker l = ConsistentKeyLocker.builder(store).config(config).build();
        lockers.add(l);
        return l;
    }

    /**
     * A holds a 30 s lease and renews it for 5 s: the rewrite lands, then the read that confirms it fails. 6 s later
     * C tries the lock: either C is refused, or A no longer takes itself for the holder.
     */
    @Test
    void aShorterRenewalWhoseConfirmingReadFailedEndsTheHoldersBeliefWithTheShorterTerm() {
        assertOneHolderAfterAFailedRenewal(Duration.ofSeconds(5));
    }

    /** The same renewal for the lease's own term: C is refused. */
    @Test
    void aRenewalForTheSameTermWhoseConfirmingReadFailedKeepsOthersOut() {
        assertOneHolderAfterAFailedRenewal(EXPIRY);
    }

    private void assertOneHolderAfterAFailedRenewal(Duration renewedFor) {
        LandsThenFails store = new LandsThenFails(shared);
        Locker a = locker("a", store);
        Locker c = locker("c", shared);
        Lease lease = a.acquire(lock, "a", LeaseOptions.DEFAULTS.keepAlive(false));
        clock.advance(Duration.ofSeconds(1));
        store.failTheReadAfterTheNextWrite();
        assertThrows(LockingException.class, () -> lease.renewFor(renewedFor), "the renewal's answer did not fail");
        clock.advance(renewedFor.plusSeconds(1));
        Object tc = new Object();
        boolean cHolds;
        try {
            Interleavings.take(c, lock, tc);
            cHolds = Interleavings.believesItHolds(c, lock, tc, clock);
        } catch (TemporaryLockingException refused) {
            cHolds = false;
        }
        assertTrue(!cHolds || !lease.isValid(), () -> "TWO HOLDERS: C took the lock while A's lease is valid for "
                + lease.remaining() + " more, after A's renewal for " + renewedFor + " landed without its answer");
    }
}
