package dev.locker.engine;

import dev.locker.spi.Entry;
import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockingException;
import dev.locker.spi.StoreTransaction;
import dev.locker.api.TemporaryLockingException;
import dev.locker.api.TimeSource;
import dev.locker.testkit.FaultyStore;
import dev.locker.testkit.Interleavings;
import dev.locker.testkit.FencedResource;
import dev.locker.testkit.Pause;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The wait-and-read-back protocol keeps one holder and rising tokens under paused store calls and late writes.
 * Each interleaving is replayed deterministically: a {@link VirtualClock}, a real {@link InMemoryStore} behind a
 * {@link FaultyStore} that pauses the chosen store call, and a second thread for the paused operation.
 */
class WaitAndReadBackSafetyTest {

    private static final Duration EXPIRY = Duration.ofSeconds(30);
    private static final Duration LOCK_WAIT = Duration.ofMillis(100);

    private final VirtualClock clock = new VirtualClock();
    private final FaultyStore store = new FaultyStore(new InMemoryStore("safety"));
    private final ExecutorService pool = Executors.newCachedThreadPool();
    private final List<Locker> lockers = new ArrayList<>();
    private final KeyColumn lock = KeyColumn.of("vertex:42", "name");

    @AfterEach
    void tearDown() {
        pool.shutdownNow();
        lockers.forEach(Locker::close);
    }

    private Locker locker(String name) {
        return locker(config(name).build());
    }

    private Locker locker(LockerConfig config) {
        Locker l = ConsistentKeyLocker.builder(store).config(config).build();
        lockers.add(l);
        return l;
    }

    private LockerConfig.Builder config(String name) {
        return LockerConfig.builder().rid(name).expiry(EXPIRY).lockWait(LOCK_WAIT).timeSource(clock);
    }

    private static long take(Locker l, Object tx) {
        return Interleavings.take(l, KeyColumn.of("vertex:42", "name"), tx);
    }

    private <T> Future<T> async(Callable<T> c) {
        return pool.submit(c);
    }

    /**
     * A claim write (retries included) slower than the JVM-local record lives lets a second transaction of
     * the same locker take the lock; the first must not also hold when its write finally returns.
     */
    @Test
    void aSlowClaimWriteNeverGivesOneLockerTwoHolders() throws Exception {
        Locker a = locker("a");
        Object first = new Object();
        Pause stalled = store.pauseAt(FaultyStore.Op.MUTATE, 0, false);
        Future<Long> slow = async(() -> take(a, first));
        stalled.awaitArrival();
        clock.advance(EXPIRY.multipliedBy(3)); // longer than any JVM-local record of the first transaction lives
        Object second = new Object();
        take(a, second);
        stalled.resume();
        assertInstanceOf(TemporaryLockingException.class, Interleavings.failureOf(slow), "the stalled transaction does not hold");
        a.checkLocks(second);
        assertEquals(a.rid(), a.holder(lock).orElseThrow().rid());
    }

    /**
     * A holder paused inside its renewal (after reading its claim, before rewriting it) until its claim
     * expired and another process took over must not resurrect its claim and be told it renewed.
     */
    @Test
    void aPausedRenewalDoesNotResurrectAnExpiredClaim() throws Exception {
        Locker a = locker("a");
        Locker b = locker("b");
        Object ta = new Object();
        take(a, ta);
        clock.advance(EXPIRY.dividedBy(2));
        Pause rewrite = store.pauseAt(FaultyStore.Op.MUTATE, 0, false);
        Future<Object> renewal = async(() -> {
            a.renewLocks(ta);
            return "renewed";
        });
        rewrite.awaitArrival();
        clock.advance(EXPIRY); // a's claim is dead now
        Object tb = new Object();
        take(b, tb);
        rewrite.resume();
        assertInstanceOf(ExpiredLockException.class, Interleavings.failureOf(renewal), "the late renewal is refused");
        assertThrows(ExpiredLockException.class, () -> a.checkLocks(ta));
        assertEquals(b.rid(), b.holder(lock).orElseThrow().rid(), "b still holds");
        b.checkLocks(tb);
        b.renewLocks(tb);
    }

    /**
     * A holder paused after its read-back (before writing its token) gets no token that another holder
     * got, and its late write never lowers the tokens later holders get.
     */
    @Test
    void aHolderPausedAfterItsReadBackNeitherRepeatsNorLowersTokens() throws Exception {
        Locker a = locker("a");
        Locker b = locker("b");
        Locker c = locker("c");
        Locker d = locker("d");
        FencedResource resource = new FencedResource();
        Object ta = new Object();
        a.writeLock(lock, ta);
        Pause tokenWrite = store.pauseAt(FaultyStore.Op.MUTATE, 0, false);
        Future<Long> late = async(() -> {
            a.checkLocks(ta);
            return a.fencingToken(lock, ta);
        });
        tokenWrite.awaitArrival();
        clock.advance(EXPIRY.plusSeconds(1));
        List<Long> tokens = new ArrayList<>();
        for (Locker l : List.of(b, c)) {
            Object tx = new Object();
            long t = take(l, tx);
            assertTrue(resource.write(l.rid(), t, l.rid()));
            tokens.add(t);
            l.deleteLocks(tx);
        }
        tokenWrite.resume();
        assertInstanceOf(TemporaryLockingException.class, Interleavings.failureOf(late), "a does not hold: its claim expired while it was checked");
        assertThrows(LockingException.class, () -> a.fencingToken(lock, ta));
        Object td = new Object();
        long t = take(d, td);
        assertTrue(resource.write(d.rid(), t, d.rid()));
        tokens.add(t);
        assertTrue(tokens.get(0) < tokens.get(1) && tokens.get(1) < tokens.get(2), "strictly increasing: " + tokens);
    }

    /**
     * An earlier attempt that was applied (reply lost), then a failed one, then a good one: no attempt's
     * claim survives the release.
     */
    @Test
    void mixedWriteFailuresLeaveNoOrphanClaim() {
        Locker a = locker("a");
        Locker b = locker("b");
        store.scriptMutations(FaultyStore.Outcome.APPLIED_THEN_TEMPORARY_FAILURE, FaultyStore.Outcome.TEMPORARY_FAILURE,
                FaultyStore.Outcome.OK);
        store.slowNextMutations(3, Duration.ofMillis(1), clock); // each attempt gets a timestamp of its own
        Object ta = new Object();
        take(a, ta);
        a.deleteLocks(ta);
        take(b, new Object()); // no orphan of a's first attempt blocks b
    }

    /**
     * A wall-clock step at any clock reading during writeLock does not stretch the holder's belief: its
     * deadline is one monotonic reading plus the claim's lifetime.
     */
    @ParameterizedTest
    @ValueSource(ints = {1, 2, 3, 4})
    void aWallClockStepDuringTheWriteDoesNotStretchTheHoldersBelief(int stepAfterReading) {
        SteppingClock stepping = new SteppingClock(clock, stepAfterReading, Duration.ofHours(1));
        Locker a = locker(config("a").timeSource(stepping).build());
        Object ta = new Object();
        try {
            take(a, ta);
        } catch (ExpiredLockException e) {
            return; // a forward step made our own claim look dead: refused, which is safe
        }
        clock.advance(EXPIRY.plusSeconds(1));
        assertThrows(ExpiredLockException.class, () -> a.checkLocks(ta));
    }

    /** checkLocks waits lockWait on the monotonic clock; a backward wall-clock step does not make it sleep. */
    @Test
    void aBackwardWallClockStepDoesNotMakeCheckLocksSleep() {
        Locker a = locker("a");
        Object ta = new Object();
        a.writeLock(lock, ta);
        clock.stepWallClock(Duration.ofHours(-1));
        long before = clock.nanoTime();
        try {
            a.checkLocks(ta);
        } catch (ExpiredLockException e) {
            // acceptable: what is not is to wait an hour and then report the lock as held
        }
        assertTrue(clock.nanoTime() - before <= LOCK_WAIT.toNanos(), "waited "
                + Duration.ofNanos(clock.nanoTime() - before) + " on the monotonic clock");
    }

    /** An expected-value-checking store refuses a transaction begun by another store. */
    @Test
    void anExpectedValueCheckingStoreRefusesAnotherStoresTransaction() {
        Locker a = locker("a");
        ExpectedValueCheckingStore one = new ExpectedValueCheckingStore(new InMemoryStore("one"), a);
        ExpectedValueCheckingStore two = new ExpectedValueCheckingStore(new InMemoryStore("two"), a);
        StoreTransaction fromOne = one.beginTransaction();
        byte[] k = {1};
        byte[] c = {2};
        assertThrows(IllegalArgumentException.class, () -> two.acquireLock(k, c, null, fromOne));
        assertThrows(IllegalArgumentException.class, () -> two.mutate(k, List.of(new Entry(c, c)), List.of(), fromOne));
        assertThrows(IllegalArgumentException.class, () -> two.getSlice(k, c, new byte[0], fromOne));
        fromOne.rollback();
    }

    /** two lockers built from one configuration are two owners: they never both hold. */
    @Test
    void oneConfigurationForTwoLockersGivesTwoOwners() {
        LockerConfig shared = config("shared").build();
        Locker a = locker(shared);
        Locker b = locker(shared);
        assertNotEquals(a.rid(), b.rid(), "a rid is unique per locker instance");
        take(a, new Object());
        assertThrows(TemporaryLockingException.class, () -> take(b, new Object()));
    }

    /** On the wait-and-read-back protocol, a force-released holder learns it at its next verification. */
    @Test
    void aForceReleasedHolderLearnsItAtItsNextCheck() {
        Locker a = locker("a");
        Locker operator = locker("operator");
        Object ta = new Object();
        take(a, ta);
        assertTrue(operator.forceRelease(lock));
        assertThrows(ExpiredLockException.class, () -> a.verifyLocks(ta));
        assertThrows(ExpiredLockException.class, () -> a.checkLocks(ta));
    }

    /** A clock whose wall reading steps once, right after its Nth reading (an NTP step landing mid-operation). */
    private static final class SteppingClock implements TimeSource {
        private final VirtualClock base;
        private final int stepAfter;
        private final Duration step;
        private final AtomicInteger readings = new AtomicInteger();

        SteppingClock(VirtualClock base, int stepAfter, Duration step) {
            this.base = base;
            this.stepAfter = stepAfter;
            this.step = step;
        }

        @Override
        public Instant now() {
            Instant t = base.now();
            if (readings.incrementAndGet() == stepAfter) {
                base.stepWallClock(step);
            }
            return t;
        }

        @Override
        public long nanoTime() {
            return base.nanoTime();
        }

        @Override
        public void sleep(Duration d) throws InterruptedException {
            base.sleep(d);
        }
    }
}
