package dev.locker.engine;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The local expiry of a claim is kept on the monotonic clock, so a wall-clock step cannot stretch it. */
class LocalExpiryTest {

    @Test
    void aBackwardWallClockStepDoesNotExtendOurClaim() {
        VirtualClock clock = new VirtualClock();
        InMemoryStore store = new InMemoryStore("local-expiry");
        try (Locker a = ConsistentKeyLocker.builder(store)
                .config(LockerConfig.builder().rid("a").expiry(Duration.ofSeconds(10)).timeSource(clock).build()).build()) {
            KeyColumn lock = KeyColumn.of("k", "c");
            Object tx = new Object();
            a.writeLock(lock, tx);
            a.checkLocks(tx);
            clock.stepWallClock(Duration.ofHours(-1)); // NTP steps this host's clock back
            clock.advance(Duration.ofSeconds(11));     // ... and real time passes beyond the expiry
            assertThrows(ExpiredLockException.class, () -> a.checkLocks(tx));
        }
    }

    @Test
    void aLeakedTransactionBlocksItsLockInThisProcessOnlyUntilItsDeadline() {
        VirtualClock clock = new VirtualClock();
        InMemoryStore store = new InMemoryStore("local-renew");
        try (Locker a = ConsistentKeyLocker.builder(store)
                .config(LockerConfig.builder().rid("a").expiry(Duration.ofSeconds(10)).timeSource(clock).build()).build()) {
            KeyColumn lock = KeyColumn.of("k", "c");
            Object leaked = new Object();
            a.writeLock(lock, leaked);
            a.checkLocks(leaked);
            clock.advance(Duration.ofSeconds(5));
            assertThrows(dev.locker.api.TemporaryLockingException.class, () -> a.writeLock(lock, new Object()));
            clock.advance(Duration.ofSeconds(6)); // the leaked transaction's claim is dead: one expiry, not two
            Object fresh = new Object();
            a.writeLock(lock, fresh);
            a.checkLocks(fresh);
            assertThrows(ExpiredLockException.class, () -> a.renewLocks(leaked), "the leaked one cannot renew into a second holder");
            assertThrows(ExpiredLockException.class, () -> a.checkLocks(leaked));
            a.deleteLocks(leaked); // and releasing it does not touch the new holder
            a.checkLocks(fresh);
        }
    }

    @Test
    void theLongestExpiryIsHeldAndALongerOneRefusedNotAnOverflow() {
        VirtualClock clock = new VirtualClock();
        InMemoryStore store = new InMemoryStore("local-forever");
        Duration tooLong = Duration.ofDays(365L * 300); // above Long.MAX_VALUE nanoseconds (~292 years)
        IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
                () -> LockerConfig.builder().rid("a").expiry(tooLong));
        assertTrue(refused.getMessage().contains("expiry"), refused.getMessage());
        try (Locker a = ConsistentKeyLocker.builder(store).config(LockerConfig.builder().rid("a")
                .expiry(LockerConfig.MAX_EXPIRY).timeSource(clock).build()).build()) {
            KeyColumn lock = KeyColumn.of("k", "c");
            Object tx = new Object();
            a.writeLock(lock, tx); // threw ArithmeticException (Duration.toNanos) for 300 years, before the limit
            a.checkLocks(tx);
            clock.advance(Duration.ofDays(365));
            a.checkLocks(tx);
            a.deleteLocks(tx);
        }
    }

    @Test
    void aWaitOfCenturiesWaitsInsteadOfOverflowing() {
        VirtualClock clock = new VirtualClock();
        InMemoryStore store = new InMemoryStore("local-wait-forever");
        Duration centuries = Duration.ofSeconds(Long.MAX_VALUE); // Duration.toNanos() overflows: "wait until granted"
        try (Locker a = ConsistentKeyLocker.builder(store).config(LockerConfig.builder().rid("a")
                .localWait(centuries).timeSource(clock).build()).build()) {
            KeyColumn lock = KeyColumn.of("k", "c");
            try (var lease = a.tryAcquire(lock, "forever", centuries).orElseThrow()) { // threw ArithmeticException
                assertTrue(lease.isValid());
            }
            try (var all = a.tryAcquireAll(java.util.List.of(lock, KeyColumn.of("k", "d")), "both", centuries)
                    .orElseThrow()) {
                assertTrue(all.isValid());
            }
        }
    }
}
