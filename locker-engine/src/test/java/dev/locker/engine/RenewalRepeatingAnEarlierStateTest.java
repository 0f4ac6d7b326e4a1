package dev.locker.engine;

import org.junit.jupiter.api.Test;

import java.time.Duration;

/** A renewal whose expiry equals any earlier state of its claim lives its time from the renewal. */
class RenewalRepeatingAnEarlierStateTest extends JudgingScenario {

    /**
     * A and B run on one host. A renews every 10 s for 30 s, and B sees the first renewal. NTP then sets the clock back
     * 15 s, and A's next renewal writes the first renewal's expiry again. 16 s later A still holds, so B is refused.
     */
    @Test
    void aRenewalRepeatingTheExpiryOfAStateBeforeTheLastLivesItsTimeFromTheRenewal() {
        ConsistentKeyDriver a = driver("a");
        ConsistentKeyDriver b = driver("b");
        ConsistentKeyClaim held = a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
        clock.advance(Duration.ofSeconds(5));
        held = a.renew(lock, held, EXPIRY);
        b.readHolder(lock); // B watches the state that expires 35 s after A's first write
        clock.advance(Duration.ofSeconds(10));
        held = a.renew(lock, held, EXPIRY);
        clock.advance(Duration.ofSeconds(5));
        clock.stepWallClock(Duration.ofSeconds(-15));
        b.readHolder(lock); // B reads its clocks after the step back, exactly
        ConsistentKeyClaim renewed = a.renew(lock, held, EXPIRY);
        clock.advance(Duration.ofSeconds(16));
        assertRefusedWhileHeld(b, renewed);
    }

    /**
     * A renews for 30 s, and B sees it; 5 s later A renews again. NTP sets the clock back 5 s, and A renews for 28 s
     * only: the first renewal's expiry again. 24 s later A still holds, so B is refused.
     */
    @Test
    void aShorterRenewalRepeatingTheExpiryOfAnEarlierStateLivesItsTimeFromTheRenewal() {
        ConsistentKeyDriver a = driver("a");
        ConsistentKeyDriver b = driver("b");
        ConsistentKeyClaim held = a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
        clock.advance(Duration.ofSeconds(5));
        held = a.renew(lock, held, EXPIRY);
        b.readHolder(lock);
        clock.advance(Duration.ofSeconds(5));
        held = a.renew(lock, held, EXPIRY);
        clock.advance(Duration.ofSeconds(2));
        clock.stepWallClock(Duration.ofSeconds(-5));
        b.readHolder(lock);
        ConsistentKeyClaim renewed = a.renew(lock, held, Duration.ofSeconds(28));
        clock.advance(Duration.ofSeconds(24));
        assertRefusedWhileHeld(b, renewed);
    }

    /** The same with no step back: the shorter renewal's expiry is new, and B is refused. */
    @Test
    void aShorterRenewalLivesItsTimeFromTheRenewal() {
        ConsistentKeyDriver a = driver("a");
        ConsistentKeyDriver b = driver("b");
        ConsistentKeyClaim held = a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
        clock.advance(Duration.ofSeconds(5));
        held = a.renew(lock, held, EXPIRY);
        b.readHolder(lock);
        clock.advance(Duration.ofSeconds(7));
        b.readHolder(lock);
        ConsistentKeyClaim renewed = a.renew(lock, held, Duration.ofSeconds(28));
        clock.advance(Duration.ofSeconds(27));
        assertRefusedWhileHeld(b, renewed);
    }

    private void assertRefusedWhileHeld(ConsistentKeyDriver b, ConsistentKeyClaim renewed) {
        ConsistentKeyClaim claim = b.write(lock, owner("b"), EXPIRY, null);
        assertRefusedWhileHeld(b, claim, renewed);
    }
}
