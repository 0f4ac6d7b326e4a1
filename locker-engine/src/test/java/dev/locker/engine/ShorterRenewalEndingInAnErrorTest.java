package dev.locker.engine;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LeaseOptions;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
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

/** A shorter renewal that landed, then failed with an Error, leaves no holder believing past its shorter term. */
class ShorterRenewalEndingInAnErrorTest {

    private static final Duration LOCK_WAIT = Duration.ofMillis(100);
    private static final Duration EXPIRY = Duration.ofSeconds(30);

    private final VirtualClock clock = new VirtualClock();
    private final InMemoryStore shared = new InMemoryStore("shorter-renewal-error");
    private final List<Locker> lockers = new ArrayList<>();
    private final KeyColumn lock = KeyColumn.of("vertex:7", "name");

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
     * A holds a 30 s lease and renews it for 5 s: the rewrite lands, then the client throws an Error (a class missing
     * on the answer's path). 6 s later C tries the lock: either C is refused, or A no longer takes itself for holder.
     */
    @Test
    void aShorterRenewalThatLandedThenFailedWithAnErrorEndsTheHold() {
        LandsThenFails store = new LandsThenFails(shared);
        Locker a = locker("a", store);
        Locker c = locker("c", shared);
        Lease lease = a.acquire(lock, "a", LeaseOptions.DEFAULTS.keepAlive(false));
        clock.advance(Duration.ofSeconds(1));
        store.errAfterTheNextWrite(new NoClassDefFoundError("a class of the store's client, loaded after the send"));
        assertThrows(NoClassDefFoundError.class, () -> lease.renewFor(Duration.ofSeconds(5)));
        clock.advance(Duration.ofSeconds(6));
        Object tc = new Object();
        boolean cHolds;
        try {
            Interleavings.take(c, lock, tc);
            cHolds = Interleavings.believesItHolds(c, lock, tc, clock);
        } catch (TemporaryLockingException refused) {
            cHolds = false;
        }
        assertTrue(!cHolds || !lease.isValid(), () -> "TWO HOLDERS: C took the lock while A's lease is valid for "
                + lease.remaining() + " more, after A's 5 s renewal landed and then failed with an Error");
    }
}
