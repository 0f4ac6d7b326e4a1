package dev.locker.testkit;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockOwner;
import dev.locker.api.LockStatus;
import dev.locker.api.LockTransaction;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.TemporaryLockingException;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import static dev.locker.testkit.Scenarios.assertContended;
import static dev.locker.testkit.Scenarios.take;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The three-phase contract: writeLock, checkLocks and deleteLocks between processes and within one. */
public interface ThreePhaseSection extends ConformanceScenario {

    @Test
    default void writeCheckDeleteHoldsThenFrees() {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        LockTransaction tx = new LockTransaction("single");
        a.writeLock(lock, tx);
        a.checkLocks(tx);
        LockStatus s = a.status(lock, tx).orElseThrow();
        assertTrue(s.isHeld());
        assertTrue(s.fencingToken() > 0, "a held lock has a positive fencing token");
        assertEquals(a.rid(), a.holder(lock).orElseThrow().rid());
        a.deleteLocks(tx);
        assertEquals(Optional.empty(), a.holder(lock));
        assertEquals(Optional.empty(), a.status(lock, tx));
    }

    @Test
    default void otherProcessIsRefusedWithTheHolderNamed() {
        Locker a = process("a");
        Locker b = process("b");
        KeyColumn lock = lock("x");
        take(a, lock, new LockTransaction("doing balance round"));
        TemporaryLockingException e = assertContended(b, lock, new LockTransaction());
        assertEquals(lock, e.lock());
        LockOwner holder = e.holder();
        assertNotNull(holder, "the exception names the holder");
        assertEquals(a.rid(), holder.rid());
        assertEquals("host-a", holder.host());
        assertEquals(4242, holder.pid());
        assertEquals("doing balance round", holder.why());
        assertTrue(e.getMessage().contains(a.rid()), e.getMessage());
        assertTrue(e.getMessage().contains(lock.toString()), e.getMessage());
    }

    @Test
    default void releasedLockCanBeTakenByAnotherProcess() {
        Locker a = process("a");
        Locker b = process("b");
        KeyColumn lock = lock("x");
        Object ta = new Object();
        take(a, lock, ta);
        a.deleteLocks(ta);
        Object tb = new Object();
        take(b, lock, tb);
        assertEquals(b.rid(), b.holder(lock).orElseThrow().rid());
    }

    @Test
    default void localContentionFailsFast() {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        take(a, lock, new LockTransaction("first"));
        TemporaryLockingException e = assertThrows(TemporaryLockingException.class,
                () -> a.writeLock(lock, new LockTransaction("second")));
        assertTrue(e.getMessage().contains("this process"), e.getMessage());
        assertEquals(lock, e.lock());
    }

    @Test
    default void repeatedWriteLockIsANoOpAndDoesNotExtend() throws Exception {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        Object tx = new Object();
        a.writeLock(lock, tx);
        LockStatus first = a.status(lock, tx).orElseThrow();
        pass(Duration.ofMillis(200));
        a.writeLock(lock, tx);
        assertEquals(first.deadlineNanos(), a.status(lock, tx).orElseThrow().deadlineNanos());
        a.checkLocks(tx);
    }

    @Test
    default void checkLocksIsIdempotent() {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        Object tx = new Object();
        take(a, lock, tx);
        long token = a.fencingToken(lock, tx);
        a.checkLocks(tx);
        a.checkLocks(tx);
        assertEquals(token, a.fencingToken(lock, tx));
    }

    @Test
    default void unknownTransactionsAreNoOps() {
        Locker a = process("a");
        assertDoesNotThrow(() -> a.deleteLocks(new Object()));
        assertDoesNotThrow(() -> a.checkLocks(new Object()));
        assertDoesNotThrow(() -> a.renewLocks(new Object()));
        assertEquals(Optional.empty(), a.status(lock("x"), new Object()));
    }

    @Test
    default void deleteLocksFreesTheLocalMediator() {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        Object t1 = new Object();
        take(a, lock, t1);
        a.deleteLocks(t1);
        Object t2 = new Object();
        take(a, lock, t2);
        assertTrue(a.status(lock, t2).orElseThrow().isHeld());
    }

    @Test
    default void aFailedWriteFreesTheLocalMediator() {
        Locker a = process("a");
        Locker b = process("b");
        KeyColumn lock = lock("x");
        Object ta = new Object();
        take(a, lock, ta);
        assertContended(b, lock, new Object());
        a.deleteLocks(ta);
        Object tb = new Object();
        take(b, lock, tb); // b's mediator was freed by its failed attempt
        assertTrue(b.status(lock, tb).orElseThrow().isHeld());
    }

    @Test
    default void fencingTokenBeforeCheckIsRefused() {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        Object tx = new Object();
        assertThrows(IllegalStateException.class, () -> a.fencingToken(lock, tx));
    }

    @Test
    default void holderShowsOwnerMetadata() {
        Locker a = process("a");
        Locker viewer = process("viewer");
        KeyColumn lock = lock("x");
        assertEquals(Optional.empty(), viewer.holder(lock));
        String thread = Thread.currentThread().getName();
        take(a, lock, new LockTransaction("migrating schema v42"));
        LockOwner o = viewer.holder(lock).orElseThrow();
        assertEquals(a.rid(), o.rid());
        assertEquals("host-a", o.host());
        assertEquals(4242, o.pid());
        assertEquals(thread, o.thread());
        assertEquals("migrating schema v42", o.why());
    }

    /** Lockers of one process that share arbitration meet there first: the second is refused without backend I/O. */
    @Test
    default void lockersSharingArbitrationMeetInTheProcessFirst() {
        Locker a = process("a");
        Locker b = open(config("b").localArbitration(a.arbitration()).build());
        assertTrue(a.arbitration() == b.arbitration());
        KeyColumn lock = lock("x");
        Object ta = new Object();
        take(a, lock, ta);
        TemporaryLockingException e = assertThrows(TemporaryLockingException.class, () -> b.writeLock(lock, new Object()));
        assertTrue(e.getMessage().contains("this process"), e.getMessage());
        a.deleteLocks(ta);
        take(b, lock, new Object());
    }

    /** One configuration given to two lockers makes two owners, never one owner twice. */
    @Test
    default void oneConfigurationForTwoLockersMakesTwoOwners() {
        LockerConfig shared = config("shared").build();
        Locker a = open(shared);
        Locker b = open(shared);
        assertFalse(a.rid().equals(b.rid()), "a rid is unique per locker instance: " + a.rid());
        KeyColumn lock = lock("x");
        Object ta = new Object();
        take(a, lock, ta);
        TemporaryLockingException e = assertContended(b, lock, new Object());
        assertEquals(a.rid(), e.holder().rid());
        b.deleteLocks(new Object());
        a.checkLocks(ta);
    }

    /** N processes x M threads take one lock in turn; the guarded counter never sees two holders. */
    @Test
    default void mutualExclusionOnOneLock() throws Exception {
        runContention(1, 3, 3, 12);
    }

    /** Same, over several locks at once: each lock has its own guard. */
    @Test
    default void mutualExclusionOnManyLocks() throws Exception {
        runContention(6, 3, 2, 12);
    }

    private void runContention(int lockCount, int processes, int threadsPerProcess, int rounds) throws Exception {
        Duration longExpiry = Duration.ofMinutes(10);
        List<Locker> lockers = new ArrayList<>();
        for (int p = 0; p < processes; p++) {
            lockers.add(open(config("p" + p).expiry(longExpiry).build()));
        }
        KeyColumn[] locks = new KeyColumn[lockCount];
        AtomicInteger[] inside = new AtomicInteger[lockCount];
        AtomicLong[] lastToken = new AtomicLong[lockCount];
        @SuppressWarnings("unchecked")
        java.util.concurrent.atomic.AtomicReference<String>[] lastHolder = new java.util.concurrent.atomic.AtomicReference[lockCount];
        for (int i = 0; i < lockCount; i++) {
            locks[i] = lock("contended-" + i);
            inside[i] = new AtomicInteger();
            lastToken[i] = new AtomicLong();
            lastHolder[i] = new java.util.concurrent.atomic.AtomicReference<>("nobody");
        }
        AtomicInteger sections = new AtomicInteger();
        List<String> violations = new CopyOnWriteArrayList<>();
        ConcurrentHashMap<String, Integer> winsByProcess = new ConcurrentHashMap<>();
        ExecutorService pool = Executors.newFixedThreadPool(processes * threadsPerProcess);
        CountDownLatch start = new CountDownLatch(1);
        List<Future<?>> futures = new ArrayList<>();
        for (Locker l : lockers) {
            for (int t = 0; t < threadsPerProcess; t++) {
                futures.add(pool.submit(() -> {
                    start.await();
                    int done = 0;
                    int attempts = 0;
                    while (done < rounds && attempts < rounds * 400) {
                        attempts++;
                        int i = ThreadLocalRandom.current().nextInt(lockCount);
                        Object tx = new Object();
                        try {
                            take(l, locks[i], tx);
                        } catch (TemporaryLockingException contended) {
                            Thread.sleep(ThreadLocalRandom.current().nextInt(3));
                            continue;
                        }
                        try {
                            String me = l.rid() + " " + Thread.currentThread().getName() + " "
                                    + l.status(locks[i], tx).orElse(null) + " at " + clock().now();
                            if (inside[i].incrementAndGet() != 1) {
                                violations.add("two holders of " + locks[i] + ": " + me + " while " + lastHolder[i].get());
                            }
                            lastHolder[i].set(me);
                            long token = l.fencingToken(locks[i], tx);
                            long prev = lastToken[i].getAndSet(token);
                            if (token <= prev) {
                                violations.add("token " + token + " after " + prev + " on " + locks[i]);
                            }
                            Thread.sleep(1);
                            inside[i].decrementAndGet();
                            sections.incrementAndGet();
                            winsByProcess.merge(l.rid(), 1, Integer::sum);
                            done++;
                        } finally {
                            l.deleteLocks(tx);
                        }
                    }
                    return null;
                }));
            }
        }
        start.countDown();
        for (Future<?> f : futures) {
            f.get(100, TimeUnit.SECONDS);
        }
        pool.shutdownNow();
        assertEquals(List.of(), violations);
        assertTrue(sections.get() > 0, "some critical sections ran");
        assertTrue(winsByProcess.size() > 1, "more than one process won at some point: " + winsByProcess);
    }
}
