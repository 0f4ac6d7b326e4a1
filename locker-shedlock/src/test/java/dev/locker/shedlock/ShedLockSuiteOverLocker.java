package dev.locker.shedlock;

import net.javacrumbs.shedlock.core.ExtensibleLockProvider;
import net.javacrumbs.shedlock.test.support.AbstractExtensibleLockProviderIntegrationTest;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * ShedLock's own extensible-provider suite, inherited unmodified; whether a lock is held is Locker's {@code holder}.
 */
abstract class ShedLockSuiteOverLocker extends AbstractExtensibleLockProviderIntegrationTest {

    /** The provider under test, shared by the cases of one backend's class. */
    abstract LockerLockProvider provider();

    @Override
    protected ExtensibleLockProvider getLockProvider() {
        return provider();
    }

    @Override
    protected void assertLocked(String lockName) {
        LockerLockProvider p = provider();
        assertTrue(p.locker().holder(p.lockOf(lockName)).isPresent(), () -> lockName + " should be held");
    }

    @Override
    protected void assertUnlocked(String lockName) {
        LockerLockProvider p = provider();
        assertFalse(p.locker().holder(p.lockOf(lockName)).isPresent(),
                () -> lockName + " should be free, but was held ("
                        + p.locker().holder(p.lockOf(lockName)).map(String::valueOf).orElse("free again") + " now)");
    }
}
