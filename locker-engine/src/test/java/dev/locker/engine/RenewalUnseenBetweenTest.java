package dev.locker.engine;

import org.junit.jupiter.api.Test;

import java.time.Duration;

/** A renewal repeating the expiry of the state last watched, with a state between it never seen, lives its time. */
class RenewalUnseenBetweenTest extends JudgingScenario {

    /**
     * A and B run on one host. A renews every 10 s for 30 s, and B sees the first renewal but not the second. NTP sets
     * the clock back 15 s, which B sees on another lock, and A's next renewal writes the first renewal's expiry again.
     * 26 s later A still holds, so B is refused.
     */
    @Test
    void aRenewalRepeatingTheWatchedExpiryAfterAnUnseenRenewalLivesItsTimeFromTheRenewal() {
        assertRefused(false);
    }

    /** The same with B seeing the second renewal too: B is refused. */
    @Test
    void aRenewalRepeatingAnEarlierExpiryAfterASeenRenewalLivesItsTimeFromTheRenewal() {
        assertRefused(true);
    }

    private void assertRefused(boolean secondSeen) {
        ConsistentKeyDriver a = driver("a");
        ConsistentKeyDriver b = driver("b");
        ConsistentKeyClaim held = a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
        clock.advance(Duration.ofSeconds(5));
        held = a.renew(lock, held, EXPIRY);
        b.readHolder(lock); // B watches the state that expires 35 s after A's first write
        clock.advance(Duration.ofSeconds(10));
        held = a.renew(lock, held, EXPIRY);
        if (secondSeen) {
            b.readHolder(lock);
        }
        clock.advance(Duration.ofSeconds(5));
        clock.stepWallClock(Duration.ofSeconds(-15));
        b.readHolder(other); // B reads its clocks after the step back, exactly
        ConsistentKeyClaim renewed = a.renew(lock, held, EXPIRY);
        clock.advance(Duration.ofSeconds(26));
        ConsistentKeyClaim claim = b.write(lock, owner("b"), EXPIRY, null);
        assertRefusedWhileHeld(b, claim, renewed);
    }
}
