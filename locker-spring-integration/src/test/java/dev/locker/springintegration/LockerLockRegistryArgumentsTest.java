package dev.locker.springintegration;

import dev.locker.api.Locker;
import dev.locker.api.Lockers;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Bad arguments to the registry and its builder get a clear error before any lock is taken. */
class LockerLockRegistryArgumentsTest {

    private static Locker locker;

    @BeforeAll
    static void open() {
        locker = Lockers.open("mem:spring-integration-arguments?lockWait=5ms");
    }

    @AfterAll
    static void close() {
        locker.close();
    }

    @Test
    void aKeyThatIsNotAStringIsRefused() {
        LockerLockRegistry registry = new LockerLockRegistry(locker);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> registry.obtain(42));
        assertTrue(e.getMessage().contains("java.lang.Integer"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> registry.obtain(null));
    }

    @Test
    void aKeyThatCannotBeEncodedIsRefused() {
        LockerLockRegistry registry = new LockerLockRegistry(locker);
        assertThrows(IllegalArgumentException.class, () -> registry.obtain("lone \ud800 surrogate"));
    }

    @Test
    void aNegativeAgeIsRefused() {
        LockerLockRegistry registry = new LockerLockRegistry(locker);
        assertThrows(IllegalArgumentException.class, () -> registry.expireUnusedOlderThan(-1));
    }

    @Test
    void aTtlThatIsNotPositiveIsRefused() {
        LockerLockRegistry registry = new LockerLockRegistry(locker);
        registry.obtain("k").lock();
        try {
            assertThrows(IllegalArgumentException.class, () -> registry.renewLock("k", Duration.ZERO));
            assertThrows(IllegalArgumentException.class, () -> registry.renewLock("k", null));
        } finally {
            registry.obtain("k").unlock();
        }
    }

    @Test
    void renewingOrFencingALockNeverObtainedIsRefused() {
        LockerLockRegistry registry = new LockerLockRegistry(locker);
        assertThrows(IllegalStateException.class, () -> registry.renewLock("never"));
        assertThrows(IllegalStateException.class, () -> registry.fencingToken("never"));
    }

    @Test
    void theBuilderRefusesAnExpiryThatIsNotPositiveAndAUriItCannotOpen() {
        assertThrows(IllegalArgumentException.class,
                () -> LockerLockRegistry.builder(locker).expireAfter(Duration.ofSeconds(-1)));
        assertThrows(IllegalArgumentException.class, () -> LockerLockRegistry.builder("nosuch://host"));
    }

    @Test
    void aRegistryOpenedFromAUriClosesItsLocker() {
        LockerLockRegistry registry = LockerLockRegistry.open("mem:spring-integration-owned?lockWait=5ms");
        registry.obtain("k").lock();
        registry.close();
        assertThrows(IllegalStateException.class, () -> registry.locker().holder(registry.lockOf("k")));
    }

    @Test
    void keysArePrefixed() {
        LockerLockRegistry registry = LockerLockRegistry.builder(locker).keyPrefix("orders:").build();
        assertEquals("orders:42", registry.lockOf("42").legible());
    }
}
