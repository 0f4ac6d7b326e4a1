package dev.locker.engine;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockProbe;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.testkit.Pause;
import dev.locker.testkit.StepPauses;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/** A claim that fails or is released mid-write drops its mediator entry, so the next transaction is not refused. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class MediatorEntryTest {

    /** Throws from {@code before(WRITE)} once: a metrics probe with a bug, or an Error of the backend's. */
    private static final class ThrowingOnce implements LockProbe {
        final AtomicBoolean armed = new AtomicBoolean();
        final RuntimeException failure;

        ThrowingOnce(RuntimeException failure) {
            this.failure = failure;
        }

        @Override
        public void before(Step step, KeyColumn lock, String rid) {
            if (step == Step.WRITE && armed.compareAndSet(true, false)) {
                throw failure;
            }
        }
    }

    /**
     * A claim may leave by something other than a LockingException: a RuntimeException from the probe's
     * {@code before(WRITE)}, or an Error of the backend. The claiming thread then drops its mediator entry itself.
     * So the process's next transaction is not refused as local contention, and close() does not wait for the entry.
     */
    @Test
    void aClaimThatThrowsOtherThanLockingExceptionDropsItsMediatorEntry() {
        VirtualClock clock = new VirtualClock();
        ThrowingOnce probe = new ThrowingOnce(new IllegalStateException("a metrics probe's bug"));
        try (Locker a = ConsistentKeyLocker.builder(new InMemoryStore("throwing-claim"))
                .config(LockerConfig.builder().rid("a").expiry(Duration.ofHours(1)).localWait(Duration.ZERO)
                        .timeSource(clock).probe(probe).build()).build()) {
            KeyColumn lock = KeyColumn.of("k", "c");
            probe.armed.set(true);
            assertThrows(IllegalStateException.class, () -> a.acquire(lock, "its write step throws"));
            // acquire's own catch ran deleteLocks on its hold: nothing of that attempt should remain
            try (Lease next = a.acquire(lock, "the next transaction of this process")) {
                assertTrue(next.fencingToken() > 0);
            } catch (RuntimeException e) {
                fail("after the failed acquire was released, the next transaction is refused: " + e);
            }
        }
    }

    /** The same through writeLock and the user's deleteLocks, the documented way to give a transaction up. */
    @Test
    void deleteLocksAfterAWriteLockThatThrewLeavesNoEntry() {
        VirtualClock clock = new VirtualClock();
        ThrowingOnce probe = new ThrowingOnce(new IllegalStateException("a metrics probe's bug"));
        try (Locker a = ConsistentKeyLocker.builder(new InMemoryStore("throwing-write"))
                .config(LockerConfig.builder().rid("a").expiry(Duration.ofHours(1)).localWait(Duration.ZERO)
                        .timeSource(clock).probe(probe).build()).build()) {
            KeyColumn lock = KeyColumn.of("k", "c");
            Object tx = new Object();
            probe.armed.set(true);
            assertThrows(IllegalStateException.class, () -> a.writeLock(lock, tx));
            a.deleteLocks(tx);
            Object other = new Object();
            try {
                a.writeLock(lock, other);
                a.checkLocks(other);
            } catch (RuntimeException e) {
                fail("after deleteLocks of the failed transaction, another transaction is refused: " + e);
            } finally {
                a.deleteLocks(other);
            }
        }
    }

    /**
     * deleteLocks from another thread while the claim write is in flight leaves the entry to the claiming thread.
     * That thread finds its hold final after the write, withdraws the claim and frees the entry. The lock is then free,
     * and the store has no claim left of the released transaction.
     */
    @Test
    void deleteLocksDuringTheClaimWriteIsFinishedByTheClaimingThread() throws Exception {
        VirtualClock clock = new VirtualClock();
        StepPauses pauses = new StepPauses();
        InMemoryStore store = new InMemoryStore("inflight");
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try (Locker a = ConsistentKeyLocker.builder(store)
                .config(LockerConfig.builder().rid("a").expiry(Duration.ofHours(1)).localWait(Duration.ZERO)
                        .timeSource(clock).probe(pauses).build()).build()) {
            KeyColumn lock = KeyColumn.of("k", "c");
            Object tx = new Object();
            Pause afterWrite = pauses.after(LockProbe.Step.WRITE);
            Future<?> claiming = pool.submit(() -> {
                a.writeLock(lock, tx);
                return null;
            });
            afterWrite.awaitArrival();
            a.deleteLocks(tx); // the hold is CLAIMING: its entry stays until the claiming thread drops it
            Object other = new Object();
            assertThrows(dev.locker.api.TemporaryLockingException.class, () -> a.writeLock(lock, other),
                    "the claim is still being written: the entry stays");
            afterWrite.resume();
            java.util.concurrent.ExecutionException e = assertThrows(java.util.concurrent.ExecutionException.class,
                    () -> claiming.get(30, TimeUnit.SECONDS));
            assertTrue(e.getCause() instanceof dev.locker.api.LockingException
                    || e.getCause() instanceof IllegalStateException, e.getCause().toString());
            a.writeLock(lock, other);
            a.checkLocks(other);
            a.deleteLocks(other);
            assertEquals(0, a.list(new byte[0], 10, null).locks().size(), "no claim left in the store");
        } finally {
            pool.shutdownNow();
        }
    }
}
