package dev.locker.engine;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockProbe;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockingException;
import dev.locker.api.TemporaryLockingException;
import dev.locker.api.TimeSource;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.Test;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The mediator's wake-up protocol: no release, retake, resize or takeover leaves a local waiter asleep. */
class MediatorWakeUpTest {

    /** Longer than any test runs: a waiter left asleep past its release outlasts the generous bound. */
    private static final long FOREVER = Duration.ofMinutes(10).toNanos();

    private static final long BOUND_SECONDS = 60;

    private static Hold hold(KeyColumn lock, Object tx) {
        return new Hold(lock, tx, System.nanoTime() + FOREVER, x -> { });
    }

    private static Future<?> waiter(ExecutorService pool, LocalLockMediator m, KeyColumn lock, CyclicBarrier start) {
        return waiter(pool, m, lock, start, new ArrayList<>());
    }

    /** A waiter that adds its thread to {@code threads} (to see it asleep) before it waits. */
    private static Future<?> waiter(ExecutorService pool, LocalLockMediator m, KeyColumn lock, CyclicBarrier start,
                                    List<Thread> threads) {
        return pool.submit(() -> {
            synchronized (threads) {
                threads.add(Thread.currentThread());
            }
            start.await();
            m.awaitRelease(lock, FOREVER);
            return null;
        });
    }

    /**
     * On every fourth iteration, lets the waiters fall asleep in wait() (TIMED_WAITING) before the release, so the
     * wake path itself is exercised, not only the race of registration with the release; other iterations race.
     */
    private static void maybeLetThemSleep(int iteration, List<Thread> threads) throws InterruptedException {
        if (iteration % 4 != 0) {
            return;
        }
        long giveUp = System.nanoTime() + TimeUnit.SECONDS.toNanos(5); // not an assertion: a bound on this helper
        while (System.nanoTime() - giveUp < 0) {
            boolean all = true;
            synchronized (threads) {
                for (Thread t : threads) {
                    all &= t.getState() == Thread.State.TIMED_WAITING;
                }
            }
            if (all) {
                return;
            }
            Thread.sleep(0, 100_000);
        }
    }

    private static int sleepers(LocalLockMediator m) throws Exception {
        VarHandle h = MethodHandles.privateLookupIn(LocalLockMediator.class, MethodHandles.lookup())
                .findVarHandle(LocalLockMediator.class, "sleepers", int.class);
        return (int) h.getVolatile(m);
    }

    /**
     * {@code n} distinct locks with one hashCode (KeyColumn's hash is 31 * hash(key) + hash(column), Arrays.hashCode):
     * each pair of key bytes is (0, 31) or (1, 0), which add the same to the hash. All fall in one bin of the map,
     * which treeifies beyond 8 entries once the table has 64 bins or more (it starts with 256).
     */
    static List<KeyColumn> colliding(int n) {
        int pairs = 32 - Integer.numberOfLeadingZeros(Math.max(1, n - 1));
        List<KeyColumn> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            byte[] key = new byte[2 * pairs];
            for (int p = 0; p < pairs; p++) {
                boolean one = (i >> p & 1) != 0;
                key[2 * p] = (byte) (one ? 1 : 0);
                key[2 * p + 1] = (byte) (one ? 0 : 31);
            }
            out.add(KeyColumn.of(key, new byte[]{'c'}));
        }
        return out;
    }

    /**
     * A transaction that waited locally for longer than the expiry wins the entry with a deadline counted from that win.
     * So the next transaction's take does not mark it lost while its claim is still being written.
     * Deterministic: a virtual clock, one thread; the probe, called just before the claim's write, runs another
     * transaction's writeLock at the moment the entry was won.
     */
    @Test
    void aHoldThatWonAfterALocalWaitIsNotTakenOverBeforeItsClaimIsWritten() {
        VirtualClock clock = new VirtualClock();
        InMemoryStore store = new InMemoryStore("mediator-deadline");
        KeyColumn lock = KeyColumn.of("k", "c");
        AtomicBoolean armed = new AtomicBoolean();
        AtomicReference<Object> intruder = new AtomicReference<>();
        AtomicReference<Locker> aRef = new AtomicReference<>();
        LockProbe probe = new LockProbe() {
            @Override
            public void before(Step step, KeyColumn l, String rid) {
                if (step == Step.WRITE && armed.compareAndSet(true, false)) {
                    // b has just won the entry after its local wait; its claim is about to be written
                    try {
                        aRef.get().writeLock(lock, "txC");
                        intruder.set("txC took the entry over");
                    } catch (RuntimeException e) {
                        intruder.set(e);
                    }
                }
            }
        };
        try (Locker a = ConsistentKeyLocker.builder(store).config(LockerConfig.builder().rid("a")
                .expiry(Duration.ofSeconds(100)).timeSource(clock).build()).build()) {
            aRef.set(a);
            try (Locker b = ConsistentKeyLocker.builder(store).config(LockerConfig.builder().rid("b")
                    .expiry(Duration.ofSeconds(10)).localWait(Duration.ofSeconds(300)).probe(probe)
                    .localArbitration(a.arbitration()).timeSource(clock).build()).build()) {
                a.writeLock(lock, "txA");
                a.checkLocks("txA");
                armed.set(true);
                Object bOutcome = "txB's writeLock returned";
                try {
                    b.writeLock(lock, "txB"); // waits locally (virtual time) until txA's entry passes its deadline
                } catch (LockingException e) {
                    bOutcome = e; // what the takeover does to txB after it won its wait
                }
                assertFalse(armed.get(), "b won the entry after its local wait and went to write its claim");
                assertInstanceOf(TemporaryLockingException.class, intruder.get(),
                        "txB won the entry an instant ago; another transaction must be refused (local contention), "
                                + "but it found txB's entry past the deadline read before txB's local wait: "
                                + intruder.get() + "; txB: " + bOutcome);
            }
        }
    }

    /**
     * ABA: the entry a waiter saw is released and a new hold (same lock, same transaction object, so equal in every
     * field) is taken at once, racing the waiter's registration. Hold has identity equality, so the waiter's
     * replace(lock, seen, seen) fails on the new hold, or it registered before and the release woke it; either way it
     * returns. A waiter that registered on the new hold is woken by its release.
     */
    @Test
    void aReleaseAndRetakeByAnEqualHoldNeverLeavesTheWaiterAsleep() throws Exception {
        LocalLockMediator m = LocalLockMediator.standalone("aba", TimeSource.system());
        KeyColumn lock = KeyColumn.of("aba", "c");
        Object tx = new Object();
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            for (int i = 0; i < 3_000; i++) {
                Hold first = hold(lock, tx);
                assertTrue(m.take(first));
                CyclicBarrier start = new CyclicBarrier(3);
                List<Thread> threads = new ArrayList<>();
                Future<?> w1 = waiter(pool, m, lock, start, threads);
                Future<?> w2 = waiter(pool, m, lock, start, threads);
                start.await();
                maybeLetThemSleep(i, threads);
                m.release(first);
                Hold second = hold(lock, tx);
                assertTrue(m.take(second), "the lock is free after the release");
                if (i % 2 == 0) {
                    Thread.yield();
                }
                m.release(second);
                w1.get(BOUND_SECONDS, TimeUnit.SECONDS);
                w2.get(BOUND_SECONDS, TimeUnit.SECONDS);
                assertEquals(0, m.size());
            }
        } finally {
            pool.shutdownNow();
        }
        assertEquals(0, sleepers(m));
    }

    /**
     * 64 locks with one hashCode share a treeified bin (TreeBin: one lock object for the whole bin, values replaced in
     * place); a waiter on one of them races its release while another thread takes and releases the bin's other
     * locks (each a write under the same bin lock, and tree restructurings).
     */
    @Test
    void aReleaseInATreeifiedBinNeverLeavesTheWaiterAsleep() throws Exception {
        LocalLockMediator m = LocalLockMediator.standalone("tree", TimeSource.system());
        List<KeyColumn> locks = colliding(64);
        assertEquals(1, locks.stream().mapToInt(KeyColumn::hashCode).distinct().count());
        ExecutorService pool = Executors.newFixedThreadPool(2);
        AtomicBoolean churn = new AtomicBoolean(true);
        try {
            for (KeyColumn l : locks.subList(1, 32)) { // residents keep the bin a tree
                assertTrue(m.take(hold(l, "resident")));
            }
            Future<?> churner = pool.submit(() -> { // inserts and removals in the same tree, under the same bin lock
                Object tx = new Object();
                while (churn.get()) {
                    KeyColumn l = locks.get(32 + ThreadLocalRandom.current().nextInt(32));
                    Hold h = hold(l, tx);
                    assertTrue(m.take(h));
                    m.release(h);
                }
                return null;
            });
            KeyColumn lock = locks.get(0);
            ExecutorService one = Executors.newSingleThreadExecutor();
            try {
                for (int i = 0; i < 3_000; i++) {
                    Hold h = hold(lock, "tx" + i);
                    assertTrue(m.take(h));
                    CyclicBarrier start = new CyclicBarrier(2);
                    List<Thread> threads = new ArrayList<>();
                    Future<?> w = waiter(one, m, lock, start, threads);
                    start.await();
                    maybeLetThemSleep(i, threads);
                    m.release(h);
                    w.get(BOUND_SECONDS, TimeUnit.SECONDS);
                }
            } finally {
                one.shutdownNow();
            }
            churn.set(false);
            churner.get(BOUND_SECONDS, TimeUnit.SECONDS);
        } finally {
            churn.set(false);
            pool.shutdownNow();
        }
        assertEquals(0, sleepers(m));
    }

    /**
     * The map resizes (from 256 bins, past 192 entries) while a waiter registers and its lock is released: the
     * waiter's replace and the release may each help the transfer and run on different tables.
     */
    @Test
    void aReleaseDuringAResizeNeverLeavesTheWaiterAsleep() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            for (int i = 0; i < 400; i++) {
                LocalLockMediator m = LocalLockMediator.standalone("resize", TimeSource.system());
                KeyColumn lock = KeyColumn.of("resize", "c");
                Hold h = hold(lock, "holder");
                assertTrue(m.take(h));
                CyclicBarrier start = new CyclicBarrier(3);
                List<Thread> threads = new ArrayList<>();
                Future<?> w = waiter(pool, m, lock, start, threads);
                Future<?> filler = pool.submit(() -> {
                    start.await();
                    for (int k = 0; k < 800; k++) {
                        m.take(hold(KeyColumn.of("fill-" + k, "c"), "filler"));
                    }
                    return null;
                });
                start.await();
                maybeLetThemSleep(i, threads);
                m.release(h);
                w.get(BOUND_SECONDS, TimeUnit.SECONDS);
                filler.get(BOUND_SECONDS, TimeUnit.SECONDS);
                assertEquals(800, m.size());
                assertEquals(0, sleepers(m));
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * A waiter that is interrupted, or times out, leaves the count of sleepers as it found it (else every later release
     * would take its hold's monitor for nothing), and a waiter that stays is still woken by the release.
     */
    @Test
    void interruptedAndTimedOutWaitersLeaveNoSleeperBehindAndDoNotStealTheWake() throws Exception {
        LocalLockMediator m = LocalLockMediator.standalone("intr", TimeSource.system());
        KeyColumn lock = KeyColumn.of("intr", "c");
        ExecutorService pool = Executors.newFixedThreadPool(3);
        try {
            for (int i = 0; i < 1_000; i++) {
                Hold h = hold(lock, "tx" + i);
                assertTrue(m.take(h));
                AtomicReference<Thread> victim = new AtomicReference<>();
                CountDownLatch victimIn = new CountDownLatch(1);
                Future<?> interrupted = pool.submit(() -> {
                    victim.set(Thread.currentThread());
                    victimIn.countDown();
                    try {
                        m.awaitRelease(lock, FOREVER);
                    } catch (InterruptedException expected) {
                        // left early: fine
                    }
                    return null;
                });
                Future<?> timedOut = pool.submit(() -> {
                    m.awaitRelease(lock, 1_000); // 1 us
                    return null;
                });
                CyclicBarrier start = new CyclicBarrier(2);
                Future<?> stays = waiter(pool, m, lock, start);
                start.await();
                victimIn.await();
                victim.get().interrupt();
                timedOut.get(BOUND_SECONDS, TimeUnit.SECONDS);
                interrupted.get(BOUND_SECONDS, TimeUnit.SECONDS);
                m.release(h);
                stays.get(BOUND_SECONDS, TimeUnit.SECONDS);
                assertEquals(0, sleepers(m), "every waiter counted itself out");
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * The hold's monitor serves both the listeners (taken by a takeover's lost sink) and the waiters. A waiter holds it
     * across its replace, and nothing takes a hold's monitor inside a map operation, so the lock order has no cycle.
     * Here a takeover with listeners races waiters on the same hold.
     */
    @Test
    void takeoversWithListenersRacingWaitersNeitherDeadlockNorLeaveThemAsleep() throws Exception {
        LocalLockMediator m = LocalLockMediator.standalone("listen", TimeSource.system());
        KeyColumn lock = KeyColumn.of("listen", "c");
        ExecutorService pool = Executors.newFixedThreadPool(3);
        try {
            for (int i = 0; i < 2_000; i++) {
                AtomicReference<Hold> stalledRef = new AtomicReference<>();
                Hold stalled = new Hold(lock, "stalled" + i, System.nanoTime() - 1, x -> x.takeListeners(null));
                stalledRef.set(stalled);
                assertTrue(m.take(stalled));
                CyclicBarrier start = new CyclicBarrier(4);
                List<Thread> threads = new ArrayList<>();
                Future<?> w1 = waiter(pool, m, lock, start, threads);
                Future<?> w2 = waiter(pool, m, lock, start, threads);
                Future<?> listener = pool.submit(() -> {
                    start.await();
                    for (int k = 0; k < 20; k++) {
                        stalledRef.get().addListener(loss -> { });
                    }
                    return null;
                });
                start.await();
                maybeLetThemSleep(i, threads);
                Hold next = hold(lock, "next" + i);
                assertTrue(m.take(next), "a past-deadline entry is taken over");
                assertSame(Hold.Phase.LOST, stalled.state().phase());
                listener.get(BOUND_SECONDS, TimeUnit.SECONDS);
                m.release(next);
                w1.get(BOUND_SECONDS, TimeUnit.SECONDS);
                w2.get(BOUND_SECONDS, TimeUnit.SECONDS);
                assertEquals(0, m.size());
            }
        } finally {
            pool.shutdownNow();
        }
        assertEquals(0, sleepers(m));
    }
}
