package dev.locker.testkit;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.api.LockingException;
import dev.locker.api.TemporaryLockingException;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.util.Optional;

import static dev.locker.testkit.Scenarios.take;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A backend outage: failures are temporary with their cause, and the lock is free again afterwards. */
public interface BackendOutageSection extends ConformanceScenario {

    @Test
    default void anUnreachableBackendIsATemporaryFailureWithCause() throws Exception {
        Assumptions.assumeTrue(fixture().canBreakBackend(), "backend cannot be broken");
        Locker a = process("a");
        KeyColumn held = lock("held");
        Object ta = new Object();
        take(a, held, ta);
        fixture().breakBackend();
        try {
            LockingException e = assertThrows(LockingException.class, () -> take(a, lock("other"), new Object()));
            assertInstanceOf(TemporaryLockingException.class, e, "an unreachable server is temporary: " + e);
            assertNotNull(e.getCause(), "the backend failure is kept as the cause");
            assertEquals(lock("other"), e.lock());
            assertDoesNotThrow(() -> a.deleteLocks(ta), "deleteLocks never throws for a backend failure");
        } finally {
            fixture().repairBackend();
        }
        // the backend is back: the lock can be taken again (a restarted server may refuse grants for one expiry)
        Locker b = process("b");
        Optional<Lease> lease = b.tryAcquire(held, "after outage", expiry().multipliedBy(4));
        assertTrue(lease.isPresent(), "lock available again after the backend came back");
        lease.get().close();
    }
}
