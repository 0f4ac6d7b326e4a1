package dev.locker.local;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockLost;
import dev.locker.api.LockProbe;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Disabled;
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
    @Disabled("finding 1: a sneaky checked exception kills the Timer thread for good; later entries never run")
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
    @Disabled("finding 1: one checked throwable on the keep-alive thread stops every later lease's renewal")
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
    @Disabled("finding 2: closed leases' holds stay in the deadline-watch timer until ~0.9 x expiry (heap retention)")
    void f2_closedLeasesStayInTheDeadlineWatchHeapUntilTheirDeadline() throws Exception {
        Locker l = locker("alloc-f2", LockerConfig.builder().expiry(Duration.ofMinutes(10)).lockWait(Duration.ofMillis(1)));
        int n = 200;
        for (int i = 0; i < n; i++) {
            try (Lease lease = l.acquire(KeyColumn.named("f2-" + i), "f2")) {
                assertTrue(lease.fencingToken() > 0);
            }
        }
        Object keepAlive = field(AbstractLocker.class, "background", l);
        Timer<?> renewals = (Timer<?>) field(KeepAlive.class, "scheduler", keepAlive);
        Timer<?> watch = (Timer<?>) field(KeepAlive.class, "watchdogScheduler", keepAlive);
        assertEquals(0, renewals.size(), "renewal entries of closed leases");
        assertEquals(0, watch.size(), "deadline-watch entries (each a dead Hold, its tx and lock) of " + n
                + " closed leases");
    }
}
