package dev.locker.testkit;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LeaseOptions;
import dev.locker.api.LockProbe;
import dev.locker.api.Locker;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static dev.locker.testkit.Scenarios.take;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Closing a locker: it releases its locks, tells its leases, and every later call fails clearly. */
public interface LifecycleSection extends ConformanceScenario {

    @Test
    default void closingALockerReleasesItsOpenTransactions() {
        Locker a = process("a");
        Locker b = process("b");
        KeyColumn lock = lock("x");
        take(a, lock, new Object());
        a.close();
        take(b, lock, new Object());
        assertThrows(IllegalStateException.class, () -> a.writeLock(lock("y"), new Object()));
    }

    @Test
    default void closingTheLockerTellsTheLeasesListeners() throws Exception {
        Locker a = realTimeProcess("a");
        Losses losses = new Losses();
        Lease lease = a.acquire(lock("x"), "job").onLost(losses);
        a.close();
        assertTrue(losses.await(10, TimeUnit.SECONDS));
        assertEquals(dev.locker.api.LossReason.LOCKER_CLOSED, losses.told.get(0).reason());
        assertFalse(lease.isValid());
        take(realTimeProcess("b"), lock("x"), new Object()); // close released the claim
    }

    /** Every call on a closed locker, or on a lease whose locker closed, fails clearly. */
    @Test
    default void aClosedLockerAndItsLeasesFailClearly() {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        Object tx = new Object();
        take(a, lock, tx);
        Lease lease = a.acquire(lock("y"), "closing under it");
        a.close();
        assertThrows(IllegalStateException.class, () -> a.checkLocks(tx));
        assertThrows(IllegalStateException.class, () -> a.verifyLocks(tx));
        assertThrows(IllegalStateException.class, () -> a.renewLocks(tx));
        assertThrows(IllegalStateException.class, () -> a.fencingToken(lock, tx));
        assertThrows(IllegalStateException.class, () -> a.holder(lock));
        assertThrows(IllegalStateException.class, () -> a.forceRelease(lock));
        assertThrows(IllegalStateException.class, lease::check);
        assertThrows(IllegalStateException.class, lease::renew);
        assertThrows(IllegalStateException.class, lease::fencingToken);
        assertDoesNotThrow(() -> a.deleteLocks(tx), "releasing after close is a no-op");
        assertDoesNotThrow(lease::close);
    }

    /**
     * A locker closed on a thread whose interrupt flag is set (a cancelled task, a shutdownNow) while a renewal of its
     * lease is paused before the backend. Close waits for that renewal, then deletes the claim: the lock is free at
     * once, not after its minute of expiry, and the caller's flag is still set.
     */
    @Test
    default void aLockerClosedOnAnInterruptedThreadFreesTheLockOfALeaseWhoseRenewalIsInFlight() throws Exception {
        StepPauses pauses = new StepPauses();
        Locker a = open(config("a").probe(pauses).expiry(Duration.ofSeconds(60)).build());
        Locker b = process("b");
        KeyColumn lock = lock("closed-while-renewing");
        Lease lease = a.acquire(lock, "a cancelled task", LeaseOptions.DEFAULTS.keepAlive(false));
        Pause renewal = pauses.before(LockProbe.Step.RENEW);
        Future<?> renewer = stepPool().submit(() -> {
            try {
                lease.renew();
            } catch (RuntimeException lostToTheClose) {
                // the close ends the lease: either answer is fine here, the lock's state is what counts
            }
        });
        renewal.awaitArrival();
        // A close that waits for the renewal (as it should) lets it go on after a while, so it never hangs here.
        CountDownLatch closeReturned = new CountDownLatch(1);
        Future<?> resumer = stepPool().submit(() -> {
            closeReturned.await(3, TimeUnit.SECONDS);
            renewal.resume();
            return null;
        });
        boolean flagKept;
        Thread.currentThread().interrupt();
        try {
            a.close();
        } finally {
            flagKept = Thread.interrupted(); // the scenario's own thread goes on uninterrupted
            closeReturned.countDown();
        }
        resumer.get(1, TimeUnit.MINUTES);
        renewer.get(1, TimeUnit.MINUTES);
        assertTrue(flagKept, "close kept the caller's interrupt flag");
        Optional<Lease> next = b.tryAcquire(lock, "the next holder", Duration.ZERO);
        String holder = String.valueOf(b.holding(lock));
        next.ifPresent(Lease::close);
        assertTrue(next.isPresent(), "the closed locker's claim was deleted, not left for its expiry: " + holder);
    }
}
