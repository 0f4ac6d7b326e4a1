package dev.locker.redis;

import dev.locker.api.Acquisition;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LeaseOptions;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.testkit.RedisServer;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A hold-at-least release on Redis leaves the claim for the time the hold-at-least has left, and says it was ours. */
class RedisHoldAtLeastReleaseTest {

    private static final Duration EXPIRY = Duration.ofSeconds(60);
    private static final Duration SKEW = Duration.ofSeconds(1);

    private final RedisServer server = RedisServer.shared();
    private final String prefix = "hold-at-least-" + LockerConfig.randomRid().substring(0, 8) + ":";
    private final VirtualClock clock = new VirtualClock();
    private final List<Locker> opened = new ArrayList<>();

    @AfterEach
    void closeLockers() {
        opened.forEach(Locker::close);
    }

    private Locker locker(String rid) {
        Locker l = RedisLocker.builder().node("127.0.0.1", server.port()).keyPrefix(prefix)
                .restartGuard(Duration.ZERO).serverClockSkew(SKEW)
                .config(LockerConfig.builder().rid(rid).expiry(EXPIRY).timeSource(clock).build()).build();
        opened.add(l);
        return l;
    }

    /**
     * Given serverClockSkew = 1 s and a release when the hold-at-least has 0.5 s left (less than twice the skew), the
     * release says the claim was ours, and the claim is still there for the rest of the hold-at-least.
     */
    @Test
    void aReleaseNearTheEndOfAHoldAtLeastSaysTheClaimWasOurs() {
        Locker a = locker("a");
        Locker b = locker("b");
        KeyColumn lock = KeyColumn.of("hold-at-least", "x");
        Lease lease = a.acquire(lock, "nightly report", LeaseOptions.expiry(EXPIRY).holdAtLeast(Duration.ofSeconds(10))
                .keepAlive(false));
        clock.advance(Duration.ofMillis(9_500)); // the hold-at-least has 0.5 s left on this process's clock
        assertTrue(lease.release(), "our claim was there, and is left for the rest of its hold-at-least");
        assertEquals(a.rid(), b.holder(lock).orElseThrow().rid(), "the server keeps the released claim");
    }

    /** Given a hold-at-least of 3 s released at once, the claim refuses other processes and its own locker. */
    @Test
    void aReleasedHoldAtLeastRefusesEveryProcess() {
        Locker a = locker("a");
        Locker b = locker("b");
        KeyColumn lock = KeyColumn.of("hold-at-least", "y");
        Lease lease = a.acquire(lock, "nightly report", LeaseOptions.expiry(EXPIRY).holdAtLeast(Duration.ofSeconds(3))
                .keepAlive(false));
        assertTrue(lease.release(), "our claim was there, and is left for its hold-at-least");
        assertTrue(b.tryAcquire(lock, "other", Duration.ZERO).isEmpty(), "another process is refused");
        assertTrue(a.tryAcquire(lock, "again", Duration.ZERO).isEmpty(), "the releasing locker is refused too");
        assertEquals(a.rid(), b.holder(lock).orElseThrow().rid(), "the server keeps the released claim");
    }

    /**
     * Given a hold-at-least of 3 s in a lease of 60 s released at once, the lock is free once the server's clock ends
     * the hold-at-least: the claim is left for the time left, not for the lease's expiry.
     */
    @Test
    void aReleasedHoldAtLeastFreesTheLockWhenItEnds() throws Exception {
        Locker a = locker("a");
        Locker b = locker("b");
        KeyColumn lock = KeyColumn.of("hold-at-least", "z");
        Lease lease = a.acquire(lock, "nightly report", LeaseOptions.expiry(EXPIRY).holdAtLeast(Duration.ofSeconds(3))
                .keepAlive(false));
        assertTrue(lease.release());
        Thread.sleep(4_000); // the server's clock ends the hold-at-least (a generous bound, not a timing)
        Acquisition after = b.acquireWithin(lock, "after", Duration.ZERO);
        assertTrue(after.lease().isPresent(), "the hold-at-least ended: " + after + ", holding " + b.holding(lock));
        after.lease().get().close();
    }
}
