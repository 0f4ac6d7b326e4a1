package dev.locker.engine;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockOwner;
import dev.locker.api.LockerConfig;
import dev.locker.api.TemporaryLockingException;
import dev.locker.api.TimeSource;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What the tests of judging other lockers' claims share: lockers of one host (one virtual clock) on one store, with a
 * 100 ms lockWait and a 30 s expiry.
 */
abstract class JudgingScenario {

    static final Duration LOCK_WAIT = Duration.ofMillis(100);
    static final Duration EXPIRY = Duration.ofSeconds(30);

    final VirtualClock clock = new VirtualClock();
    final KeyColumn lock = KeyColumn.of("vertex:42", "name");
    /** Another lock, whose reads only make a locker read its clocks. */
    final KeyColumn other = KeyColumn.of("vertex:43", "name");
    final InMemoryStore shared = new InMemoryStore(getClass().getSimpleName());
    private final List<ConsistentKeyDriver> drivers = new ArrayList<>();

    @AfterEach
    void closeDrivers() {
        drivers.forEach(ConsistentKeyDriver::close);
    }

    /** A locker on the host's clock. */
    ConsistentKeyDriver driver(String rid) {
        return driver(rid, clock);
    }

    /** A locker reading {@code time}. */
    ConsistentKeyDriver driver(String rid, TimeSource time) {
        return driver(config(rid, time));
    }

    ConsistentKeyDriver driver(LockerConfig.Builder config) {
        ConsistentKeyDriver d = new ConsistentKeyDriver(config.build(), shared, false, 16);
        drivers.add(d);
        return d;
    }

    static LockerConfig.Builder config(String rid, TimeSource time) {
        return LockerConfig.builder().rid(rid).expiry(EXPIRY).lockWait(LOCK_WAIT).timeSource(time);
    }

    /**
     * Asks {@code claimant} to verify its {@code claim} on the lock while {@code held} is another locker's claim: the
     * claimant must be refused, and the holder's deadline must not have passed by the time it was answered.
     */
    void assertRefusedWhileHeld(ConsistentKeyDriver claimant, ConsistentKeyClaim claim, ConsistentKeyClaim held) {
        ConsistentKeyClaim granted = null;
        try {
            granted = claimant.verify(lock, claim);
        } catch (TemporaryLockingException refused) {
            // the holder holds: the answer wanted
        }
        assertTrue(clock.nanoTime() - held.deadlineNanos() < 0, "the holder's claim ran out before the answer");
        ConsistentKeyClaim grantedToClaimant = granted;
        assertNull(grantedToClaimant, () -> "the claimant was granted token " + grantedToClaimant.fencingToken()
                + " while the holder holds token " + held.fencingToken() + " within its deadline");
    }

    static LockOwner owner(String rid) {
        return LockerConfig.builder().rid(rid).build().owner("t");
    }
}
