package dev.locker.engine;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockLost;
import dev.locker.api.LockProbe;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LossReason;
import dev.locker.api.TimeSource;
import dev.locker.spi.Entry;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.testkit.FaultyStore;
import dev.locker.testkit.Interleavings;
import dev.locker.testkit.Pause;
import dev.locker.testkit.StepPauses;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/** Keep-alive renews every healthy lease in time, whatever another lease, a throwing probe or a release does meanwhile. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class KeepAliveTest {

    private final List<Locker> lockers = new ArrayList<>();

    @AfterEach
    void tearDown() {
        pool.shutdownNow();
        lockers.forEach(Locker::close);
    }

    private static final Duration EXPIRY = Duration.ofSeconds(30);

    private static final Duration LOCK_WAIT = Duration.ofMillis(100);

    private final VirtualClock clock = new VirtualClock();

    private final InMemoryStore shared = new InMemoryStore("shared");

    private final ExecutorService pool = Executors.newCachedThreadPool();

    private final KeyColumn lock = KeyColumn.of("core", "c");

    private final KeyColumn x = KeyColumn.of("core", "x");

    private final KeyColumn y = KeyColumn.of("core", "y");

    private LockerConfig.Builder config(String rid) {
        return LockerConfig.builder().rid(rid).expiry(EXPIRY).lockWait(LOCK_WAIT).timeSource(clock);
    }

    private Locker locker(KeyColumnValueStore store, LockerConfig config) {
        Locker l = ConsistentKeyLocker.builder(store).config(config).build();
        lockers.add(l);
        return l;
    }

    private Locker locker(String rid) {
        return locker(shared, config(rid).build());
    }

    /** How many claims {@code lock}'s row holds (record and token columns, from 0xfe on, aside). */
    private long claims(KeyColumn l) {
        byte[] end = new byte[64];
        Arrays.fill(end, (byte) 0xff);
        List<Entry> row = shared.getSlice(l.encoded(), new byte[0], end, shared.beginTransaction());
        return row.stream().filter(e -> e.column().length == 0 || (e.column()[0] & 0xff) < 0xfe).count();
    }

    private <T> Future<T> async(Callable<T> c) {
        return pool.submit(c);
    }

    private static <T> T get(Future<T> f) throws Exception {
        try {
            return f.get(1, TimeUnit.MINUTES);
        } catch (ExecutionException e) {
            throw new AssertionError("the operation failed: " + e.getCause(), e.getCause());
        }
    }

    /** Waits (bounded, 10 s) until {@code list} has at least {@code n} elements; returns whether it has. */
    private static boolean awaitSize(List<?> list, int n) throws InterruptedException {
        for (int i = 0; i < 1000 && list.size() < n; i++) {
            Thread.sleep(10);
        }
        return list.size() >= n;
    }

    private LockerConfig.Builder config(String rid, Duration expiry, Duration lockWait, TimeSource time) {
        return LockerConfig.builder().rid(rid).expiry(expiry).lockWait(lockWait).timeSource(time);
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
     * A lease from {@code acquireAll} that lost one lock is invalid for good. Its keep-alive then stops renewing its other
     * claims, so a slow-to-close lease does not keep those locks from other processes.
     *
     * <p>Real clock (the keep-alive's scheduler runs on it): expiry 1.5 s, renewals every 0.5 s. The lease holds x and
     * y; another locker force-releases x; the next renewal finds x gone and tells the lease; y is not renewed again.
     */
    @Test
    void keepAliveStopsRenewingTheOtherLocksOfALostMultiLockLease() throws Exception {
        LockerConfig.Builder real = LockerConfig.builder().expiry(Duration.ofMillis(1_500)).lockWait(Duration.ofMillis(20))
                .timeSource(TimeSource.system());
        Locker a = locker(shared, real.rid("a").build());
        Locker operator = locker(shared, real.rid("op").build());
        Lease lease = a.acquireAll(List.of(x, y), "both"); // kept alive
        List<LockLost> told = new CopyOnWriteArrayList<>();
        lease.onLost(told::add);

        assertTrue(operator.forceRelease(x, "operator"));
        assertTrue(awaitSize(told, 1), "the lease learned that x was lost");
        assertFalse(lease.isValid(), "the lease is no longer valid");
        Instant afterLoss = operator.holding(y).orElseThrow().expiresAt();
        boolean renewedAgain = false;
        for (int i = 0; i < 300 && !renewedAgain; i++) { // bounded: 3 s, six renewal periods
            Thread.sleep(10);
            renewedAgain = operator.holding(y).map(h -> h.expiresAt().isAfter(afterLoss)).orElse(false);
        }
        assertFalse(renewedAgain, "after the lease lost x (and was told), its keep-alive renewed y again: "
                + operator.holding(y));
        lease.close();
    }

    /**
     * A renewal whose reply comes back after the holder's deadline never revives the lease, even though the store
     * accepted it: the lease is lost (told EXPIRED once), its renewed claim is withdrawn, and another process then
     * gets the lock with a higher fencing token.
     */
    @Test
    void aRenewalAnsweringAfterTheDeadlineNeverRevivesTheLease() throws Exception {
        StepPauses pauses = new StepPauses();
        Locker a = locker(shared, config("a").probe(pauses).build());
        Locker b = locker("b");
        Lease lease = a.acquire(lock, "job").keepAlive(false);
        long token = lease.fencingToken();
        List<LockLost> told = new CopyOnWriteArrayList<>();
        lease.onLost(told::add);
        Pause renewal = pauses.after(LockProbe.Step.RENEW);
        Future<?> renewing = async(() -> {
            lease.renew();
            return null;
        });
        renewal.awaitArrival(); // the store renewed the claim; the reply is late
        clock.advance(EXPIRY); // past the holder's deadline
        renewal.resume();
        try {
            renewing.get(1, TimeUnit.MINUTES);
            fail("a renewal answered after the deadline must fail");
        } catch (ExecutionException e) {
            assertTrue(e.getCause() instanceof ExpiredLockException, e.getCause().toString());
        }
        assertFalse(lease.isValid());
        assertTrue(awaitSize(told, 1));
        assertEquals(List.of(LossReason.EXPIRED), told.stream().map(LockLost::reason).toList());
        assertEquals(0, claims(lock), "the late renewal's claim was withdrawn");
        try (Lease next = b.acquire(lock, "next")) {
            assertTrue(next.fencingToken() > token);
            assertFalse(lease.isValid());
        }
        lease.close();
    }

    /**
     * Real clock. lockWait = 1 s, expiry = 3 s: the deadline is 1.98 s after the claim's write, the acquire returns at
     * about 1 s. The first renewal must come before the watchdog's margin, counted from the remaining validity.
     * On a healthy store with nobody else around, the lease stays valid and nothing is told.
     */
    @Test
    void keepAliveRenewsAWaitAndReadBackLeaseInTimeTheFirstTime() {
        Locker a = locker(shared, config("a", Duration.ofSeconds(3), Duration.ofSeconds(1), TimeSource.system()).build());
        List<LockLost> told = new CopyOnWriteArrayList<>();
        try (Lease lease = a.acquire(lock, "job")) {
            lease.onLost(told::add);
            sleep(2_500);
            assertTrue(told.isEmpty() && lease.isValid(), "a kept-alive lease on a healthy store was lost 2.5 s "
                    + "after acquire (expiry 3 s, lockWait 1 s): " + told + ", valid: " + lease.isValid());
        }
    }

    /**
     * Real clock. expiry = 1.5 s, lockWait = 10 ms (renewals every 0.5 s, watchdog 0.15 s before the deadline).
     * Leases L1 and L2 of one locker hold different locks. A worker's L1.check() is stuck in a store read.
     * Keep-alive does not block on L1's busy hold: L2, healthy, keeps being renewed and is never declared lost.
     */
    @Test
    void aStuckCheckOnOneLeaseLeavesTheRenewalsOfOtherLeasesAlone() {
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

    /**
     * Real clock, expiry 1.5 s, lockWait 10 ms. A transaction holds lock 1 with keep-alive on and a listener.
     * It then claims lock 2, whose store write is paused. A keep-alive tick that meets lock 2's hold still being written
     * skips it. Lock 1 keeps being renewed after the write completes, and the listener is told nothing.
     */
    @Test
    void aHoldBeingWrittenLeavesKeepAliveRunningForTheTransaction() {
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

    /**
     * Virtual clock (expiries never pass), expiry 300 ms so that the real-time keep-alive ticks every 100 ms.
     * A's keep-alive renewal reads A's row and pauses before its rewrite. The application closes A's lease meanwhile.
     * The close waits for the renewal in flight, so the claim is gone when it returns. B then acquires and holds,
     * its check passes, and A's store sees no write after the close.
     */
    @Test
    void aKeepAliveRenewalInFlightNeverReCreatesAReleasedClaim() throws Exception {
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
            closeWaitedForTheRenewal = true; // a release waits for the step in flight
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
}
