package dev.locker.redis;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockerConfig;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static dev.locker.redis.RedisWaitingFixture.lock;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Adversarial review (round 4) of force.lua's "already removed" answer, now given only on a resend (ARGV 5). On the
 * real redis-server. Sound: end to end through the locker, two forced releases by token from one thread at one frozen
 * millisecond (the same record bytes: locker, thread, reason, instant, token) answer true once, then false.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class Review4Test {

    @RegisterExtension
    static final RedisWaitingFixture fixture = RedisWaitingFixture.onTarget("rev4");

    @Test
    void aSecondForcedReleaseWritingTheSameRecordBytesIsNotToldItRemovedTheClaim() {
        VirtualClock clock = new VirtualClock();
        RedisLocker holder = fixture.open(fixture.onTarget().config(LockerConfig.builder()
                .rid("holder-" + LockerConfig.randomRid().substring(0, 8)).expiry(Duration.ofSeconds(30)).build())
                .restartGuard(Duration.ZERO));
        RedisLocker operator = fixture.open(fixture.onTarget().config(LockerConfig.builder()
                .rid("operator-" + LockerConfig.randomRid().substring(0, 8)).expiry(Duration.ofSeconds(30))
                .timeSource(clock).build()).restartGuard(Duration.ZERO));
        KeyColumn lock = lock("force-twice");
        Lease l = holder.acquire(lock, "held");
        long token = l.fencingToken();
        assertTrue(operator.forceRelease(lock, "same reason", token), "the first call removes the claim");
        assertFalse(operator.forceRelease(lock, "same reason", token),
                "a second call (same record bytes, no resend) removed nothing and must say so");
        l.close();
    }
}
