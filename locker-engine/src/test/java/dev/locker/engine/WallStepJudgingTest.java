package dev.locker.engine;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LeaseOptions;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.TemporaryLockingException;
import dev.locker.testkit.Interleavings;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertFalse;

/** A forward step of the host's wall clock never lets one locker take a claim another still believes it holds. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class WallStepJudgingTest {

    private static final Duration LOCK_WAIT = Duration.ofMillis(100);

    private final VirtualClock clock = new VirtualClock();
    private final InMemoryStore shared = new InMemoryStore("shared");
    private final List<Locker> lockers = new ArrayList<>();
    private final KeyColumn lock = KeyColumn.of("vertex:42", "name");

    @AfterEach
    void tearDown() {
        lockers.forEach(Locker::close);
    }

    private Locker locker(String rid, Duration expiry) {
        LockerConfig config = LockerConfig.builder().rid(rid).expiry(expiry).lockWait(LOCK_WAIT).timeSource(clock).build();
        Locker l = ConsistentKeyLocker.builder(shared).config(config).build();
        lockers.add(l);
        return l;
    }

    /** C tries the lock; true when C got it while {@code a} still lets its holder act. */
    private boolean secondHolder(Locker c, Lease a) {
        Object tc = new Object();
        try {
            Interleavings.take(c, lock, tc);
        } catch (TemporaryLockingException refused) {
            return false;
        }
        return a.isValid() && Interleavings.believesItHolds(c, lock, tc, clock);
    }

    /**
     * The host's wall clock steps back 3 s, A takes the lock, C reads the row (refused), then the clock steps forward
     * 3 s again. C saw both frames, so the forward step must not make A's claim look dead 3 s early.
     */
    @Test
    void aForwardStepThatUndoesABackwardStepIsNotTakenForTimePassed() {
        Locker c = locker("c", Duration.ofSeconds(30));
        clock.advance(Duration.ofSeconds(1));
        clock.stepWallClock(Duration.ofSeconds(-3));
        Locker a = locker("a", Duration.ofSeconds(30));
        Lease lease = a.acquire(lock, "a", LeaseOptions.DEFAULTS.keepAlive(false));
        clock.advance(Duration.ofSeconds(1));
        assertFalse(secondHolder(c, lease), "C took the lock while A held it, before any step");
        clock.advance(Duration.ofMillis(26_300)); // A has about 2.2 s left of its deadline
        clock.stepWallClock(Duration.ofSeconds(3));
        assertFalse(secondHolder(c, lease), "TWO HOLDERS: A (" + lease.remaining() + " left) and C, after a 3 s "
                + "forward step that C measured against its baseline from before the 3 s backward step");
    }

    /**
     * C's locker keeps claims for 10 minutes and is idle for one hour; A's lease lives 30 s. A 3 s forward step near
     * the end of A's lease must not let C judge A's claim dead while A may still act.
     */
    @Test
    void aForwardStepAfterALongIdleIsSeenForALeaseShorterThanTheConfiguredExpiry() {
        Locker c = locker("c", Duration.ofMinutes(10));
        clock.advance(Duration.ofHours(1)); // C is idle: no reading of its step guard since it was built
        Locker a = locker("a", Duration.ofMinutes(10));
        Lease lease = a.acquire(lock, "a", LeaseOptions.expiry(Duration.ofSeconds(30)).keepAlive(false));
        clock.advance(Duration.ofMillis(27_400)); // A has about 2.1 s left of its deadline
        clock.stepWallClock(Duration.ofSeconds(3));
        assertFalse(secondHolder(c, lease), "TWO HOLDERS: A (" + lease.remaining() + " left) and C, after a 3 s "
                + "forward step that C's idle step guard took for slewing");
    }

    /**
     * C's locker keeps claims for 30 s; A's lease lives 10 minutes without renewal. A 10 s forward step early in
     * A's lease must still be allowed for when C judges A's claim near its end.
     */
    @Test
    void aForwardStepIsAllowedForDuringTheWholeLifeOfALongerLease() {
        Locker c = locker("c", Duration.ofSeconds(30));
        Locker a = locker("a", Duration.ofSeconds(30));
        Lease lease = a.acquire(lock, "a", LeaseOptions.expiry(Duration.ofMinutes(10)).keepAlive(false));
        clock.advance(Duration.ofSeconds(1));
        clock.stepWallClock(Duration.ofSeconds(10));
        assertFalse(secondHolder(c, lease), "C took the lock right after the step while A held it");
        clock.advance(Duration.ofSeconds(589)); // A's deadline is about 593.9 s after it took the lock
        assertFalse(secondHolder(c, lease), "TWO HOLDERS: A (" + lease.remaining() + " left) and C, 10 minutes after "
                + "a 10 s forward step that C allowed for during 30 s only");
    }

    /**
     * Twelve forward steps of 50 ms, each just under C's threshold, with C reading the row between them. Their sum
     * (600 ms) is more than A's margin (lockWait plus 1% of its validity), so C must not take the lock early.
     */
    @Test
    void smallForwardStepsWithinOneExpiryAddUpToAStepThatIsSeen() {
        Locker c = locker("c", Duration.ofSeconds(30));
        Locker a = locker("a", Duration.ofSeconds(30));
        Lease lease = a.acquire(lock, "a", LeaseOptions.DEFAULTS.keepAlive(false));
        for (int i = 0; i < 12; i++) {
            clock.advance(Duration.ofMillis(1_900));
            clock.stepWallClock(Duration.ofMillis(50));
            assertFalse(secondHolder(c, lease), "C took the lock while A held it, after " + (i + 1) + " steps");
        }
        clock.advance(Duration.ofMillis(5_300)); // C judges 29.5 s after A took the lock: A has 0.1 s left
        assertFalse(secondHolder(c, lease), "TWO HOLDERS: A (" + lease.remaining() + " left) and C, after twelve "
                + "forward steps of 50 ms that C each took for less than its threshold");
    }
}
