package dev.locker.local;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.api.Lease;
import dev.locker.api.LockLost;
import dev.locker.api.LockProbe;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.TemporaryLockingException;
import dev.locker.api.TimeSource;
import dev.locker.testkit.FaultyStore;
import dev.locker.testkit.Interleavings;
import dev.locker.testkit.Pause;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.reflect.Field;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Second adversarial review (keep-alive, the lost signal, the step guard). Each test replays one interleaving; each
 * failed on the code as reviewed and passes since the fixes (the step guard's allowance capped, a loss never dropped
 * at close, release waiting for a step in flight, renewals scheduled from the remaining validity, keep-alive never
 * blocking on a busy hold nor dying on a hold being written, the watchdog's conditional loss). The javadoc of each
 * gives the interleaving and the property it broke. Tests marked
 * "real clock" need the keep-alive's own (real-time) scheduler to act; their margins are hundreds of milliseconds.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SecondReviewTest {

    private final VirtualClock clock = new VirtualClock();
    private final InMemoryStore shared = new InMemoryStore("review2");
    private final ExecutorService pool = Executors.newCachedThreadPool();
    private final List<Locker> lockers = new ArrayList<>();
    private final KeyColumn lock = KeyColumn.of("vertex:42", "name");

    @AfterEach
    void tearDown() {
        pool.shutdownNow();
        lockers.forEach(Locker::close);
    }

    private Locker locker(KeyColumnValueStore store, LockerConfig config) {
        Locker l = ConsistentKeyLocker.builder(store).config(config).build();
        lockers.add(l);
        return l;
    }

    private LockerConfig.Builder config(String rid, Duration expiry, Duration lockWait, TimeSource time) {
        return LockerConfig.builder().rid(rid).expiry(expiry).lockWait(lockWait).timeSource(time);
    }

    private <T> Future<T> async(java.util.concurrent.Callable<T> c) {
        return pool.submit(c);
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /**
     * The one hold of the locker (reflection: the test plays a thread preempted while it holds the hold's monitor). A
     * single-lock lease's hold is its own transaction: it is found as its lock's mediator entry.
     */
    @SuppressWarnings("unchecked")
    private static Hold onlyHold(Locker l) throws Exception {
        Field m = AbstractLocker.class.getDeclaredField("mediator");
        m.setAccessible(true);
        Field sink = AbstractLocker.class.getDeclaredField("lostSink");
        sink.setAccessible(true);
        java.util.function.Consumer<Hold> ours = (java.util.function.Consumer<Hold>) sink.get(l);
        List<Hold> found = new java.util.ArrayList<>();
        ((LocalLockMediator) m.get(l)).forEachHold(h -> {
            if (h.reportsTo(ours)) {
                found.add(h);
            }
        });
        assertEquals(1, found.size());
        return found.get(0);
    }

    // =================================================================================================================
    // N1 (SAFETY, two holders): the forward-step guard's tolerance grows with the time since the locker's last reading
    // (1000 ppm of it), so a locker that was idle for an hour does not see a 3 s step of the shared wall clock.
    // =================================================================================================================

    /**
     * E = 30 s, lockWait = 100 ms. C's locker is built, then idle for one hour (a job that locks once an hour). A takes
     * the lock at T (store expiry T + 30 s, A's monotonic deadline T + 29.6 s). At T + 27.5 s the host's wall clock is
     * stepped forward by 3 s (NTP step after a VM resume; all lockers on the host see it, so they still agree).
     * C's step guard compares wall and monotonic progress since its last reading, one hour ago, and allows
     * 50 ms + 1000 ppm x 1 h = 3.65 s for slewing: the 3 s step is not seen. C judges A's claim dead (wall T + 30.6 s),
     * scrubs it and holds; A believes it holds for 2 more seconds. The same step 1 s after C's previous reading is
     * caught (that is the R7 test).
     */
    @Test
    void n1_anIdleLockerMissesAForwardStepAndTakesALiveLock() {
        Locker c = locker(shared, config("c", Duration.ofSeconds(30), Duration.ofMillis(100), clock).build());
        clock.advance(Duration.ofHours(1)); // c is idle: no reading of its step guard since it was built
        Locker a = locker(shared, config("a", Duration.ofSeconds(30), Duration.ofMillis(100), clock).build());
        Object ta = new Object();
        long tokenA = Interleavings.take(a, lock, ta);
        clock.advance(Duration.ofMillis(27_400)); // T + 27.5 s: A has 2.1 s left
        clock.stepWallClock(Duration.ofSeconds(3));
        Object tc = new Object();
        long tokenC;
        try {
            tokenC = Interleavings.take(c, lock, tc);
        } catch (TemporaryLockingException refused) {
            return; // correct: A still holds
        }
        assertFalse(Interleavings.believesItHolds(a, lock, ta, clock) && Interleavings.believesItHolds(c, lock, tc, clock),
                "TWO HOLDERS: A (token " + tokenA + ", " + Duration.ofNanos(a.status(lock, ta).orElseThrow()
                        .deadlineNanos() - clock.nanoTime()) + " left) and C (token " + tokenC + "), after a 3 s "
                        + "forward step that C's idle step guard took for slewing");
    }

    // =================================================================================================================
    // N2 (LIVENESS, a healthy lease declared lost): keep-alive schedules the first renewal a third of the expiry after
    // acquire, but a wait-and-read-back lease has only (expiry - lockWait) x 0.99 - lockWait left by then.
    // =================================================================================================================

    /**
     * Real clock. lockWait = 1 s, expiry = 3 s (the builder accepts it; its message advises "an expiry above about
     * 2 x lockWait"). Claim written at 0; deadline 0.99 x 2 s = 1.98 s; acquire returns at ~1.0 s (after the
     * read-back); keep-alive's first renewal is due 1 s later, at ~2.0 s; the watchdog (margin 0.3 s) fires at 1.68 s
     * and declares the lease lost. Without the watchdog the lease would have expired at 1.98 s anyway: no renewal can
     * come in time. Healthy store, nobody else around. Any expiry below ~3.6 x lockWait is affected.
     */
    @Test
    void n2_keepAliveRenewsAWaitAndReadBackLeaseTooLateTheFirstTime() {
        Locker a = locker(shared, config("a", Duration.ofSeconds(3), Duration.ofSeconds(1), TimeSource.system()).build());
        List<LockLost> told = new CopyOnWriteArrayList<>();
        try (Lease lease = a.acquire(lock, "job")) {
            lease.onLost(told::add);
            sleep(2_500);
            assertTrue(told.isEmpty() && lease.isValid(), "a kept-alive lease on a healthy store was lost 2.5 s "
                    + "after acquire (expiry 3 s, lockWait 1 s): " + told + ", valid: " + lease.isValid());
        }
    }

    // =================================================================================================================
    // N3 (LIVENESS): the keep-alive is ONE thread per locker and blocks on Hold.steps; a holder's own check stuck in
    // backend I/O on one lock starves the renewals of every other lease of the locker, which the watchdog then
    // declares lost.
    // =================================================================================================================

    /**
     * Real clock. expiry = 1.5 s, lockWait = 10 ms (renewals every 0.5 s, watchdog 0.15 s before the deadline).
     * Leases L1 (lock 1) and L2 (lock 2) from one locker. A worker calls L1.check(); its read is stuck (a store call
     * with a long client timeout: the test pauses it). L1's keep-alive tick blocks on L1's steps lock inside the
     * single keep-alive thread; L2's tick, queued behind it, never runs; L2 (a different row, healthy) is declared
     * lost at ~1.3 s.
     */
    @Test
    void n3_aStuckCheckOnOneLeaseStarvesTheRenewalsOfEveryOtherLease() {
        FaultyStore storeA = new FaultyStore(shared);
        Locker a = locker(storeA, config("a", Duration.ofMillis(1_500), Duration.ofMillis(10), TimeSource.system()).build());
        KeyColumn lock2 = KeyColumn.of("vertex:43", "name");
        Lease l1 = a.acquire(lock, "job 1");
        Lease l2 = a.acquire(lock2, "job 2");
        List<LockLost> told = new CopyOnWriteArrayList<>();
        l2.onLost(told::add);
        Pause stuckRead = storeA.pauseAt(FaultyStore.Op.READ, 0, false);
        pool.submit(() -> {
            l1.check();
            return null;
        });
        stuckRead.awaitArrival();
        try {
            sleep(2_500);
            assertTrue(told.isEmpty() && l2.isValid(), "lease 2 (healthy, another lock) was lost while lease 1's check "
                    + "was stuck: " + told);
        } finally {
            stuckRead.resume();
        }
    }

    // =================================================================================================================
    // N4 (LIVENESS): a keep-alive tick that meets a hold still being written (writeLock of another lock of the same
    // transaction) takes the IllegalStateException for "locker closed", cancels the task and leaves it registered:
    // keep-alive stops for the whole transaction, for good (keepAlive(tx, true) is then a no-op).
    // =================================================================================================================

    /**
     * Real clock, expiry 1.5 s, lockWait 10 ms. tx holds lock 1 (checked) with keep-alive on and a listener; it then
     * claims lock 2 (writeLock; its store write is slow: paused). The keep-alive tick renews lock 1, then meets lock 2's
     * hold with no status yet: requireLive throws IllegalStateException("still being written"), which Task.run takes
     * for a closed locker: cancelled = true, return, task left in the map. Lock 2's write completes; lock 1 is never
     * renewed again and is declared lost ~1.3 s later; calling keepAlive(tx, true) again does not help.
     */
    @Test
    void n4_aHoldBeingWrittenSilentlyKillsKeepAliveForTheTransaction() {
        FaultyStore storeA = new FaultyStore(shared);
        AtomicInteger renewals = new AtomicInteger();
        LockProbe countRenewals = new LockProbe() {
            @Override
            public void after(Step step, KeyColumn l, String rid, RuntimeException failure) {
                if (step == Step.RENEW && failure == null) {
                    renewals.incrementAndGet();
                }
            }
        };
        Locker a = locker(storeA, config("a", Duration.ofMillis(1_500), Duration.ofMillis(10), TimeSource.system())
                .probe(countRenewals).build());
        KeyColumn lock2 = KeyColumn.of("vertex:43", "name");
        Object tx = new Object();
        Interleavings.take(a, lock, tx);
        a.keepAlive(tx, true);
        List<LockLost> told = new CopyOnWriteArrayList<>();
        a.whenLost(lock, tx, told::add);

        Pause slowWrite = storeA.pauseAt(FaultyStore.Op.MUTATE, 0, false);
        Future<?> write2 = pool.submit(() -> {
            a.writeLock(lock2, tx);
            return null;
        });
        slowWrite.awaitArrival();
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (renewals.get() == 0 && System.nanoTime() < until) {
            sleep(10); // the first tick (0.5 s after keepAlive) renews lock 1, then meets lock 2's hold
        }
        sleep(100);
        slowWrite.resume();
        try {
            write2.get(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
        a.keepAlive(tx, true); // asking again does not restart it
        sleep(2_000);
        assertTrue(told.isEmpty(), "keep-alive stopped for good after its tick met a hold being written (renewals "
                + "done: " + renewals.get() + "); lock 1 was declared lost: " + told);
    }

    // =================================================================================================================
    // N5 (LISTENER NEVER TOLD): a loss detected by a thread concurrently with Locker.close: close shuts the notifier
    // down while the detecting thread is between marking the hold lost and handing its listeners over; the
    // hand-over is rejected and the listener is never called.
    // =================================================================================================================

    /**
     * A's lease has a listener. Another process force-releases the lock. A worker's check finds the claim gone: it
     * marks the hold LOST (CAS) and calls lost(hold), which needs the hold's monitor for takeListeners (the test holds
     * that monitor: the worker is preempted right there). Meanwhile the application closes A: close() finds the hold
     * already final (lose() returns at once), deletes, closes the KeepAlive (notifier shut down) and returns. The
     * worker resumes: takeListeners hands out the listener, tell() meets a shut-down notifier, catches the
     * RejectedExecutionException and logs at debug level. The listener is told zero times.
     */
    @Test
    void n5_aLossRacingLockerCloseIsNeverToldToItsListener() throws Exception {
        Locker a = locker(shared, config("a", Duration.ofSeconds(30), Duration.ofMillis(100), clock).build());
        Locker b = locker(shared, config("b", Duration.ofSeconds(30), Duration.ofMillis(100), clock).build());
        Lease lease = a.acquire(lock, "job");
        List<LockLost> told = new CopyOnWriteArrayList<>();
        lease.onLost(told::add);
        Hold hold = onlyHold(a);

        CountDownLatch monitorHeld = new CountDownLatch(1);
        CountDownLatch letGo = new CountDownLatch(1);
        Thread preempt = new Thread(() -> {
            synchronized (hold) {
                monitorHeld.countDown();
                try {
                    letGo.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        });
        preempt.start();
        monitorHeld.await();

        b.forceRelease(lock); // an operator, or the lock's row lost
        AtomicBoolean checkFailed = new AtomicBoolean();
        Thread worker = new Thread(() -> {
            try {
                lease.check();
            } catch (ExpiredLockException expected) {
                checkFailed.set(true);
            }
        });
        worker.start();
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (worker.getState() != Thread.State.BLOCKED && System.nanoTime() < until) {
            sleep(5);
        }
        assertEquals(Thread.State.BLOCKED, worker.getState(), "the worker is in lost(hold), waiting for the monitor");
        assertTrue(hold.state().isFinal());

        Thread closer = new Thread(a::close); // the application shuts down meanwhile (close waits for the check's step)
        closer.start();
        long closing = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (closer.getState() != Thread.State.WAITING && closer.isAlive() && System.nanoTime() < closing) {
            sleep(5);
        }
        letGo.countDown();
        closer.join(10_000);
        worker.join(10_000);
        preempt.join(10_000);
        assertTrue(checkFailed.get());
        sleep(1_000);
        assertEquals(1, told.size(), "the lease's lost listener must be told exactly once; told " + told.size()
                + " times (the loss was handed to a notifier that close() had shut down)");
    }

    // =================================================================================================================
    // N6 (KEEP-ALIVE RENEWS A RELEASED LEASE): Lease.close (deleteLocks) does not wait for a renewal in flight; on a
    // wait-and-read-back store the renewal's rewrite lands after the release's delete and re-creates the claim, with
    // its token. The next holder's check sees a live claim with another token and is told it lost the lock.
    // =================================================================================================================

    /**
     * Virtual clock (expiries never pass), expiry 300 ms so that the real-time keep-alive ticks every 100 ms.
     * <ol>
     *   <li>A's keep-alive tick renews A's lease: it reads A's row (claim live, confirm passes) and is paused just
     *       before its rewrite reaches the store;</li>
     *   <li>the application closes the lease: deleteLocks stops the keep-alive task (the run in flight goes on),
     *       deletes A's claim, frees the mediator and returns;</li>
     *   <li>B (another process) acquires: the row is empty, B writes token N+1 and holds;</li>
     *   <li>A's rewrite lands: A's claim is back, live for another expiry, with token N. A's renewal pauses at its
     *       confirm read;</li>
     *   <li>B checks its lease: confirm sees "another live claim holds token N" and B's lease is marked LOST
     *       (TAKEN_OVER). A then withdraws: the lock is free and nobody holds it.</li>
     * </ol>
     * If A's withdrawal cannot reach the store (the application closes its store connection after close(), or a
     * partition), the re-created claim also blocks the lock for a full expiry. (Should leaseA.close() wait for the
     * renewal in flight, as a fix makes it, the test lets the renewal finish first and then expects B to hold.)
     */
    @Test
    void n6_aKeepAliveRenewalInFlightReCreatesAReleasedClaimAndKillsTheNextHolder() throws Exception {
        Duration expiry = Duration.ofMillis(300);
        FaultyStore storeA = new FaultyStore(shared);
        Locker a = locker(storeA, config("a", expiry, Duration.ofMillis(10), clock).build());
        Locker b = locker(shared, config("b", expiry, Duration.ofMillis(10), clock).build());
        Lease leaseA = a.acquire(lock, "job A");
        Pause rewrite = storeA.pauseAt(FaultyStore.Op.MUTATE, 0, false);
        rewrite.awaitArrival(); // the keep-alive's renewal, ~100 ms (real) after acquire

        Future<?> closing = async(() -> {
            leaseA.close();
            return null;
        });
        boolean closeWaitedForTheRenewal = false;
        try {
            closing.get(1, TimeUnit.SECONDS);
        } catch (java.util.concurrent.TimeoutException waits) {
            closeWaitedForTheRenewal = true; // (a fixed release waits for the step in flight)
        }
        String bCheck;
        int mutationsAtClose;
        Lease leaseB;
        if (!closeWaitedForTheRenewal) {
            mutationsAtClose = storeA.mutations(); // leaseA.close() returned: A's claim is deleted
            leaseB = b.acquire(lock, "job B");
            Pause confirmRead = storeA.pauseAt(FaultyStore.Op.READ, 0, false);
            rewrite.resume();
            confirmRead.awaitArrival();
            try {
                leaseB.check();
                bCheck = "held";
            } catch (ExpiredLockException e) {
                bCheck = "LOST: " + e.getMessage();
            } finally {
                confirmRead.resume();
            }
        } else {
            rewrite.resume();
            closing.get(10, TimeUnit.SECONDS);
            mutationsAtClose = storeA.mutations();
            leaseB = b.acquire(lock, "job B");
            leaseB.check();
            bCheck = "held";
        }
        sleep(200);
        assertTrue(bCheck.equals("held") && leaseB.isValid() && storeA.mutations() == mutationsAtClose,
                "after leaseA.close() returned, A's keep-alive wrote to the store " + (storeA.mutations()
                        - mutationsAtClose) + " more time(s), re-creating the released claim; the next holder B's "
                        + "check said: " + bCheck);
    }

    // =================================================================================================================
    // N7 (LIVENESS, false loss): the watchdog judges a state, then marks whatever state is current lost: a renewal
    // that succeeds in between is overruled, although renew() returned normally.
    // =================================================================================================================

    /**
     * Virtual clock. A holds (E = 30 s, deadline 29.6 s, watchdog margin 3 s). At 26.7 s (renewals have failed or are
     * slow) the watchdog runs fire(): it reads the hold's state (deadline 29.6 s) and is preempted before comparing
     * (the test's clock parks the watchdog thread in nanoTime()). The holder's renew() succeeds: new deadline 56.3 s.
     * fire() resumes: 2.9 s left on the state it read, under the margin: hold.lose() marks the CURRENT (renewed) state
     * lost. renew() returned normally, yet the lease is invalid and the listener is told "no successful renewal";
     * the renewed claim stays in the store until the lease is closed.
     */
    @Test
    void n7_theWatchdogOverrulesARenewalThatSucceededWhileItJudged() throws Exception {
        TrapClock trap = new TrapClock(clock, "locker-deadline-watch");
        Locker a = locker(shared, config("a", Duration.ofSeconds(30), Duration.ofMillis(100), trap).build());
        Lease lease = a.acquire(lock, "job");
        clock.advance(Duration.ofMillis(26_600)); // now 26.7 s: 2.9 s before the deadline, inside the 3 s margin
        trap.arm();
        List<LockLost> told = new CopyOnWriteArrayList<>();
        lease.onLost(told::add); // (re)arms the watchdog: it fires at once
        trap.awaitParked();
        lease.renew(); // succeeds: the lease is good for another 29.6 s
        trap.release();
        sleep(500);
        assertTrue(lease.isValid() && told.isEmpty(), "renew() succeeded at 26.7 s (new deadline 56.3 s), yet the "
                + "watchdog then marked the lease lost: valid=" + lease.isValid() + ", told " + told);
    }

    /** A clock that parks one chosen thread (by name prefix) on its first nanoTime() after {@link #arm()}. */
    static final class TrapClock implements TimeSource {
        private final VirtualClock clock;
        private final String threadPrefix;
        private volatile boolean armed;
        private final CountDownLatch parked = new CountDownLatch(1);
        private final CountDownLatch released = new CountDownLatch(1);

        TrapClock(VirtualClock clock, String threadPrefix) {
            this.clock = clock;
            this.threadPrefix = threadPrefix;
        }

        void arm() {
            armed = true;
        }

        void awaitParked() throws InterruptedException {
            assertTrue(parked.await(30, TimeUnit.SECONDS), "the watchdog never ran");
        }

        void release() {
            released.countDown();
        }

        @Override
        public Instant now() {
            return clock.now();
        }

        @Override
        public long nanoTime() {
            long t = clock.nanoTime();
            if (armed && Thread.currentThread().getName().startsWith(threadPrefix)) {
                armed = false;
                parked.countDown();
                try {
                    released.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return t;
        }

        @Override
        public void sleep(Duration d) throws InterruptedException {
            clock.sleep(d);
        }
    }
}
