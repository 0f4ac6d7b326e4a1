package dev.locker.testkit;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.api.TemporaryLockingException;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static dev.locker.testkit.Scenarios.take;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Waiting for a lock: in the process, for another process's release, and a bounded wait that says why it ended. */
public interface WaitingSection extends ConformanceScenario {

    @Test
    default void localWaitTakesTheLockWhenTheOtherTransactionReleases() throws Exception {
        // the waiter's back-off sleeps advance a virtual clock at once: a long expiry keeps the race away from it
        Duration longExpiry = virtualClock() != null ? Duration.ofDays(1) : expiry();
        Locker a = open(config("a").localWait(Duration.ofDays(1)).expiry(longExpiry).build());
        KeyColumn lock = lock("x");
        Object first = new Object();
        take(a, lock, first);
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            Object second = new Object();
            Future<?> waiter = pool.submit(() -> take(a, lock, second));
            Thread.sleep(20);
            a.deleteLocks(first);
            waiter.get(60, TimeUnit.SECONDS);
            assertTrue(a.status(lock, second).orElseThrow().isHeld());
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    default void localWaitIsBounded() {
        Locker a = open(config("a").localWait(Duration.ofMillis(50)).build());
        KeyColumn lock = lock("x");
        take(a, lock, new Object());
        assertThrows(TemporaryLockingException.class, () -> a.writeLock(lock, new Object()));
    }

    @Test
    default void tryAcquireWaitsForTheHolderToRelease() throws Exception {
        Locker a = process("a");
        Locker b = process("b");
        KeyColumn lock = lock("x");
        Lease held = a.acquire(lock, "first");
        assertEquals(Optional.empty(), b.tryAcquire(lock, "impatient", Duration.ZERO));
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            Future<Optional<Lease>> waiting = pool.submit(() -> b.tryAcquire(lock, "patient", Duration.ofMinutes(30)));
            Thread.sleep(30);
            held.close();
            Optional<Lease> got = waiting.get(60, TimeUnit.SECONDS);
            assertTrue(got.isPresent());
            got.get().close();
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * A waiter is woken by the release: the holder keeps its lease alive (so the lock would never expire), releases
     * it, and the waiter gets it with a higher token, told nothing of a loss.
     */
    @Test
    default void aWaiterIsServedWhenTheHolderReleases() throws Exception {
        Locker a = realTimeProcess("a");
        Locker b = realTimeProcess("b");
        KeyColumn lock = lock("x");
        Lease held = a.acquire(lock, "first");
        List<dev.locker.api.LockLost> told = new CopyOnWriteArrayList<>();
        held.onLost(told::add);
        long token = held.fencingToken();
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            Future<Long> waiting = pool.submit(() -> {
                Lease l = b.tryAcquire(lock, "patient", Duration.ofSeconds(60)).orElseThrow();
                long at = System.nanoTime();
                assertTrue(l.fencingToken() > token, "a higher token");
                l.close();
                return at;
            });
            Thread.sleep(LEASE_EXPIRY.toMillis()); // the waiter is refused at least once; the holder renews meanwhile
            long released = System.nanoTime();
            held.close();
            long granted = waiting.get(60, TimeUnit.SECONDS);
            System.out.printf("[conformance] %s: waiter granted %.1f ms after the release%n",
                    getClass().getSimpleName(), (granted - released) / 1e6);
        } finally {
            pool.shutdownNow();
        }
        assertEquals(List.of(), told, "a release is no loss");
    }

    /** A bounded wait says why it ended: busy (naming the holder), acquired, or the backend unreachable (with cause). */
    @Test
    default void aBoundedWaitSaysWhyItEnded() throws Exception {
        Locker a = process("a");
        Locker b = process("b");
        KeyColumn lock = lock("x");
        Lease held = a.acquire(lock, "holding");
        dev.locker.api.Acquisition busy = b.acquireWithin(lock, "waiting", Duration.ZERO);
        assertEquals(dev.locker.api.Acquisition.Outcome.BUSY, busy.outcome(), busy.toString());
        assertEquals(a.rid(), busy.holder().orElseThrow().rid());
        assertTrue(busy.lease().isEmpty());
        held.close();
        dev.locker.api.Acquisition got = b.acquireWithin(lock, "now", Duration.ofSeconds(30));
        assertEquals(dev.locker.api.Acquisition.Outcome.ACQUIRED, got.outcome(), got.toString());
        got.lease().orElseThrow().close();
        if (fixture().canBreakBackend()) {
            fixture().breakBackend();
            try {
                dev.locker.api.Acquisition down = b.acquireWithin(lock("y"), "during an outage", Duration.ZERO);
                assertEquals(dev.locker.api.Acquisition.Outcome.UNREACHABLE, down.outcome(), down.toString());
                assertNotNull(down.failure().orElseThrow().getCause(), "the backend's failure is kept");
            } finally {
                fixture().repairBackend();
            }
        }
    }
}
