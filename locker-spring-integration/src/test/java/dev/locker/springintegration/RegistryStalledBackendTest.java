package dev.locker.springintegration;

import dev.locker.api.LockProbe;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.Lockers;
import dev.locker.testkit.Pause;
import dev.locker.testkit.StepPauses;
import org.junit.jupiter.api.Test;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A backend step of one lock held at a gate ({@link StepPauses}) holds up no caller of another lock of the registry,
 * and an interrupted owner neither keeps a claim at its unlock nor loses one at its lock().
 */
class RegistryStalledBackendTest {

    private static final long PATIENCE_SECONDS = 60;

    /** Another thread locks and unlocks "other", then housekeeps; it must finish while the gate is closed. */
    private static void anotherLockIsServed(LockerLockRegistry registry) throws Exception {
        String done = CompletableFuture.supplyAsync(() -> {
            Lock other = registry.obtain("other");
            other.lock();
            other.unlock();
            registry.expireUnusedOlderThan(0);
            return "done";
        }).get(PATIENCE_SECONDS, TimeUnit.SECONDS);
        assertEquals("done", done);
    }

    @Test
    void aStalledReleaseHoldsUpNoCallerOfAnotherLock() throws Exception {
        StepPauses gates = new StepPauses();
        try (Locker locker = Lockers.open("mem:spring-integration-stalled-release?lockWait=5ms",
                LockerConfig.builder().probe(gates).build())) {
            LockerLockRegistry registry = new LockerLockRegistry(locker);
            Lock stalled = registry.obtain("stalled");
            Pause release = gates.before(LockProbe.Step.RELEASE);
            CompletableFuture<Void> holder = CompletableFuture.runAsync(() -> {
                stalled.lock();
                stalled.unlock();
            });
            release.awaitArrival();
            try {
                anotherLockIsServed(registry);
                assertFalse(CompletableFuture.supplyAsync(stalled::tryLock).get(PATIENCE_SECONDS, TimeUnit.SECONDS),
                        "the lock whose release is under way is not free yet");
            } finally {
                release.resume();
            }
            holder.get(PATIENCE_SECONDS, TimeUnit.SECONDS);
            assertTrue(locker.holder(registry.lockOf("stalled")).isEmpty());
        }
    }

    @Test
    void aStalledClaimHoldsUpNoCallerOfAnotherLock() throws Exception {
        StepPauses gates = new StepPauses();
        try (Locker locker = Lockers.open("mem:spring-integration-stalled-claim?lockWait=5ms",
                LockerConfig.builder().probe(gates).build())) {
            LockerLockRegistry registry = new LockerLockRegistry(locker);
            Lock stalled = registry.obtain("stalled");
            Pause write = gates.before(LockProbe.Step.WRITE);
            CompletableFuture<Void> holder = CompletableFuture.runAsync(() -> {
                stalled.lock();
                stalled.unlock();
            });
            write.awaitArrival();
            try {
                anotherLockIsServed(registry);
            } finally {
                write.resume();
            }
            holder.get(PATIENCE_SECONDS, TimeUnit.SECONDS);
        }
    }

    @Test
    void anInterruptedOwnerReleasesItsClaimAtUnlockAndTakesTheLockAtLock() throws Exception {
        String uri = "mem:spring-integration-interrupted-owner?lockWait=5ms";
        try (Locker a = Lockers.open(uri); Locker b = Lockers.open(uri)) {
            LockerLockRegistry mine = new LockerLockRegistry(a);
            LockerLockRegistry theirs = new LockerLockRegistry(b);
            Lock lock = mine.obtain("k");
            lock.lock();
            Thread.currentThread().interrupt(); // a cancelled task unlocking in its finally block
            lock.unlock();
            assertTrue(Thread.interrupted(), "the unlock kept the interrupt");
            Lock other = theirs.obtain("k");
            assertTrue(other.tryLock(), "the interrupted owner's unlock released the claim");
            other.unlock();

            Thread.currentThread().interrupt();
            lock.lock(); // lock() ignores the interrupt and keeps it
            try {
                assertTrue(Thread.interrupted(), "lock() kept the interrupt");
                assertFalse(theirs.obtain("k").tryLock(), "the interrupted owner holds the lock");
            } finally {
                lock.unlock();
            }
        }
    }
}
