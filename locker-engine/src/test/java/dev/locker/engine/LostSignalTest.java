package dev.locker.engine;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockLost;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LossReason;
import dev.locker.api.TimeSource;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.reflect.Field;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The lost signal: each listener hears of a lost lease once, whatever other listeners, a close or its other locks do. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class LostSignalTest {

    private static final Duration EXPIRY = Duration.ofSeconds(30);

    private static final Duration LOCK_WAIT = Duration.ofMillis(100);

    private final VirtualClock clock = new VirtualClock();

    private final InMemoryStore shared = new InMemoryStore("shared");

    private final ExecutorService pool = Executors.newCachedThreadPool();

    private final List<Locker> lockers = new ArrayList<>();

    private final KeyColumn lock = KeyColumn.of("core", "c");

    @AfterEach
    void tearDown() {
        pool.shutdownNow();
        lockers.forEach(Locker::close);
    }

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

    @SuppressWarnings("unchecked")
    private static <E extends Throwable> void sneakyThrow(Throwable e) throws E {
        throw (E) e;
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
     * The one hold of the locker (reflection: the test plays a thread preempted while it holds the hold's monitor). A
     * single-lock lease's hold is its own transaction: it is found as its lock's mediator entry.
     */
    @SuppressWarnings("unchecked")
    private static Hold onlyHold(Locker l) throws Exception {
        Field m = LockerEngine.class.getDeclaredField("mediator");
        m.setAccessible(true);
        Field sink = LockerEngine.class.getDeclaredField("lostSink");
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

    /**
     * Every listener hears of the loss, whatever the one before it throws: an Error, or a checked exception thrown
     * undeclared as Kotlin and Lombok's sneaky throws do.
     *
     * <p>Interleaving: a lease (keep-alive off) with two listeners, the first throwing an undeclared
     * {@link java.io.IOException}; the clock passes its deadline; another transaction of this process takes the lock
     * over (EXPIRED). The first listener throws, and the second is told all the same.
     */
    @Test
    void aListenerThatThrowsAnUndeclaredCheckedExceptionLeavesTheListenersAfterItTold() throws Exception {
        Locker a = locker("a");
        Lease first = a.acquire(lock, "first").keepAlive(false);
        List<LockLost> told = new CopyOnWriteArrayList<>();
        AtomicInteger thrower = new AtomicInteger();
        first.onLost(l -> {
            thrower.incrementAndGet();
            sneakyThrow(new java.io.IOException("listener failed (thrown undeclared)"));
        });
        first.onLost(told::add);

        clock.advance(EXPIRY.plusSeconds(1)); // past the first lease's deadline, not renewed
        Lease second = a.acquire(lock, "second"); // takes the mediator entry over: the first is lost
        assertFalse(first.isValid());
        awaitSize(told, 1);
        assertEquals(1, thrower.get(), "the throwing listener was told");
        assertEquals(List.of(LossReason.EXPIRED), told.stream().map(LockLost::reason).toList(),
                "the second listener of the lost lease was told of the loss");
        second.close();
    }

    /**
     * A's lease has a listener, and another process force-releases the lock. A worker's check finds the claim gone and
     * marks the hold lost; it is preempted just before it takes the listeners (the test holds the hold's monitor).
     * Meanwhile the application closes A, which shuts its notifier down. The worker resumes, and the listener is still
     * told exactly once.
     */
    @Test
    void aLossRacingLockerCloseIsToldToItsListenerOnce() throws Exception {
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
}
