package dev.locker.engine;

import dev.locker.api.TemporaryLockingException;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.fail;

/** A wall clock that NTP slews (500 ppm at most) is not taken for a stepped one: no claim lives on for it. */
class SlewedWallClockTest extends JudgingScenario {

    private static final Duration INTERVAL = Duration.ofSeconds(10);
    /** What NTP's largest slew (500 ppm) adds to the wall clock in one interval. */
    private static final Duration SLEW = Duration.ofMillis(5);
    /** What a slew of 50 ppm adds to the wall clock in one interval. */
    private static final Duration SLOW_SLEW = Duration.ofNanos(500_000);

    /**
     * A holds the lock for a day and renews it every 10 s; B looks at it as often. NTP slews the host's clock forward
     * at 500 ppm all day. A then stops: a second after its last claim expired, B takes the lock.
     */
    @Test
    void aClaimHeldForADayUnderANtpSlewIsJudgedDeadASecondAfterItsLastExpiry() {
        assertTakenASecondAfterADayOfRenewals(SLEW);
    }

    /** The same under a slew of 50 ppm: B takes the lock a second after A's last claim expired. */
    @Test
    void aClaimHeldForADayUnderASlowSlewIsJudgedDeadASecondAfterItsLastExpiry() {
        assertTakenASecondAfterADayOfRenewals(SLOW_SLEW);
    }

    private void assertTakenASecondAfterADayOfRenewals(Duration slewPerInterval) {
        ConsistentKeyDriver a = driver("a");
        ConsistentKeyDriver b = driver("b");
        ConsistentKeyClaim held = a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
        long intervals = Duration.ofDays(1).dividedBy(INTERVAL);
        for (long i = 0; i < intervals; i++) {
            clock.advance(INTERVAL);
            clock.stepWallClock(slewPerInterval);
            held = a.renew(lock, held, EXPIRY);
            b.readHolder(lock);
        }
        clock.advance(EXPIRY.plusSeconds(1));
        clock.stepWallClock(slewPerInterval.multipliedBy(4)); // the slew goes on over those 31 s
        ConsistentKeyClaim claim = b.write(lock, owner("b"), EXPIRY, null);
        try {
            b.verify(lock, claim);
        } catch (TemporaryLockingException refused) {
            fail("B was refused by A's claim, expired 1 s ago, judged to live " + refused.holderExpiresIn().orElse(null)
                    + " more: " + refused.getMessage());
        }
    }
}
