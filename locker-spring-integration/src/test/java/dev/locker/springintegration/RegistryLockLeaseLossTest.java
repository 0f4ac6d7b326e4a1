package dev.locker.springintegration;

import dev.locker.api.Locker;
import dev.locker.api.Lockers;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.TestInstance;

import java.time.Duration;
import java.util.ConcurrentModificationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What the holder of a registry lock may believe once its lease is gone: lost to its expiry, to its registry's close,
 * or left behind by a thread that ended. Two lockers on one {@code mem:} store stand for two processes.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class RegistryLockLeaseLossTest {

    private static final String URI = "mem:spring-integration-lease-loss?lockWait=5ms";
    private static final long PATIENCE_SECONDS = 60;

    private Locker lockerA;
    private Locker lockerB;

    @BeforeAll
    void open() {
        lockerA = Lockers.open(URI);
        lockerB = Lockers.open(URI);
    }

    @AfterAll
    void close() {
        lockerA.close();
        lockerB.close();
    }

    private static String prefix(TestInfo test) {
        return test.getTestMethod().orElseThrow().getName() + "/";
    }

    /** Whether the current thread got the lock: true from tryLock; false, or any failure, is "not granted". */
    private static boolean granted(Lock lock) {
        try {
            return lock.tryLock();
        } catch (RuntimeException e) {
            return false;
        }
    }

    private static Throwable failure(Runnable r) {
        try {
            r.run();
            return null;
        } catch (Throwable e) {
            return e;
        }
    }

    @Test
    void theOwnerCannotReenterALockWhoseLeaseExpiredAndWasTaken(TestInfo test) throws Exception {
        LockerLockRegistry a = LockerLockRegistry.builder(lockerA).keyPrefix(prefix(test))
                .keepAlive(false).expireAfter(Duration.ofMillis(300)).build();
        LockerLockRegistry b = LockerLockRegistry.builder(lockerB).keyPrefix(prefix(test)).build();
        Lock lost = a.obtain("k");
        lost.lock();
        Lock taker = b.obtain("k");
        assertTrue(taker.tryLock(PATIENCE_SECONDS, TimeUnit.SECONDS), "the expired lease's lock is taken");
        boolean reentered = false;
        try {
            reentered = granted(lost);
            assertFalse(reentered, "the owner re-entered a lock another process holds");
        } finally {
            if (reentered) {
                lost.unlock();
            }
            failure(lost::unlock); // reports the lost lease
            taker.unlock();
        }
    }

    @Test
    void theOwnerCannotReenterALockAfterItsRegistryClosed(TestInfo test) throws Exception {
        String uri = "mem:spring-integration-lease-loss-closed?lockWait=5ms";
        LockerLockRegistry a = LockerLockRegistry.builder(uri).keyPrefix(prefix(test)).build();
        try (Locker other = Lockers.open(uri)) {
            LockerLockRegistry b = LockerLockRegistry.builder(other).keyPrefix(prefix(test)).build();
            Lock held = a.obtain("k");
            held.lock();
            a.close();
            Lock taker = b.obtain("k");
            assertTrue(taker.tryLock(PATIENCE_SECONDS, TimeUnit.SECONDS), "the closed registry's lease was released");
            Throwable relock = failure(held::lock);
            try {
                assertNotNull(relock, "lock() returned while another process holds the lock");
            } finally {
                if (relock == null) {
                    held.unlock();
                }
                failure(held::unlock);
                taker.unlock();
            }
        }
    }

    @Test
    @Disabled("not done, a stated limit (LockerLockRegistry, 'Expiry and renewal'): as with a ReentrantLock, a lock "
            + "whose owning thread ended without unlocking stays held, its lease kept alive until the registry closes")
    void aLockWhoseOwningThreadEndedIsFreedAtItsExpiry(TestInfo test) throws Exception {
        LockerLockRegistry a = LockerLockRegistry.builder(lockerA).keyPrefix(prefix(test))
                .expireAfter(Duration.ofMillis(600)).build();
        LockerLockRegistry b = LockerLockRegistry.builder(lockerB).keyPrefix(prefix(test)).build();
        Thread owner = new Thread(() -> a.obtain("k").lock(), "owner-that-forgets-to-unlock");
        owner.start();
        owner.join(TimeUnit.SECONDS.toMillis(PATIENCE_SECONDS));
        assertFalse(owner.isAlive());
        Lock wanted = b.obtain("k");
        boolean got = CompletableFuture.supplyAsync(() -> {
            try {
                boolean g = wanted.tryLock(10, TimeUnit.SECONDS); // many times the expiry
                if (g) {
                    wanted.unlock();
                }
                return g;
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        }).get(PATIENCE_SECONDS, TimeUnit.SECONDS);
        assertTrue(got, "the dead thread's lease is still renewed");
    }
    /**
     * The owner holds its lock twice and the lease expires. Unlocking the inner hold is no re-entry: it gives up one
     * hold quietly, and the last unlock reports the loss as documented (ConcurrentModificationException).
     */
    @Test
    void anInnerUnlockAfterTheLeaseExpiredGivesUpOneHoldAndTheLastUnlockReportsTheLoss(TestInfo test)
            throws Exception {
        LockerLockRegistry a = LockerLockRegistry.builder(lockerA).keyPrefix(prefix(test))
                .keepAlive(false).expireAfter(Duration.ofMillis(300)).build();
        Lock lock = a.obtain("k");
        lock.lock();
        lock.lock();
        Thread.sleep(1_000); // the lease's deadline passes: it is no longer valid
        Throwable inner = failure(lock::unlock);
        Throwable outer = failure(lock::unlock);
        assertNull(inner, "the inner unlock gave up its hold, yet threw");
        assertInstanceOf(ConcurrentModificationException.class, outer, "the last unlock after the loss");
        LockerLockRegistry b = LockerLockRegistry.builder(lockerB).keyPrefix(prefix(test)).build();
        assertTrue(CompletableFuture.supplyAsync(() -> granted(b.obtain("k"))).get(PATIENCE_SECONDS, TimeUnit.SECONDS));
    }
}
