package dev.locker.engine;

import org.junit.jupiter.api.Test;

import java.time.Duration;

/** A renewal that writes an expiry seen before lives its time from the renewal, not from the earlier write. */
class RenewalRepeatingAnExpiryTest extends JudgingScenario {

    /**
     * A and B run on one host. A renews its claim and B sees it. 10 s later NTP sets the clock back 10 s, and A renews
     * again: the same expiry, to the microsecond. 21 s later A still holds, so B is refused.
     */
    @Test
    void aRenewalRepeatingAnExpiryAfterAStepBackLivesItsTimeFromTheRenewal() {
        assertRefusedAfterARenewalOnAClockSetBack(Duration.ofSeconds(10));
    }

    /** The same with the clock set back 1 us less: the expiry differs, and B is refused. */
    @Test
    void aRenewalAfterAStepBackLivesItsTimeFromTheRenewal() {
        assertRefusedAfterARenewalOnAClockSetBack(Duration.ofSeconds(10).minusNanos(1_000));
    }

    private void assertRefusedAfterARenewalOnAClockSetBack(Duration back) {
        ConsistentKeyDriver a = driver("a");
        ConsistentKeyDriver b = driver("b");
        ConsistentKeyClaim held = a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
        clock.advance(Duration.ofSeconds(5));
        held = a.renew(lock, held, EXPIRY);
        b.readHolder(lock);
        clock.advance(Duration.ofSeconds(10));
        clock.stepWallClock(back.negated());
        b.readHolder(lock); // B reads its clocks after the step back, exactly
        ConsistentKeyClaim renewed = a.renew(lock, held, EXPIRY);
        clock.advance(Duration.ofSeconds(21));
        ConsistentKeyClaim claim = b.write(lock, owner("b"), EXPIRY, null);
        assertRefusedWhileHeld(b, claim, renewed);
    }
}
