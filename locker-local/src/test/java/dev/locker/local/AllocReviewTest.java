package dev.locker.local;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockLost;
import dev.locker.api.LockProbe;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.reflect.Field;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Adversarial review of the allocation/heap rework of locker-local (issue 14, merge 0401e3e): one Hold object per
 * held lock, the mediator without a release counter, a transaction's holds in a copy-on-write array, keep-alive on
 * {@link Timer}, the keep-alive record merged into the holds record. Each {@code @Disabled} test is a finding: it
 * fails on the code as reviewed; its javadoc gives what goes wrong and why it matters. Backends are the real mem:
 * store ({@link InMemoryStore}); only the clock may be virtual.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class AllocReviewTest {

    private final List<Locker> lockers = new ArrayList<>();

    @AfterEach
    void tearDown() {
        lockers.forEach(Locker::close);
    }

    private Locker locker(String name, LockerConfig.Builder config) {
        Locker l = ConsistentKeyLocker.builder(new InMemoryStore(name)).config(config.rid(name).build()).build();
        lockers.add(l);
        return l;
    }

    private static Object field(Class<?> owner, String name, Object of) throws Exception {
        Field f = owner.getDeclaredField(name);
        f.setAccessible(true);
        return f.get(of);
    }

    /** The holds of {@code tx} in {@code l} (reflection on Transactions.txs and TxHolds.all). */
    @SuppressWarnings("unchecked")
    private static Hold[] holdsOf(Locker l, Object tx) throws Exception {
        java.util.Map<Object, Object> txs = (java.util.Map<Object, Object>) field(Transactions.class, "txs",
                field(AbstractLocker.class, "transactions", l));
        for (Object holds : txs.values()) {
            java.lang.reflect.Method all = holds.getClass().getDeclaredMethod("all");
            all.setAccessible(true);
            Hold[] a = (Hold[]) all.invoke(holds);
            if (a.length > 0 && a[0].tx == tx) {
                return a;
            }
        }
        return new Hold[0];
    }

    /** Throws any throwable, checked or not, without declaring it (what Kotlin, Groovy or Lombok code does). */
    @SuppressWarnings("unchecked")
    private static <T extends Throwable> void sneaky(Throwable t) throws T {
        throw (T) t;
    }

    // =================================================================================================================
    // Finding 1: a Timer thread dies for good on a throwable that is neither a RuntimeException nor an Error
    // =================================================================================================================

    /**
     * Timer.work catches RuntimeException and Error around the handler, nothing else; a checked exception thrown
     * without being declared (Kotlin/Groovy code, Lombok's SneakyThrows, a probe or backend client written that way)
     * ends the timer's only thread. Nothing restarts it: {@code thread} stays non-null, so {@link Timer#schedule}
     * keeps answering true and keeps piling entries into a heap nobody drains (a leak, too). The same holds for an
     * Error thrown inside the locked section (an OutOfMemoryError allocating the condition's wait node), and for a
     * thread that failed to start. The ScheduledThreadPoolExecutor it replaced kept every task's throwable in its
     * future and replaced a dead worker.
     */
    @Test
    void f1_timerDiesOnACheckedThrowableAndNeverRunsAnotherEntry() throws Exception {
        CountDownLatch ranAfter = new CountDownLatch(1);
        Timer<TimerTest.Entry> timer = new Timer<>("alloc-review-timer", e -> {
            if (e.name.equals("boom")) {
                sneaky(new java.io.IOException("a handler's checked exception"));
            }
            ranAfter.countDown();
        });
        try {
            timer.schedule(new TimerTest.Entry("boom"), 0);
            Thread.sleep(200); // let it run (and, as reviewed, kill the thread)
            assertTrue(timer.schedule(new TimerTest.Entry("after"), 0), "the timer still accepts entries");
            assertTrue(ranAfter.await(10, TimeUnit.SECONDS),
                    "an entry scheduled after a handler threw a checked exception never ran: the timer thread is dead "
                            + "and " + timer.size() + " entry(ies) wait in its heap for ever");
        } finally {
            timer.shutdownNow();
        }
    }

    /**
     * The same at the locker: one renewal whose probe throws a checked exception undeclared (a Kotlin LockProbe whose
     * metrics exporter throws IOException: Kotlin has no checked exceptions) kills the locker's keep-alive thread.
     * From then on no lease of that locker is ever renewed again: every lease acquired later is declared lost by the
     * watchdog before its first expiry, for the life of the locker. Before the rework the failed task's throwable
     * stayed in its ScheduledFuture and only that one transaction's renewals stopped.
     */
    @Test
    void f1_oneThrowableOnTheKeepAliveThreadStopsTheRenewalsOfEveryLaterLease() throws Exception {
        AtomicBoolean thrown = new AtomicBoolean();
        CountDownLatch threw = new CountDownLatch(1);
        LockProbe probe = new LockProbe() {
            @Override
            public void before(Step step, KeyColumn lock, String rid) {
                if (step == Step.RENEW && lock.equals(KeyColumn.named("f1-first")) && thrown.compareAndSet(false, true)) {
                    threw.countDown();
                    AllocReviewTest.<RuntimeException>sneaky(new java.io.IOException("metrics exporter unreachable"));
                }
            }
        };
        Duration expiry = Duration.ofMillis(1500);
        Locker l = locker("alloc-f1", LockerConfig.builder().expiry(expiry).lockWait(Duration.ofMillis(5)).probe(probe));
        Lease first = l.acquire(KeyColumn.named("f1-first"), "first");
        assertTrue(threw.await(20, TimeUnit.SECONDS), "the first renewal ran");
        Thread.sleep(100);
        Lease later = l.acquire(KeyColumn.named("f1-later"), "later");
        List<LockLost> lost = new CopyOnWriteArrayList<>();
        later.onLost(lost::add);
        Thread.sleep(expiry.toMillis() * 3); // nine renewal periods
        assertTrue(lost.isEmpty() && later.remaining().compareTo(Duration.ZERO) > 0,
                "a lease acquired after one renewal threw was never renewed: " + lost);
        later.close();
        first.close();
    }

    // =================================================================================================================
    // Finding 2: a released hold stays in the watchdog's heap until its deadline
    // =================================================================================================================

    /**
     * Every lease is watched (acquire turns keep-alive on, and a kept-alive hold is watched), so each acquire puts its
     * Hold in the deadline-watch timer, due at its deadline less the margin. deleteLocks (Lease.close) stops the
     * transaction's renewals (Timer.cancel of its TxHolds) but never cancels its holds' watch entries: each closed
     * lease's Hold, with its transaction, KeyColumn, status and listener list, stays reachable from the timer's heap
     * for about 0.9 x the expiry (the default 30 s, often minutes). A service that takes and releases 10k leases a
     * second keeps ~270k dead holds on its heap, which is what this rework set out to shrink ("client heap per held
     * lock"); the heap array never shrinks back either. Timer.cancel is O(log n) and allocation-free now: releaseHold
     * could cancel it. (The executor before had the same retention, through its futures.)
     */
    @Test
    void f2_closedLeasesStayInTheDeadlineWatchHeapUntilTheirDeadline() throws Exception {
        Locker l = locker("alloc-f2", LockerConfig.builder().expiry(Duration.ofMinutes(10)).lockWait(Duration.ofMillis(1)));
        int n = 200;
        for (int i = 0; i < n; i++) {
            try (Lease lease = l.acquire(KeyColumn.named("f2-" + i), "f2")) {
                assertTrue(lease.fencingToken() > 0);
            }
        }
        Object keepAlive = field(Background.class, "keepAlive", field(AbstractLocker.class, "background", l));
        Timer<?> renewals = (Timer<?>) field(KeepAlive.class, "scheduler", keepAlive);
        Timer<?> watch = (Timer<?>) field(KeepAlive.class, "watchdogScheduler", keepAlive);
        assertEquals(0, renewals.size(), "renewal entries of closed leases");
        assertEquals(0, watch.size(), "deadline-watch entries (each a dead Hold, its tx and lock) of " + n
                + " closed leases");
    }

    // =================================================================================================================
    // Checked and sound: local waiters on two locks, through the mediator's per-lock wake-up
    // =================================================================================================================

    /**
     * Six threads of one locker take two locks in turn with tryAcquire (local contention: the waiter waits for its
     * own lock's entry to go, on a monitor shared by both locks). Nobody overlaps on a lock, and every wait ends in
     * an acquisition well inside its generous maximum (a missed wake-up costs a back-off, never the whole wait).
     */
    @Test
    void sound_localWaitersOnTwoLocksNeverOverlapAndAllGetThrough() throws Exception {
        Locker l = locker("alloc-waiters", LockerConfig.builder().expiry(Duration.ofSeconds(20)).lockWait(Duration.ofMillis(1)));
        KeyColumn[] locks = {KeyColumn.named("w-a"), KeyColumn.named("w-b")};
        java.util.concurrent.atomic.AtomicInteger[] inside = {new java.util.concurrent.atomic.AtomicInteger(),
                new java.util.concurrent.atomic.AtomicInteger()};
        java.util.concurrent.atomic.AtomicInteger overlaps = new java.util.concurrent.atomic.AtomicInteger();
        java.util.concurrent.atomic.AtomicInteger missed = new java.util.concurrent.atomic.AtomicInteger();
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(6);
        try {
            List<java.util.concurrent.Future<?>> done = new ArrayList<>();
            for (int t = 0; t < 6; t++) {
                int me = t;
                done.add(pool.submit(() -> {
                    for (int i = 0; i < 25; i++) {
                        int w = (me + i) % 2;
                        java.util.Optional<Lease> lease = l.tryAcquire(locks[w], "w" + me, Duration.ofSeconds(30));
                        if (lease.isEmpty()) {
                            missed.incrementAndGet();
                            continue;
                        }
                        try (Lease held = lease.get()) {
                            if (inside[w].incrementAndGet() != 1) {
                                overlaps.incrementAndGet();
                            }
                            Thread.yield();
                            inside[w].decrementAndGet();
                        }
                    }
                    return null;
                }));
            }
            for (java.util.concurrent.Future<?> f : done) {
                f.get(50, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        assertEquals(0, overlaps.get(), "two threads of one JVM inside one lock");
        assertEquals(0, missed.get(), "waits that ended without the lock");
        assertEquals(0, ((LocalLockMediator) ((AbstractLocker<?>) l).arbitration()).size(), "entries left");
    }

    // =================================================================================================================
    // Finding 3: two holds for one lock in a transaction's small array; the live one is hidden behind the lost one
    // =================================================================================================================

    /**
     * One transaction used from two threads (JanusGraph's threaded transactions, or a caller's own tx object shared by
     * workers), localWait long enough for a local takeover. T2 passes the idempotence check (no hold yet) and waits
     * in takeLocal behind another transaction X. X releases; T1 (same tx) claims the lock (hA) and its write stalls
     * past the expiry. T2 then takes the lock over from hA (hA is marked lost, hB becomes the mediator's entry) and
     * appends hB: the transaction's array is now [hA (lost), hB (live)] for one lock. The LinkedHashMap before the
     * rework replaced hA by hB (put on the same key); the array keeps both and {@code find} returns the first. So
     * while T1's write is in flight, the transaction, which holds the lock through hB (its claim is written, its
     * token valid), is told it holds nothing: status() is empty, fencingToken() and checkLocks() throw "lost", a
     * writeLock again is a no-op on the lost hold. The holder acts on a loss it did not suffer (releases, retries),
     * and the duplicate breaks the array's one-hold-per-lock invariant that find/idempotence rely on. (Safety holds:
     * the mediator has one entry, the store one live claim.)
     */
    @Test
    void f3_aTakeoverWithinOneTransactionHidesTheLiveHoldBehindTheLostOne() throws Exception {
        dev.locker.testkit.VirtualClock clock = new dev.locker.testkit.VirtualClock();
        CountDownLatch t2Waits = new CountDownLatch(1);
        CountDownLatch t2Go = new CountDownLatch(1);
        AtomicBoolean gated = new AtomicBoolean();
        dev.locker.api.TimeSource gate = new dev.locker.api.TimeSource() {
            @Override
            public java.time.Instant now() {
                return clock.now();
            }

            @Override
            public long nanoTime() {
                return clock.nanoTime();
            }

            @Override
            public void sleep(Duration d) throws InterruptedException {
                if (Thread.currentThread().getName().equals("alloc-t2") && gated.compareAndSet(false, true)) {
                    t2Waits.countDown(); // T2 is in takeLocal's back-off, past the idempotence check
                    t2Go.await();
                }
                clock.sleep(d);
            }
        };
        dev.locker.testkit.StepPauses pauses = new dev.locker.testkit.StepPauses();
        Duration expiry = Duration.ofSeconds(1);
        Locker l = locker("alloc-f3", LockerConfig.builder().expiry(expiry).lockWait(Duration.ofMillis(10))
                .localWait(Duration.ofSeconds(30)).timeSource(gate).probe(pauses));
        KeyColumn lock = KeyColumn.named("f3");
        Object tx = new Object();
        Object txX = new Object();
        l.writeLock(lock, txX);
        l.checkLocks(txX); // X holds the lock
        List<Throwable> failures = new CopyOnWriteArrayList<>();
        Thread t2 = new Thread(() -> {
            try {
                l.writeLock(lock, tx);
            } catch (Throwable e) {
                failures.add(e);
            }
        }, "alloc-t2");
        t2.start();
        assertTrue(t2Waits.await(10, TimeUnit.SECONDS));
        l.deleteLocks(txX); // X lets go
        dev.locker.testkit.Pause t1Write = pauses.before(LockProbe.Step.WRITE);
        Thread t1 = new Thread(() -> {
            try {
                l.writeLock(lock, tx);
            } catch (Throwable e) {
                failures.add(e); // its write outlived the expiry: it is told so (correct)
            }
        }, "alloc-t1");
        t1.start();
        t1Write.awaitArrival(); // hA is the entry, its write in flight
        clock.advance(expiry.multipliedBy(2)); // ... and stalls past the expiry
        t2Go.countDown();
        t2.join(10_000);
        assertTrue(failures.isEmpty(), "T2 claimed the lock: " + failures);
        try {
            String holds = java.util.Arrays.toString(holdsOf(l, tx));
            assertTrue(l.status(lock, tx).isPresent(), "the transaction holds the lock (T2's claim is written) but "
                    + "status() finds T1's lost hold first; its holds: " + holds);
            l.checkLocks(tx);
            assertTrue(l.fencingToken(lock, tx) > 0);
        } finally {
            t1Write.resume();
            t1.join(10_000);
            l.deleteLocks(tx);
        }
    }

    // =================================================================================================================
    // Checked and sound: the Timer's heap under random schedule/move/cancel, and an earlier entry wakes the wait
    // =================================================================================================================

    /**
     * 20k random schedules, moves (earlier and later) and cancels of 300 entries, all far in the future: after each
     * step every scheduled entry sits in the slot its index names, every unscheduled one has index -1, and each
     * parent is due no later than its children. Then, with the thread waiting for an entry 60 s away, an entry due
     * in 50 ms runs long before it (the wake-up condition on wakesAt does not oversleep it).
     */
    @Test
    void sound_timerHeapStaysAHeapAndAnEarlierEntryWakesTheWait() throws Exception {
        CountDownLatch early = new CountDownLatch(1);
        Timer<TimerTest.Entry> timer = new Timer<>("alloc-review-heap", e -> {
            if (e.name.equals("early")) {
                early.countDown();
            }
        });
        try {
            java.util.Random r = new java.util.Random(14);
            TimerTest.Entry[] es = new TimerTest.Entry[300];
            for (int i = 0; i < es.length; i++) {
                es[i] = new TimerTest.Entry("e" + i);
            }
            Field heapField = Timer.class.getDeclaredField("heap");
            Field sizeField = Timer.class.getDeclaredField("size");
            heapField.setAccessible(true);
            sizeField.setAccessible(true);
            for (int step = 0; step < 20_000; step++) {
                TimerTest.Entry e = es[r.nextInt(es.length)];
                if (r.nextInt(4) == 0) {
                    timer.cancel(e);
                } else {
                    timer.schedule(e, TimeUnit.SECONDS.toNanos(600) + r.nextInt(1_000_000) * 1000L);
                }
                if (step % 97 == 0 || step > 19_900) {
                    Object[] heap = (Object[]) heapField.get(timer);
                    int size = (int) sizeField.get(timer);
                    for (int i = 0; i < size; i++) {
                        TimerTest.Entry x = (TimerTest.Entry) heap[i];
                        assertEquals(i, x.index, "slot of " + x.name);
                        if (i > 0) {
                            assertTrue(((TimerTest.Entry) heap[(i - 1) / 2]).due - x.due <= 0, "heap order at " + i);
                        }
                    }
                    for (int i = size; i < heap.length; i++) {
                        assertEquals(null, heap[i], "a removed slot is cleared");
                    }
                    int scheduled = 0;
                    for (TimerTest.Entry x : es) {
                        scheduled += x.index >= 0 ? 1 : 0;
                        assertTrue(x.index < 0 || heap[x.index] == x);
                    }
                    assertEquals(size, scheduled);
                }
            }
            timer.schedule(new TimerTest.Entry("far"), TimeUnit.SECONDS.toNanos(60));
            Thread.sleep(200); // the thread now waits for the earliest entry
            timer.schedule(new TimerTest.Entry("early"), TimeUnit.MILLISECONDS.toNanos(50));
            assertTrue(early.await(20, TimeUnit.SECONDS), "an earlier entry woke the timer");
        } finally {
            timer.shutdownNow();
        }
    }

    // =================================================================================================================
    // Checked and sound: keep-alive and the deadline watch across a wrap of the monotonic clock
    // =================================================================================================================

    /**
     * The monotonic clock is only ever compared by difference: a time source whose nanoTime wraps past
     * Long.MAX_VALUE half a second after the lease is taken (the real clock, shifted) keeps the lease renewed for
     * three expiries, with no false loss from the watchdog and a positive remaining time.
     */
    @Test
    void sound_aLeaseIsKeptAliveAcrossAWrapOfTheMonotonicClock() throws Exception {
        long shift = Long.MAX_VALUE - System.nanoTime() - TimeUnit.MILLISECONDS.toNanos(500);
        dev.locker.api.TimeSource wrapping = new dev.locker.api.TimeSource() {
            @Override
            public java.time.Instant now() {
                return java.time.Instant.now();
            }

            @Override
            public long nanoTime() {
                return System.nanoTime() + shift; // overflows half a second from now
            }

            @Override
            public void sleep(Duration d) throws InterruptedException {
                TimeUnit.NANOSECONDS.sleep(d.toNanos());
            }
        };
        Duration expiry = Duration.ofMillis(1500);
        Locker l = locker("alloc-wrap", LockerConfig.builder().expiry(expiry).lockWait(Duration.ofMillis(5))
                .timeSource(wrapping));
        Lease lease = l.acquire(KeyColumn.named("wrap"), "wrap");
        List<LockLost> lost = new CopyOnWriteArrayList<>();
        lease.onLost(lost::add);
        Thread.sleep(expiry.toMillis() * 3);
        assertTrue(wrapping.nanoTime() < 0, "the clock wrapped");
        assertTrue(lost.isEmpty(), "no loss across the wrap: " + lost);
        assertTrue(lease.remaining().compareTo(Duration.ZERO) > 0);
        lease.check();
        lease.close();
    }
}
