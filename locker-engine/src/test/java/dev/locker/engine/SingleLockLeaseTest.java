package dev.locker.engine;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockLost;
import dev.locker.api.LockProbe;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LossReason;
import dev.locker.api.TemporaryLockingException;
import dev.locker.testkit.Pause;
import dev.locker.testkit.StepPauses;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A single-lock lease is its own transaction: closing it, taking it over or closing a sharing locker treat it as one hold. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SingleLockLeaseTest {

    private final VirtualClock clock = new VirtualClock();

    private final ExecutorService pool = Executors.newCachedThreadPool();

    private final List<Locker> lockers = new ArrayList<>();

    private final KeyColumn lock = KeyColumn.of("vertex:7", "name");

    @AfterEach
    void tearDown() {
        pool.shutdownNow();
        lockers.forEach(Locker::close);
    }

    private LockerConfig.Builder config(String rid) {
        return LockerConfig.builder().rid(rid).expiry(Duration.ofSeconds(10)).lockWait(Duration.ofMillis(50))
                .scrubExpired(false).timeSource(clock);
    }

    private Locker locker(InMemoryStore store, LockerConfig config) {
        Locker l = ConsistentKeyLocker.builder(store).config(config).build();
        lockers.add(l);
        return l;
    }

    /** How many claims the lock's row holds (its other columns, from 0xff on, are records such as tokens). */
    private static long claims(InMemoryStore store, KeyColumn lock) {
        byte[] end = new byte[64];
        java.util.Arrays.fill(end, (byte) 0xff);
        return store.getSlice(lock.encoded(), new byte[0], end, store.beginTransaction()).stream()
                .filter(e -> e.column().length == 0 || e.column()[0] != (byte) 0xff).count();
    }

    private static void await(java.util.function.BooleanSupplier done) throws InterruptedException {
        for (int i = 0; i < 500 && !done.getAsBoolean(); i++) {
            Thread.sleep(10);
        }
    }

    /** A transaction type whose equals says every instance is the same (as some frameworks' handles do). */
    private static final class AllEqual {
        @Override
        public boolean equals(Object o) {
            return true;
        }

        @Override
        public int hashCode() {
            return 1;
        }
    }

    /**
     * A lease closed from many threads at once releases once; closing it again after the lock has a new holder (a new
     * lease of the same locker, whose hold is a different object) deletes nothing of the new holder's.
     */
    @Test
    void aLeaseClosedFromManyThreadsReleasesOnceAndNeverTheNextHoldersClaim() throws Exception {
        InMemoryStore store = new InMemoryStore("close-twice");
        Locker a = locker(store, config("a").build());
        for (int round = 0; round < 50; round++) {
            Lease first = a.acquire(lock, "first");
            CountDownLatch go = new CountDownLatch(1);
            List<Future<?>> closers = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                closers.add(pool.submit(() -> {
                    go.await();
                    first.close();
                    return null;
                }));
            }
            go.countDown();
            for (Future<?> f : closers) {
                f.get();
            }
            Lease second = a.acquire(lock, "second");
            first.close();
            a.deleteLocks(null);
            second.check(); // still ours in the store
            assertTrue(second.isValid());
            assertEquals(1, claims(store, lock));
            second.close();
            assertEquals(0, claims(store, lock));
        }
    }

    /**
     * close() runs while an acquire's claim is being written (paused after the write answered, before the locker
     * records it): the acquire fails, nothing stays in the mediator, and no claim stays in the store.
     */
    @Test
    void closeWhileALeasesClaimIsWrittenLeavesNoClaimAndNoEntry() throws Exception {
        InMemoryStore store = new InMemoryStore("close-write");
        StepPauses pauses = new StepPauses();
        Pause written = pauses.after(LockProbe.Step.WRITE);
        Locker a = locker(store, config("a").probe(pauses).build());
        Future<Lease> acquiring = pool.submit(() -> a.acquire(lock, "racing"));
        written.awaitArrival();
        assertEquals(1, claims(store, lock));
        a.close();
        written.resume();
        Exception e = assertThrows(Exception.class, acquiring::get);
        assertTrue(e.getCause() instanceof IllegalStateException || e.getCause() instanceof ExpiredLockException,
                e.toString());
        assertEquals(0, ((LocalLockMediator) a.arbitration()).size());
        assertEquals(0, claims(store, lock));
    }

    /**
     * close() runs while an acquire checks its claim (the wait-and-read-back's read, paused before it): close waits for
     * the step, the acquire fails, and no claim stays in the store.
     */
    @Test
    void closeWhileALeasesClaimIsCheckedLeavesNoClaim() throws Exception {
        InMemoryStore store = new InMemoryStore("close-check");
        StepPauses pauses = new StepPauses();
        Pause checking = pauses.before(LockProbe.Step.CHECK);
        Locker a = locker(store, config("a").probe(pauses).build());
        Future<Lease> acquiring = pool.submit(() -> a.acquire(lock, "racing"));
        checking.awaitArrival();
        Future<?> closing = pool.submit(() -> {
            a.close();
            return null;
        });
        Thread.sleep(50);
        checking.resume();
        closing.get();
        assertThrows(Exception.class, acquiring::get);
        assertEquals(0, ((LocalLockMediator) a.arbitration()).size());
        assertEquals(0, claims(store, lock));
    }

    /**
     * Transactions are told apart by identity: two transactions equal() to each other (and to everything, a lease's
     * hold included) contend, and releasing one releases nothing of the other's nor of a lease's.
     */
    @Test
    void transactionsThatEqualEachOtherStayApartFromEachOtherAndFromLeases() {
        InMemoryStore store = new InMemoryStore("equal");
        Locker a = locker(store, config("a").build());
        KeyColumn other = KeyColumn.of("vertex:8", "name");
        Lease lease = a.acquire(other, "lease");
        Object t1 = new AllEqual();
        Object t2 = new AllEqual();
        a.writeLock(lock, t1);
        a.checkLocks(t1);
        assertThrows(TemporaryLockingException.class, () -> a.writeLock(lock, t2));
        assertThrows(TemporaryLockingException.class, () -> a.writeLock(other, t2)); // the lease's: no store I/O
        a.deleteLocks(t2);
        a.checkLocks(t1);
        assertTrue(a.status(lock, t1).isPresent());
        lease.check();
        assertTrue(lease.isValid());
        a.deleteLocks(t1);
        assertEquals(0, claims(store, lock));
        lease.close();
    }

    /**
     * A lease lost by a local takeover after its deadline is told EXPIRED once; closing the locker later tells it
     * nothing more (it is found in lostLeases, already final) and deletes its claim.
     */
    @Test
    void aLeaseTakenOverLocallyIsToldOnceEvenWhenTheLockerClosesAfterwards() throws Exception {
        InMemoryStore store = new InMemoryStore("told-once");
        Locker a = locker(store, config("a").build());
        Lease first = a.acquire(lock, "first").keepAlive(false);
        List<LockLost> told = new CopyOnWriteArrayList<>();
        first.onLost(told::add);
        clock.advance(Duration.ofSeconds(11));
        Lease second = a.acquire(lock, "second");
        await(() -> !told.isEmpty());
        second.keepAlive(false);
        a.close();
        Thread.sleep(100);
        assertEquals(List.of(LossReason.EXPIRED), told.stream().map(LockLost::reason).toList());
        assertEquals(0, claims(store, lock));
        assertFalse(second.isValid());
    }

    /**
     * Two lockers share one mediator (and one store). A's lease passes its deadline; B takes the lock over locally.
     * Closing A deletes A's claim only: B's lease stays valid and its claim stays in the store.
     */
    @Test
    void closingOneLockerOfASharedMediatorLeavesTheOthersLeaseAlone() throws Exception {
        InMemoryStore store = new InMemoryStore("shared");
        Locker a = locker(store, config("a").build());
        Locker b = locker(store, config("b").localArbitration(a.arbitration()).build());
        Lease la = a.acquire(lock, "a's").keepAlive(false);
        clock.advance(Duration.ofSeconds(11)); // a's claim expired in the store too
        Lease lb = b.acquire(lock, "b's");
        assertFalse(la.isValid());
        a.close();
        lb.check();
        assertTrue(lb.isValid());
        assertEquals(1, claims(store, lock));
        assertEquals(1, ((LocalLockMediator) b.arbitration()).size());
        lb.close();
        assertEquals(0, ((LocalLockMediator) b.arbitration()).size());
    }
}
