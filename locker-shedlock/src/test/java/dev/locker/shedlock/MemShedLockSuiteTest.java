package dev.locker.shedlock;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** ShedLock's provider suite on {@code mem:} (wait-and-read-back over the in-JVM store, a 5 ms lockWait). */
class MemShedLockSuiteTest extends ShedLockSuiteOverLocker {

    private static LockerLockProvider provider;

    @BeforeAll
    static void open() {
        provider = LockerLockProvider.open("mem:shedlock-suite?lockWait=5ms");
    }

    @AfterAll
    static void close() {
        provider.close();
    }

    @Override
    LockerLockProvider provider() {
        return provider;
    }
}
