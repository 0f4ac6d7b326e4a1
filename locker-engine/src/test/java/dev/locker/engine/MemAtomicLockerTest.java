package dev.locker.engine;

import dev.locker.api.Acquisition;
import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LeaseOptions;
import dev.locker.api.Locker;
import dev.locker.api.Lockers;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** mem:'s atomic protocol on the real clock: leases of a few ms, interrupts, forced releases racing renewals. */
class MemAtomicLockerTest {

    private static final Duration WAIT = Duration.ofSeconds(30);
    private final String name = "mem:atomic-" + System.nanoTime();

    /** A wait long enough for any grant: a grant that reaches us after a few ms lease ended is retried. */
    private static Lease take(Locker locker, KeyColumn lock, LeaseOptions options) {
        Acquisition a = locker.acquireWithin(lock, "short job", WAIT, options);
        assertTrue(a.acquired(), a::toString);
        return a.lease().orElseThrow();
    }

    @Test
    void aLeaseOfAFewMillisecondsIsGrantedThenPassesToTheNextHolderWithAGreaterToken() {
        KeyColumn lock = KeyColumn.named("few-ms");
        LeaseOptions fiveMs = LeaseOptions.expiry(Duration.ofMillis(5)).keepAlive(false);
        try (Locker a = Lockers.open(name); Locker b = Lockers.open(name)) {
            Lease first = take(a, lock, fiveMs);
            long token = first.fencingToken();
            Lease second = take(b, lock, fiveMs); // waits out the first lease's 5 ms
            assertTrue(second.fencingToken() > token, "the next holder's token is greater");
            assertFalse(first.isValid(), "the first lease ended at its own expiry");
            assertFalse(first.release(), "the first claim had expired and was taken over");
            second.close();
        }
    }

    @Test
    void aLeaseOfOneMillisecondEitherHoldsOrIsWithdrawnNeverBoth() {
        KeyColumn lock = KeyColumn.named("one-ms");
        try (Locker a = Lockers.open(name); Locker b = Lockers.open(name)) {
            long last = 0;
            for (int i = 0; i < 200; i++) {
                Acquisition got = a.acquireWithin(lock, "tiny", Duration.ZERO,
                        LeaseOptions.expiry(Duration.ofMillis(1)).keepAlive(false));
                if (!got.acquired()) {
                    assertEquals(Acquisition.Outcome.GRANTED_TOO_LATE, got.outcome(), got::toString);
                    assertTrue(b.holder(lock).isEmpty(), "a grant that came too late was withdrawn");
                    continue;
                }
                // the next holder waits out the 1 ms lease, and its token is above every token before
                try (Lease next = take(b, lock, LeaseOptions.expiry(Duration.ofMinutes(1)).keepAlive(false))) {
                    assertTrue(next.fencingToken() > last, "tokens rise: " + next.fencingToken() + " after " + last);
                    last = next.fencingToken();
                }
                got.lease().orElseThrow().close();
            }
        }
    }

    @Test
    void aLeaseAskedForOnAnInterruptedThreadIsGrantedAndTheInterruptIsKept() {
        KeyColumn lock = KeyColumn.named("interrupted");
        try (Locker a = Lockers.open(name); Locker b = Lockers.open(name)) {
            Thread.currentThread().interrupt();
            Lease lease;
            try {
                lease = a.acquire(lock, "job");
                assertTrue(Thread.currentThread().isInterrupted(), "the interrupt is left for the caller");
                assertTrue(lease.release(), "released on the interrupted thread too");
            } finally {
                Thread.interrupted();
            }
            assertTrue(b.holder(lock).isEmpty(), "the release reached the table");
        }
    }

    @Test
    void aForcedReleaseRacingRenewalsAlwaysEndsTheLease() throws Exception {
        KeyColumn lock = KeyColumn.named("forced-vs-renew");
        try (Locker a = Lockers.open(name); Locker operator = Lockers.open(name)) {
            for (int round = 0; round < 50; round++) {
                Lease lease = a.acquire(lock, "job", LeaseOptions.expiry(Duration.ofMinutes(1)).keepAlive(false));
                long token = lease.fencingToken();
                CountDownLatch started = new CountDownLatch(1);
                AtomicBoolean stop = new AtomicBoolean();
                Thread renewer = new Thread(() -> {
                    started.countDown();
                    while (!stop.get()) {
                        try {
                            lease.renew();
                        } catch (ExpiredLockException lost) {
                            return;
                        }
                    }
                });
                renewer.start();
                started.await();
                assertTrue(operator.forceRelease(lock, "operator", token));
                stop.set(true);
                renewer.join();
                assertThrows(ExpiredLockException.class, lease::renew, "no renewal revives a force-released claim");
                assertTrue(operator.holder(lock).isEmpty(), "the lock stays free after the race");
                assertFalse(lease.release());
            }
        }
    }
}
