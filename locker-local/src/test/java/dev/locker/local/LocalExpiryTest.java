package dev.locker.local;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertThrows;

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
    void aLapsedTransactionCannotRenewOnceAnotherTransactionOfThisProcessTookTheLock() {
        VirtualClock clock = new VirtualClock();
        InMemoryStore store = new InMemoryStore("local-renew");
        try (Locker a = ConsistentKeyLocker.builder(store)
                .config(LockerConfig.builder().rid("a").expiry(Duration.ofSeconds(10)).timeSource(clock).build()).build()) {
            KeyColumn lock = KeyColumn.of("k", "c");
            Object stalled = new Object();
            a.writeLock(lock, stalled);
            a.checkLocks(stalled);
            // the JVM-local record outlives the claim by one expiry: no second transaction gets through meanwhile
            clock.advance(Duration.ofSeconds(15));
            assertThrows(dev.locker.api.TemporaryLockingException.class, () -> a.writeLock(lock, new Object()));
            clock.advance(Duration.ofSeconds(10)); // the stalled transaction is abandoned for good
            Object fresh = new Object();
            a.writeLock(lock, fresh);
            a.checkLocks(fresh);
            assertThrows(ExpiredLockException.class, () -> a.renewLocks(stalled), "the stalled one cannot renew into a second holder");
            a.checkLocks(fresh);
        }
    }
}
