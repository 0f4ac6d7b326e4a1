package dev.locker.springintegration;

import dev.locker.api.Locker;
import dev.locker.api.Lockers;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.TestInstance;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.ConcurrentModificationException;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Lock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The Lock semantics of Spring's own registries, kept by {@link LockerLockRegistry} on one backend.
 *
 * <p>Two lockers open the backend's URI, as two processes would; each case takes registries over them. Every case
 * uses keys of its own, so the lockers are shared by the cases of a class. Waits have generous bounds only so that a
 * broken case fails instead of hanging; no case asserts how long anything took.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class LockRegistrySuite {

    /** How long a case waits for something that must happen; it fails rather than hangs past it. */
    static final long PATIENCE_SECONDS = 60;

    private Locker lockerA;
    private Locker lockerB;

    /** Starts the backend (or finds it) and gives the URI of a locker on it. */
    abstract String startBackend();

    /** Stops what {@link #startBackend()} started. */
    abstract void stopBackend();

    /**
     * Whether an interrupt reaches a waiter at any point of its wait on the backend, a backend call included.
     * A backend whose client clears an interrupt during a call answers false, and skips that case.
     */
    boolean interruptsReachEveryBackendCall() {
        return true;
    }

    /** Whether the cases that sleep through several seconds of expiry run here; a slow backend may run them once elsewhere. */
    boolean waitsOutLongExpiries() {
        return true;
    }

    @BeforeAll
    void openLockers() {
        String uri = startBackend();
        lockerA = Lockers.open(uri);
        lockerB = Lockers.open(uri);
    }

    @AfterAll
    void closeLockers() {
        try {
            if (lockerA != null) {
                lockerA.close();
            }
            if (lockerB != null) {
                lockerB.close();
            }
        } finally {
            stopBackend();
        }
    }

    /** A registry in "process" A, with keys of this case only. */
    LockerLockRegistry.Builder inA(TestInfo test) {
        return LockerLockRegistry.builder(lockerA).keyPrefix(prefix(test));
    }

    /** A registry in "process" B, with the same keys as {@link #inA}. */
    LockerLockRegistry.Builder inB(TestInfo test) {
        return LockerLockRegistry.builder(lockerB).keyPrefix(prefix(test));
    }

    private String prefix(TestInfo test) {
        return getClass().getSimpleName() + "/" + test.getTestMethod().orElseThrow().getName() + "/";
    }

    private static boolean heldOnTheBackend(LockerLockRegistry registry, String key) {
        return registry.locker().holder(registry.lockOf(key)).isPresent();
    }

    @Test
    void aLockedKeyIsHeldOnTheBackendUntilItIsUnlocked(TestInfo test) {
        LockerLockRegistry registry = inA(test).build();
        Lock lock = registry.obtain("k");
        lock.lock();
        assertTrue(heldOnTheBackend(registry, "k"));
        lock.unlock();
        assertFalse(heldOnTheBackend(registry, "k"));
    }

    @Test
    void obtainGivesTheSameLockForTheSameKey(TestInfo test) {
        LockerLockRegistry registry = inA(test).build();
        assertSame(registry.obtain("k"), registry.obtain("k"));
        assertNotSame(registry.obtain("k"), registry.obtain("other"));
    }

    @Test
    void theOwnerLocksAgainAndOneLeaseServesEveryHold(TestInfo test) throws Exception {
        LockerLockRegistry a = inA(test).build();
        LockerLockRegistry b = inB(test).build();
        Lock lock = a.obtain("k");
        lock.lock();
        long token = a.fencingToken("k");
        assertTrue(lock.tryLock());
        lock.lockInterruptibly();
        assertTrue(lock.tryLock(1, TimeUnit.SECONDS));
        assertEquals(token, a.fencingToken("k"), "a reentrant hold takes no new lease");

        lock.unlock();
        lock.unlock();
        lock.unlock();
        assertTrue(heldOnTheBackend(a, "k"), "one hold is left");
        assertFalse(b.obtain("k").tryLock());
        lock.unlock();
        assertFalse(heldOnTheBackend(a, "k"));
        assertTrue(b.obtain("k").tryLock());
        b.obtain("k").unlock();
    }

    @Test
    void threadsOfTwoRegistriesNeverHoldTheLockTogether(TestInfo test) throws Exception {
        LockerLockRegistry a = inA(test).build();
        LockerLockRegistry b = inB(test).build();
        int threads = 4;
        int rounds = 5;
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger overlaps = new AtomicInteger();
        AtomicInteger entries = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> done = new ArrayList<>();
            CountDownLatch start = new CountDownLatch(1);
            for (int t = 0; t < threads; t++) {
                Lock lock = (t % 2 == 0 ? a : b).obtain("k");
                done.add(pool.submit(() -> {
                    start.await();
                    for (int r = 0; r < rounds; r++) {
                        lock.lock();
                        try {
                            if (inside.incrementAndGet() > 1) {
                                overlaps.incrementAndGet();
                            }
                            entries.incrementAndGet();
                            Thread.yield();
                            inside.decrementAndGet();
                        } finally {
                            lock.unlock();
                        }
                    }
                    return null;
                }));
            }
            start.countDown();
            for (Future<?> f : done) {
                f.get(PATIENCE_SECONDS, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        assertEquals(0, overlaps.get(), "two holders at once");
        assertEquals(threads * rounds, entries.get());
        assertFalse(heldOnTheBackend(a, "k"));
    }

    @Test
    void tryLockGivesUpWhileAnotherProcessHoldsTheLockAndSucceedsAfterItsRelease(TestInfo test) throws Exception {
        LockerLockRegistry a = inA(test).build();
        LockerLockRegistry b = inB(test).build();
        Lock held = a.obtain("k");
        held.lock();
        Lock wanted = b.obtain("k");
        assertFalse(wanted.tryLock());
        assertFalse(wanted.tryLock(100, TimeUnit.MILLISECONDS));
        held.unlock();
        assertTrue(wanted.tryLock(PATIENCE_SECONDS, TimeUnit.SECONDS));
        assertTrue(heldOnTheBackend(b, "k"));
        wanted.unlock();
    }

    @Test
    void tryLockGivesUpWhileAnotherThreadOfTheRegistryHoldsTheLock(TestInfo test) throws Exception {
        LockerLockRegistry a = inA(test).build();
        Lock lock = a.obtain("k");
        lock.lock();
        try {
            CompletableFuture<Boolean> other = CompletableFuture.supplyAsync(() -> {
                try {
                    return lock.tryLock(100, TimeUnit.MILLISECONDS) || lock.tryLock();
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            assertFalse(other.get(PATIENCE_SECONDS, TimeUnit.SECONDS));
        } finally {
            lock.unlock();
        }
    }

    @Test
    void aWaiterOfAnotherProcessWakesWhenTheHolderUnlocks(TestInfo test) throws Exception {
        LockerLockRegistry a = inA(test).build();
        LockerLockRegistry b = inB(test).build();
        Lock held = a.obtain("k");
        held.lock();
        AtomicReference<Thread> waiter = new AtomicReference<>();
        CompletableFuture<Long> granted = CompletableFuture.supplyAsync(() -> {
            waiter.set(Thread.currentThread());
            Lock lock = b.obtain("k");
            lock.lock();
            try {
                return b.fencingToken("k");
            } finally {
                lock.unlock();
            }
        });
        awaitWaiting(waiter);
        assertFalse(granted.isDone());
        long first = a.fencingToken("k");
        held.unlock();
        long next = granted.get(PATIENCE_SECONDS, TimeUnit.SECONDS);
        assertTrue(next > first, "the next holder's token " + next + " is above " + first);
    }

    @Test
    void lockInterruptiblyStopsWaitingOnTheBackendWhenInterrupted(TestInfo test) throws Exception {
        assumeTrue(interruptsReachEveryBackendCall(), "this backend's client clears an interrupt during a call");
        LockerLockRegistry a = inA(test).build();
        LockerLockRegistry b = inB(test).build();
        Lock held = a.obtain("k");
        held.lock();
        try {
            assertInterruptedWhileWaiting(b.obtain("k"));
        } finally {
            held.unlock();
        }
        Lock lock = b.obtain("k");
        assertTrue(lock.tryLock(PATIENCE_SECONDS, TimeUnit.SECONDS), "the interrupted waiter left nothing behind");
        lock.unlock();
    }

    @Test
    void lockInterruptiblyStopsWaitingForAnotherThreadWhenInterrupted(TestInfo test) throws Exception {
        LockerLockRegistry a = inA(test).build();
        Lock lock = a.obtain("k");
        lock.lock();
        try {
            assertInterruptedWhileWaiting(lock);
        } finally {
            lock.unlock();
        }
        assertFalse(heldOnTheBackend(a, "k"));
    }

    private static void assertInterruptedWhileWaiting(Lock lock) throws Exception {
        AtomicReference<Thread> waiter = new AtomicReference<>();
        CompletableFuture<Throwable> outcome = CompletableFuture.supplyAsync(() -> {
            waiter.set(Thread.currentThread());
            try {
                lock.lockInterruptibly();
                lock.unlock();
                return null;
            } catch (Throwable e) {
                return e;
            }
        });
        awaitWaiting(waiter);
        waiter.get().interrupt();
        assertInstanceOf(InterruptedException.class, outcome.get(PATIENCE_SECONDS, TimeUnit.SECONDS));
    }

    /** Waits until {@code thread} is parked or sleeping: blocked in a wait for the lock. */
    private static void awaitWaiting(AtomicReference<Thread> thread) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(PATIENCE_SECONDS);
        while (thread.get() == null || !waiting(thread.get().getState())) {
            assertTrue(System.nanoTime() < deadline, "the waiter never waited");
            Thread.sleep(5);
        }
    }

    private static boolean waiting(Thread.State state) {
        return state == Thread.State.WAITING || state == Thread.State.TIMED_WAITING;
    }

    @Test
    void onlyTheOwningThreadMayUnlockOrRenew(TestInfo test) throws Exception {
        LockerLockRegistry a = inA(test).build();
        Lock lock = a.obtain("k");
        lock.lock();
        try {
            Throwable unlock = CompletableFuture.supplyAsync(() -> failure(lock::unlock)).get();
            assertInstanceOf(IllegalStateException.class, unlock);
            Throwable renew = CompletableFuture.supplyAsync(() -> failure(() -> a.renewLock("k"))).get();
            assertInstanceOf(IllegalStateException.class, renew);
            assertTrue(heldOnTheBackend(a, "k"), "a refused unlock leaves the lock held");
        } finally {
            lock.unlock();
        }
        assertThrows(IllegalStateException.class, lock::unlock, "a lock no longer held");
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
    void unlockReportsALeaseThatExpiredAndWasTaken(TestInfo test) throws Exception {
        LockerLockRegistry a = inA(test).keepAlive(false).expireAfter(Duration.ofMillis(500)).build();
        LockerLockRegistry b = inB(test).build();
        Lock lost = a.obtain("k");
        lost.lock();
        Lock taker = b.obtain("k");
        assertTrue(taker.tryLock(PATIENCE_SECONDS, TimeUnit.SECONDS), "the expired lease's lock is taken");
        try {
            assertThrows(IllegalStateException.class, () -> a.renewLock("k"));
            assertThrows(ConcurrentModificationException.class, lost::unlock);
            assertFalse(lost.tryLock(), "the lock is still the taker's");
        } finally {
            taker.unlock();
        }
        assertTrue(lost.tryLock(), "the failed unlock gave the lock back in this process");
        lost.unlock();
    }

    /** The claim's expiry as the backend keeps it; wall-clock instants, compared only with each other. */
    private static Instant expiresAt(LockerLockRegistry registry, String key) {
        return registry.locker().holding(registry.lockOf(key)).orElseThrow().expiresAt();
    }

    @Test
    void renewLockMovesTheClaimsExpiryLaterAndKeepsItsToken(TestInfo test) throws Exception {
        LockerLockRegistry a = inA(test).keepAlive(false).expireAfter(Duration.ofSeconds(30)).build();
        LockerLockRegistry b = inB(test).build();
        Lock lock = a.obtain("k");
        lock.lock();
        long token = a.fencingToken("k");
        Instant first = expiresAt(a, "k");
        Thread.sleep(200); // the backends keep expiries in milliseconds: let a few pass
        a.renewLock("k");
        assertTrue(expiresAt(a, "k").isAfter(first), "the renewal moved the claim's expiry");
        assertEquals(token, a.fencingToken("k"), "a renewal keeps the token");
        assertFalse(b.obtain("k").tryLock(), "the renewed lease still holds the lock");
        lock.unlock();
    }

    @Test
    void renewLockForALongerTtlKeepsTheClaimPastItsFirstExpiry(TestInfo test) {
        Duration expiry = Duration.ofSeconds(10);
        LockerLockRegistry a = inA(test).keepAlive(false).expireAfter(expiry).build();
        LockerLockRegistry b = inB(test).build();
        Lock lock = a.obtain("k");
        lock.lock();
        Instant first = expiresAt(a, "k");
        a.renewLock("k", Duration.ofMinutes(5));
        Instant renewed = expiresAt(a, "k");
        assertTrue(renewed.isAfter(first.plus(Duration.ofMinutes(4))), "expiry " + renewed + " after " + first);
        assertFalse(b.obtain("k").tryLock(), "the renewed lease still holds the lock");
        lock.unlock();
        assertTrue(b.obtain("k").tryLock());
        b.obtain("k").unlock();
    }

    @Test
    void aKeptAliveLeaseIsRenewedWithoutRenewLock(TestInfo test) throws Exception {
        assumeTrue(waitsOutLongExpiries(), "sleeps through a third of an expiry: run on the faster backends");
        // renewed every third of the expiry; the expiry leaves room for a holder's validity to be shortened
        Duration expiry = Duration.ofSeconds(12);
        LockerLockRegistry a = inA(test).expireAfter(expiry).build();
        LockerLockRegistry b = inB(test).build();
        Lock lock = a.obtain("k");
        lock.lock();
        Instant first = expiresAt(a, "k");
        Thread.sleep(expiry.toMillis() * 5 / 12);
        assertTrue(expiresAt(a, "k").isAfter(first), "the keep-alive moved the claim's expiry");
        assertFalse(b.obtain("k").tryLock(), "the kept-alive lease still holds the lock");
        lock.unlock();
    }

    @Test
    void expireUnusedForgetsOnlyLocksNoThreadHolds(TestInfo test) {
        LockerLockRegistry a = inA(test).build();
        Lock held = a.obtain("held");
        Lock idle = a.obtain("idle");
        held.lock();
        try {
            a.expireUnusedOlderThan(TimeUnit.HOURS.toMillis(1));
            assertSame(idle, a.obtain("idle"), "used within the hour");
            a.expireUnusedOlderThan(0);
            assertSame(held, a.obtain("held"), "a held lock is kept");
            assertNotSame(idle, a.obtain("idle"), "an unused lock is forgotten");
        } finally {
            held.unlock();
        }
    }

    @Test
    void executeLockedRunsTheTaskUnderTheLock(TestInfo test) throws Exception {
        LockerLockRegistry a = inA(test).build();
        boolean heldInside = a.executeLocked("k", () -> heldOnTheBackend(a, "k"));
        assertTrue(heldInside);
        assertFalse(heldOnTheBackend(a, "k"));
        Duration wait = Duration.ofSeconds(PATIENCE_SECONDS);
        assertEquals("done", a.executeLocked("k", wait, () -> "done"));
    }

    @Test
    void conditionsAreNotSupported(TestInfo test) {
        LockerLockRegistry a = inA(test).build();
        assertThrows(UnsupportedOperationException.class, () -> a.obtain("k").newCondition());
    }
}
