package dev.locker.redis;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LeaseOptions;
import dev.locker.api.LockInfo;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.testkit.RedisServer;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A hold-at-least release on Redis leaves the claim for the time the hold-at-least has left, however short. */
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
     * release says the claim was ours, and the claim is left about that long, not for the lease's whole expiry.
     */
    @Test
    @Disabled("the release renews to the time left, which RedisDriver.checkExpiry refuses below 2 x serverClockSkew: "
            + "the claim stays for the lease's whole expiry and release() answers false")
    void aReleaseNearTheEndOfAHoldAtLeastLeavesTheClaimOnlyForTheTimeLeft() {
        Locker a = locker("a");
        Locker b = locker("b");
        KeyColumn lock = KeyColumn.of("hold-at-least", "x");
        Lease lease = a.acquire(lock, "nightly report", LeaseOptions.expiry(EXPIRY).holdAtLeast(Duration.ofSeconds(10))
                .keepAlive(false));
        clock.advance(Duration.ofMillis(9_500)); // the hold-at-least has 0.5 s left on this process's clock
        assertTrue(lease.release(), "our claim was there, and is left for the rest of its hold-at-least");
        LockInfo left = b.holding(lock).orElseThrow();
        assertEquals(a.rid(), left.holder().rid());
        Instant latest = Instant.now().plus(SKEW.multipliedBy(2)).plusSeconds(5);
        assertTrue(left.expiresAt().isBefore(latest), "the claim is left for the hold-at-least's rest (about 0.5 s, "
                + "or twice the skew), not for the lease's " + EXPIRY + " expiry: it expires at " + left.expiresAt());
    }
}
