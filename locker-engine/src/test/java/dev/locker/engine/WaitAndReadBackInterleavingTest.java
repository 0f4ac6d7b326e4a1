package dev.locker.engine;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockingException;
import dev.locker.api.TemporaryLockingException;
import dev.locker.spi.Entry;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.spi.StoreTransaction;
import dev.locker.spi.TemporaryStoreException;
import dev.locker.testkit.FaultyStore;
import dev.locker.testkit.Interleavings;
import dev.locker.testkit.Pause;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/** Interleavings on the wait-and-read-back protocol never give two holders, revive a dead claim or orphan one. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class WaitAndReadBackInterleavingTest {

    private static final Duration EXPIRY = Duration.ofSeconds(30);

    private static final Duration LOCK_WAIT = Duration.ofMillis(100);

    private final VirtualClock clock = new VirtualClock();

    private final InMemoryStore shared = new InMemoryStore("shared");

    private final ExecutorService pool = Executors.newCachedThreadPool();

    private final List<Locker> lockers = new ArrayList<>();

    private final KeyColumn lock = KeyColumn.of("vertex:42", "name");

    @AfterEach
    void tearDown() {
        pool.shutdownNow();
        lockers.forEach(Locker::close);
    }

    private LockerConfig.Builder config(String name) {
        return LockerConfig.builder().rid(name).expiry(EXPIRY).lockWait(LOCK_WAIT).timeSource(clock);
    }

    private Locker locker(KeyColumnValueStore store, LockerConfig config) {
        Locker l = ConsistentKeyLocker.builder(store).config(config).build();
        lockers.add(l);
        return l;
    }

    private Locker locker(KeyColumnValueStore store, String name) {
        return locker(store, config(name).build());
    }

    private long take(Locker l, Object tx) {
        return Interleavings.take(l, lock, tx);
    }

    /** True while {@code l} lets {@code tx} believe it holds the lock: held, not lost, before its monotonic deadline. */
    private boolean believesItHolds(Locker l, Object tx) {
        return Interleavings.believesItHolds(l, lock, tx, clock);
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

    /**
     * A store whose next mutation "times out" on the client while its request is still in flight: the caller sees a
     * TemporaryStoreException at once, and the mutation reaches the real store when the test lands it.
     */
    static final class DeferringStore implements KeyColumnValueStore {
        private final KeyColumnValueStore real;
        private boolean deferNext;
        private Runnable deferred;

        DeferringStore(KeyColumnValueStore real) {
            this.real = real;
        }

        synchronized void deferNextMutation() {
            deferNext = true;
        }

        void landDeferred() {
            Runnable r;
            synchronized (this) {
                r = deferred;
                deferred = null;
            }
            r.run();
        }

        @Override
        public String name() {
            return real.name();
        }

        @Override
        public List<Entry> getSlice(byte[] key, byte[] start, byte[] end, StoreTransaction tx) {
            return real.getSlice(key, start, end, tx);
        }

        @Override
        public void mutate(byte[] key, List<Entry> additions, List<byte[]> deletions, StoreTransaction tx) {
            synchronized (this) {
                if (deferNext) {
                    deferNext = false;
                    List<Entry> a = List.copyOf(additions);
                    List<byte[]> d = List.copyOf(deletions);
                    deferred = () -> real.mutate(key, a, d, real.beginTransaction());
                    throw new TemporaryStoreException("store " + real.name() + ": timed out (the request is still in flight)");
                }
            }
            real.mutate(key, additions, deletions, tx);
        }

        @Override
        public StoreTransaction beginTransaction() {
            return real.beginTransaction();
        }

        @Override
        public void close() {
            real.close();
        }
    }

    /**
     * Interleaving (E = 30 s, lockWait = 100 ms; A's claim: written at 0, store expiry 30.0 s, A's deadline 29.601 s):
     * <ol>
     *   <li>A holds (token N). At 29.5 s A renews: it reads its live claim and pauses before its rewrite lands;</li>
     *   <li>at 30.05 s A's claim is dead on every clock. C claims, reads back, finds itself senior, and pauses before
     *       the mutation that writes token N+1 and scrubs A's dead claim;</li>
     *   <li>A's rewrite lands, then C's mutation lands.</li>
     * </ol>
     * A's renewal must not count once its claim died: A and C never both believe they hold.
     */
    @Test
    void aRenewalThatOutlivesItsClaimAndAStaleScrubNeverMakeTwoHolders() throws Exception {
        FaultyStore storeA = new FaultyStore(shared);
        FaultyStore storeC = new FaultyStore(shared);
        Locker a = locker(storeA, "a");
        Locker c = locker(storeC, "c");
        Object ta = new Object();
        long tokenA = take(a, ta);

        clock.advance(Duration.ofMillis(29_400)); // now 29.5 s: before A's deadline (29.601 s)
        assertTrue(believesItHolds(a, ta));
        Pause rewrite = storeA.pauseAt(FaultyStore.Op.MUTATE, 0, false);
        Future<String> renewal = async(() -> {
            a.renewLocks(ta);
            return "renewed";
        });
        rewrite.awaitArrival(); // A read its row (claim live) and is about to rewrite it

        clock.advance(Duration.ofMillis(550)); // 30.05 s: A's claim (expiry 30.0 s) is dead on every clock
        Object tc = new Object();
        c.writeLock(lock, tc);
        Pause tokenWrite = storeC.pauseAt(FaultyStore.Op.MUTATE, 0, false);
        Future<Long> check = async(() -> {
            c.checkLocks(tc);
            return c.fencingToken(lock, tc);
        });
        tokenWrite.awaitArrival(); // C read A's claim as dead: its token write will scrub it

        rewrite.resume();
        try {
            get(renewal); // a renewal that outlived its claim may succeed or be refused; it must not make two holders
        } catch (AssertionError refused) {
            assertTrue(refused.getCause() instanceof ExpiredLockException, "a refused renewal says the lock was lost");
        }
        tokenWrite.resume();
        long tokenC = get(check); // C holds too

        boolean aHolds = believesItHolds(a, ta);
        boolean cHolds = believesItHolds(c, tc);
        assertFalse(aHolds && cHolds, "TWO HOLDERS: A (token " + tokenA + ", renewed) and C (token " + tokenC
                + ") both believe they hold the lock at " + clock.now());
    }

    /**
     * A holds (deadline 29.6 s on its monotonic clock). One second later the host's wall clock steps forward a minute.
     * Every locker sees the step, so their clocks still agree. C either is refused, or A no longer believes it holds.
     */
    @Test
    void aForwardWallClockStepSeenByEveryLockerNeverMakesTwoHolders() {
        Locker a = locker(shared, "a");
        Locker c = locker(shared, "c");
        Object ta = new Object();
        long tokenA = take(a, ta);
        clock.advance(Duration.ofSeconds(1));
        clock.stepWallClock(Duration.ofMinutes(1));
        Object tc = new Object();
        long tokenC;
        try {
            tokenC = take(c, tc);
        } catch (TemporaryLockingException refused) {
            return; // correct: A still holds
        }
        assertFalse(believesItHolds(a, ta) && believesItHolds(c, tc), "TWO HOLDERS after a wall-clock step every "
                + "locker agrees on: A (token " + tokenA + ", " + Duration.ofNanos(a.status(lock, ta).orElseThrow()
                .deadlineNanos() - clock.nanoTime()) + " left on its monotonic clock) and C (token " + tokenC + ")");
    }

    @ParameterizedTest(name = "racing {0}")
    @ValueSource(strings = {"deleteLocks", "close"})
    void aReleaseRacingCheckLocksLeavesNoConfirmedClaimBehind(String release) throws Exception {
        FaultyStore storeA = new FaultyStore(shared);
        Locker a = locker(storeA, "a");
        Locker b = locker(shared, "b");
        Object ta = new Object();
        a.writeLock(lock, ta);
        Pause tokenWrite = storeA.pauseAt(FaultyStore.Op.MUTATE, 0, false);
        Future<Long> check = async(() -> {
            a.checkLocks(ta);
            return a.fencingToken(lock, ta);
        });
        tokenWrite.awaitArrival(); // A read its row back and is about to write its token

        // the release waits for the check in flight (steps are serialised), then marks the hold final and deletes
        java.util.concurrent.atomic.AtomicReference<Thread> releaser = new java.util.concurrent.atomic.AtomicReference<>();
        Future<Object> released = async(() -> {
            releaser.set(Thread.currentThread());
            if (release.equals("deleteLocks")) {
                a.deleteLocks(ta); // e.g. the transaction was rolled back by a timeout thread
            } else {
                a.close(); // e.g. a shutdown hook
            }
            return release;
        });
        while (releaser.get() == null || !waiting(releaser.get())) {
            Thread.sleep(1); // until the release waits for the check's step to end
        }
        tokenWrite.resume(); // the token write (re-)creates A's claim, with a token
        assertTrue(Interleavings.failureOf(check) instanceof LockingException, "A is told it does not hold");
        assertEquals(release, released.get(1, TimeUnit.MINUTES));

        clock.advance(EXPIRY.dividedBy(2)); // nobody holds the lock for 15 s...
        try {
            take(b, new Object());
        } catch (TemporaryLockingException e) {
            fail("nobody holds the lock, yet b is refused 15 s later (until A's orphaned claim expires): " + e.getMessage());
        }
    }

    @Test
    void aLateLandingEarlierAttemptIsOursAndGoesWithTheRelease() {
        DeferringStore storeA = new DeferringStore(shared);
        Locker a = locker(storeA, "a");
        Locker b = locker(shared, "b");
        Object ta = new Object();
        storeA.deferNextMutation(); // attempt 1 times out on the client, its request is still on the wire
        a.writeLock(lock, ta); // attempt 2 succeeds (and deletes attempt 1's column, which is not there yet)
        storeA.landDeferred(); // attempt 1's request arrives
        try {
            a.checkLocks(ta);
        } catch (TemporaryLockingException e) {
            a.deleteLocks(ta);
            clock.advance(EXPIRY.dividedBy(2));
            try {
                take(b, new Object());
            } catch (TemporaryLockingException again) {
                fail("a's own earlier attempt refused a (" + e.getMessage() + ") and, after a released, still blocks "
                        + "b 15 s later: " + again.getMessage());
            }
            fail("a's own earlier attempt (a late-landing retry) made a's check fail: " + e.getMessage());
        }
    }

    @Test
    void aConfigurationThatCouldNeverHoldALockIsRefusedByTheBuilder() {
        // lockWait 100 ms, expiry 150 ms: the deadline (0.99 x (expiry - lockWait) = 49.5 ms after the write) would come
        // before the read-back at 100 ms, so no lock could ever be held
        IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> locker(shared, config("a").expiry(Duration.ofMillis(150)).lockWait(Duration.ofMillis(100)).build()));
        assertTrue(e.getMessage().contains("lockWait"), e.getMessage());
        Locker ok = locker(shared, config("a").expiry(Duration.ofMillis(250)).lockWait(Duration.ofMillis(100)).build());
        assertDoesNotThrow(() -> take(ok, new Object()));
    }

    /** Parked, as a release is while it waits for a step in flight (close waits with a bound). */
    private static boolean waiting(Thread t) {
        Thread.State state = t.getState();
        return state == Thread.State.WAITING || state == Thread.State.TIMED_WAITING;
    }
}
