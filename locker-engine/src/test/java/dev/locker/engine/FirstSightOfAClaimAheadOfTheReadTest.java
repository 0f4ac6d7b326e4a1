package dev.locker.engine;

import dev.locker.api.TimeSource;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** A claim whose last write is later than the judging of its first sight still lives its holder's whole validity. */
class FirstSightOfAClaimAheadOfTheReadTest extends JudgingScenario {

    /**
     * A's host reads the wall clock 99 ms ahead of B's. B sees A's renewal as soon as it is written, then is refused
     * until A's deadline.
     */
    @Test
    void aRenewalWrittenByAHostAheadByAlmostALockWaitLivesItsHoldersValidity() {
        ConsistentKeyDriver a = driver("a", ahead(clock, Duration.ofMillis(99)));
        ConsistentKeyDriver b = driver("b");
        ConsistentKeyClaim held = a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
        clock.advance(Duration.ofSeconds(5));
        held = a.renew(lock, held, EXPIRY);
        assertTrue(b.readHolder(lock).isPresent(), "B does not see A's claim");
        advanceToJustBefore(held);
        assertRefusedWhileHeld(b, held);
    }

    /** A renews for 10 s while B reads the row, after B's first clock reading. B is refused until A's deadline. */
    @Test
    void aShorterRenewalLandingDuringTheFirstReadLivesItsHoldersValidity() {
        assertRenewalDuringTheReadLivesItsValidity(Duration.ofSeconds(10));
    }

    /** The same with a renewal for 60 s. */
    @Test
    void aLongerRenewalLandingDuringTheFirstReadLivesItsHoldersValidity() {
        assertRenewalDuringTheReadLivesItsValidity(Duration.ofSeconds(60));
    }

    /** The same with a renewal for 10 s while the clock, set back 5 s during B's read, is seen by B only after it. */
    @Test
    void aRenewalLandingDuringAReadAcrossAStepBackLivesItsHoldersValidity() {
        ThreadGatedClock bTime = new ThreadGatedClock(clock);
        ConsistentKeyDriver a = driver("a", clock);
        ConsistentKeyDriver b = driver("b", bTime);
        ConsistentKeyClaim[] held = {a.verify(lock, a.write(lock, owner("a"), EXPIRY, null))};
        clock.advance(Duration.ofSeconds(1));
        b.readHolder(other);
        bTime.afterNanos(1, () -> {
            clock.advance(Duration.ofMillis(10));
            clock.stepWallClock(Duration.ofSeconds(-5));
            held[0] = a.renew(lock, held[0], Duration.ofSeconds(10));
            clock.advance(Duration.ofMillis(10));
        });
        assertTrue(b.readHolder(lock).isPresent(), "B does not see A's claim");
        assertTrue(bTime.allHooksRan(), "A did not renew during B's read");
        clock.stepWallClock(Duration.ofSeconds(5));
        b.readHolder(other);
        advanceToJustBefore(held[0]);
        assertRefusedWhileHeld(b, held[0]);
    }

    private void assertRenewalDuringTheReadLivesItsValidity(Duration term) {
        ThreadGatedClock bTime = new ThreadGatedClock(clock);
        ConsistentKeyDriver a = driver("a", clock);
        ConsistentKeyDriver b = driver("b", bTime);
        ConsistentKeyClaim[] held = {a.verify(lock, a.write(lock, owner("a"), EXPIRY, null))};
        clock.advance(Duration.ofSeconds(5));
        bTime.afterNanos(1, () -> {
            clock.advance(Duration.ofMillis(10));
            held[0] = a.renew(lock, held[0], term);
            clock.advance(Duration.ofMillis(10));
        });
        assertTrue(b.readHolder(lock).isPresent(), "B does not see A's claim");
        assertTrue(bTime.allHooksRan(), "A did not renew during B's read");
        advanceToJustBefore(held[0]);
        assertRefusedWhileHeld(b, held[0]);
    }

    /** Advances the clock to 200 ms before {@code held}'s deadline, less B's lockWait. */
    private void advanceToJustBefore(ConsistentKeyClaim held) {
        long left = held.deadlineNanos() - clock.nanoTime() - LOCK_WAIT.toNanos() - 200_000_000L;
        clock.advance(Duration.ofNanos(left));
    }

    private void assertRefusedWhileHeld(ConsistentKeyDriver b, ConsistentKeyClaim held) {
        ConsistentKeyClaim claim = b.write(lock, owner("b"), EXPIRY, null);
        assertRefusedWhileHeld(b, claim, held);
    }

    /** The host clock, its wall clock read {@code by} ahead. */
    private static TimeSource ahead(TimeSource host, Duration by) {
        return new TimeSource() {
            @Override
            public Instant now() {
                return host.now().plus(by);
            }

            @Override
            public long nanoTime() {
                return host.nanoTime();
            }

            @Override
            public void sleep(Duration d) throws InterruptedException {
                host.sleep(d);
            }
        };
    }
}
