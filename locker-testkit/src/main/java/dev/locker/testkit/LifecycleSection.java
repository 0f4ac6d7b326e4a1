package dev.locker.testkit;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import org.junit.jupiter.api.Test;

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
}
