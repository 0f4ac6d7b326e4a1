package dev.locker.springintegration;

import dev.locker.api.Locker;
import dev.locker.api.Lockers;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.TestInstance;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.locks.Lock;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link LockerLockRegistry#expireUnusedOlderThan} against a thread that obtained a lock and is about to take it:
 * the lock it then holds must stay the registry's lock for its key, or the registry disowns its holder.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class RegistryExpireUnusedTest {

    private Locker locker;

    @BeforeAll
    void open() {
        locker = Lockers.open("mem:spring-integration-expire-unused?lockWait=5ms");
    }

    @AfterAll
    void close() {
        locker.close();
    }

    private LockerLockRegistry registry(TestInfo test) {
        return LockerLockRegistry.builder(locker).keyPrefix(test.getTestMethod().orElseThrow().getName() + "/")
                .keepAlive(false).build();
    }

    /** What a holder does with its lock through the registry: renew it, and take it again by its key. */
    private static void holderUsesItsLockByKey(LockerLockRegistry registry, Lock held) {
        try {
            assertDoesNotThrow(() -> registry.renewLock("k"), "the registry disowns the lock's holder");
            Lock again = registry.obtain("k");
            boolean reentered = again.tryLock();
            if (reentered) {
                again.unlock();
            }
            assertTrue(reentered, "the holder cannot re-enter its own lock by its key (lock() would wait on itself)");
        } finally {
            held.unlock();
        }
    }

    @Test
    void aLockObtainedWithinTheAgeIsKeptSoItsHolderCanRenewAndReenterIt(TestInfo test) throws Exception {
        LockerLockRegistry registry = registry(test);
        Lock first = registry.obtain("k");
        Thread.sleep(300);
        Lock lock = registry.obtain("k"); // a use: obtained now
        assertSame(first, lock);
        registry.expireUnusedOlderThan(200);
        assertSame(lock, registry.obtain("k"), "a lock obtained within the age was forgotten");
        lock.lock();
        holderUsesItsLockByKey(registry, lock);
    }

    @Test
    void aLockTakenWhileExpireUnusedRanStaysTheRegistrysLockForItsKey(TestInfo test) throws Exception {
        LockerLockRegistry registry = registry(test);
        CountDownLatch obtained = new CountDownLatch(1);
        CountDownLatch expired = new CountDownLatch(1);
        Thread housekeeper = new Thread(() -> {
            try {
                obtained.await();
                registry.expireUnusedOlderThan(0); // Spring's housekeeping, on its own thread
                expired.countDown();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "expire-unused");
        housekeeper.start();
        Lock lock = registry.obtain("k");
        obtained.countDown();
        expired.await(); // the interleaving: the housekeeper runs between obtain and lock()
        lock.lock();
        holderUsesItsLockByKey(registry, lock);
    }
}
