package dev.locker.engine;

import dev.locker.api.KeyColumn;
import dev.locker.api.TimeSource;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

class LocalLockMediatorTest {

    private final VirtualClock clock = new VirtualClock();
    private final LocalLockMediator m = LocalLockMediator.standalone("test", clock);
    private final KeyColumn lock = KeyColumn.of("k", "c");

    private Hold hold(Object tx) {
        return new Hold(lock, tx, clock.nanoTime() + Duration.ofSeconds(10).toNanos(), h -> { });
    }

    @Test
    void onlyOneTransactionHoldsALiveEntry() {
        Object t1 = new Object();
        assertTrue(m.take(hold(t1)));
        assertFalse(m.take(hold(new Object())));
        assertSame(t1, m.holder(lock).orElseThrow());
    }

    @Test
    void anEntryPastItsDeadlineIsTakenOverAndItsHoldLearnsIt() {
        Hold first = hold(new Object());
        m.take(first);
        clock.advance(Duration.ofSeconds(11));
        Object t2 = new Object();
        assertTrue(m.take(hold(t2)));
        assertEquals(Hold.Phase.LOST, first.state().phase(), "the stalled hold is lost for good");
        m.release(first);
        assertSame(t2, m.holder(lock).orElseThrow(), "the former holder cannot remove the new entry");
    }

    @Test
    void aLostHoldCannotComeBack() {
        Hold first = hold(new Object());
        m.take(first);
        Hold.State claiming = first.state();
        clock.advance(Duration.ofSeconds(11));
        m.take(hold(new Object()));
        ClaimStatus late = ClaimStatus.granted(new byte[]{1}, 1, clock.nanoTime() + 1_000_000_000L);
        assertFalse(first.update(claiming, late, false), "a write that answers after the takeover does not count");
    }

    @Test
    void onlyTheHoldRemovesItsEntry() {
        Hold h = hold(new Object());
        m.take(h);
        m.release(hold(new Object()));
        assertEquals(1, m.size());
        m.release(h);
        assertEquals(0, m.size());
    }

    @Test
    void transactionsAreComparedByIdentity() {
        m.take(hold("tx"));
        assertFalse(m.take(hold(new String("tx"))), "equal but not the same transaction");
    }

    @Test
    void racingThreadsNeverShareALock() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(8);
        AtomicInteger winners = new AtomicInteger();
        for (int i = 0; i < 8; i++) {
            pool.submit(() -> {
                if (m.take(hold(new Object()))) {
                    winners.incrementAndGet();
                }
            });
        }
        pool.shutdown();
        assertTrue(pool.awaitTermination(10, TimeUnit.SECONDS));
        assertEquals(1, winners.get());
    }

    @Test
    void mediatorGroupsAreInjectableNotGlobal() {
        try (LocalLockMediators g1 = new LocalLockMediators(clock); LocalLockMediators g2 = new LocalLockMediators(clock)) {
            assertSame(g1.forNamespace("ns"), g1.forNamespace("ns"));
            assertNotSame(g1.forNamespace("ns"), g2.forNamespace("ns"));
        }
    }

    // ---- waiting for a release (system time: a virtual clock makes awaitRelease a plain sleep) ------------------------

    /** Longer than any test runs: a waiter still asleep when its release came would outlast the generous bound. */
    private static final long FOREVER = Duration.ofMinutes(10).toNanos();

    @Test
    void aWaiterReturnsAtOnceWhenTheLockHasNoEntry() throws Exception {
        LocalLockMediator sys = LocalLockMediator.standalone("sys", TimeSource.system());
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            pool.submit(() -> {
                sys.awaitRelease(lock, FOREVER);
                return null;
            }).get(60, TimeUnit.SECONDS);
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aReleaseRacingWaitersRegistrationNeverLeavesThemAsleep() throws Exception {
        LocalLockMediator sys = LocalLockMediator.standalone("sys", TimeSource.system());
        int waiters = 2;
        ExecutorService pool = Executors.newFixedThreadPool(waiters);
        try {
            for (int i = 0; i < 5_000; i++) {
                Hold h = new Hold(lock, "tx" + i, System.nanoTime() + FOREVER, x -> { });
                assertTrue(sys.take(h));
                CyclicBarrier start = new CyclicBarrier(waiters + 1);
                List<Future<?>> asleep = new ArrayList<>();
                for (int w = 0; w < waiters; w++) {
                    asleep.add(pool.submit(() -> {
                        start.await();
                        sys.awaitRelease(lock, FOREVER);
                        return null;
                    }));
                }
                start.await();
                sys.release(h); // before, during or after the waiters register
                for (Future<?> f : asleep) {
                    f.get(60, TimeUnit.SECONDS); // woken (or never slept), not left asleep
                }
                assertEquals(0, sys.size());
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aTakeoverRacingAWaitersRegistrationNeverLeavesItAsleep() throws Exception {
        LocalLockMediator sys = LocalLockMediator.standalone("sys", TimeSource.system());
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            for (int i = 0; i < 5_000; i++) {
                // already past its deadline: the next take replaces it (marked lost first) instead of failing
                Hold stalled = new Hold(lock, "stalled" + i, System.nanoTime() - 1, x -> { });
                assertTrue(sys.take(stalled));
                CyclicBarrier start = new CyclicBarrier(2);
                Future<?> asleep = pool.submit(() -> {
                    start.await();
                    sys.awaitRelease(lock, FOREVER); // on the stalled entry, or on the next one if it came first
                    return null;
                });
                start.await();
                Hold next = new Hold(lock, "next" + i, System.nanoTime() + FOREVER, x -> { });
                assertTrue(sys.take(next), "a past-deadline entry is taken over");
                assertEquals(Hold.Phase.LOST, stalled.state().phase(), "marked lost before it was replaced");
                sys.release(stalled);
                assertSame(next.tx, sys.holder(lock).orElseThrow(), "only its own hold removes an entry");
                sys.release(next); // the takeover woke a waiter on the stalled entry; this wakes one on the next
                asleep.get(60, TimeUnit.SECONDS);
                assertEquals(0, sys.size());
            }
        } finally {
            pool.shutdownNow();
        }
    }
}
