package dev.locker.engine;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.ForcedRelease;
import dev.locker.api.KeyColumn;
import dev.locker.api.LockInfo;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.testkit.FaultyStore;
import dev.locker.testkit.Interleavings;
import dev.locker.testkit.Pause;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A forced release by token on the wait-and-read-back protocol removes only the claim carrying that token. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ForcedReleaseByTokenTest {

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

    private Locker locker(KeyColumnValueStore store, String name) {
        Locker l = ConsistentKeyLocker.builder(store)
                .config(LockerConfig.builder().rid(name).expiry(EXPIRY).lockWait(LOCK_WAIT).timeSource(clock).build())
                .build();
        lockers.add(l);
        return l;
    }

    private boolean believesItHolds(Locker l, Object tx) {
        return Interleavings.believesItHolds(l, lock, tx, clock);
    }

    private <T> Future<T> async(Callable<T> c) {
        return pool.submit(c);
    }

    /** The operation's outcome: its value, or its failure (never both). */
    private static Object outcome(Future<?> f) throws Exception {
        try {
            return f.get(1, TimeUnit.MINUTES);
        } catch (ExecutionException e) {
            return e.getCause();
        }
    }

    /**
     * A holds with token t, and its renewal has read the row and is about to rewrite the claim column.
     * The operator's {@code forceRelease(lock, r, t)} deletes the column and returns true. A's rewrite then lands.
     * A does not believe it holds afterwards, and the lock is never shown with token t again.
     */
    @Test
    void aRenewalInFlightNeverUndoesAForcedReleaseByTokenThatReturnedTrue() throws Exception {
        FaultyStore storeA = new FaultyStore(shared);
        Locker a = locker(storeA, "a");
        Locker operator = locker(shared, "operator");
        Object ta = new Object();
        long t = Interleavings.take(a, lock, ta);
        clock.advance(Duration.ofSeconds(10));

        Pause rewrite = storeA.pauseAt(FaultyStore.Op.MUTATE, 0, false);
        Future<String> renewal = async(() -> {
            a.renewLocks(ta);
            return "renewed";
        });
        rewrite.awaitArrival(); // A's renewal read its claim and is about to rewrite it

        assertTrue(operator.forceRelease(lock, "a hangs", t), "the claim with token " + t + " was there");
        assertEquals(a.rid(), operator.lastForcedRelease(lock).orElseThrow().released().orElseThrow().rid());
        rewrite.resume();
        Object renewed = outcome(renewal);

        boolean stillHolds;
        try {
            a.verifyLocks(ta); // one round trip: A's claim is still there and still the holder
            stillHolds = believesItHolds(a, ta);
        } catch (ExpiredLockException told) {
            stillHolds = false;
        }
        LockInfo shown = operator.holding(lock).orElse(null);
        assertFalse(stillHolds || shown != null && shown.fencingToken() == t,
                "forceRelease(lock, r, " + t + ") returned true and recorded A as released, yet A's renewal ("
                        + renewed + ") put the claim back: A believes it holds=" + stillHolds + ", the lock shows "
                        + shown);
    }

    /**
     * Two claim columns may carry the same token for a moment: A stalled past its expiry after its read-back, B took the
     * lock with token 1, and A's late token write then landed in A's dead column. The operator sees B holding with token 1
     * and releases by token 1. When the release says it removed a claim, B's claim no longer holds the lock.
     */
    @Test
    void aReleaseByTokenTakesTheLiveHolderNotADeadColumnWithItsToken() throws Exception {
        FaultyStore storeA = new FaultyStore(shared);
        Locker a = locker(storeA, "a");
        Locker b = locker(shared, "b");
        Locker operator = locker(shared, "operator");
        Object ta = new Object();
        a.writeLock(lock, ta);
        Pause beforeTokenWrite = storeA.pauseAt(FaultyStore.Op.MUTATE, 0, false);
        Pause afterTokenWrite = storeA.pauseAt(FaultyStore.Op.MUTATE, 0, true);
        Future<Object> check = async(() -> {
            a.checkLocks(ta);
            return "held";
        });
        beforeTokenWrite.awaitArrival(); // A read back its claim as the senior live one

        clock.advance(EXPIRY.plusSeconds(1)); // A's claim is dead on every clock
        Object tb = new Object();
        long tb1 = Interleavings.take(b, lock, tb);
        beforeTokenWrite.resume();
        afterTokenWrite.awaitArrival(); // A's late token write landed: its dead column carries A's token too

        LockInfo shown = operator.holding(lock).orElseThrow();
        assertEquals(b.rid(), shown.holder().rid());
        assertEquals(tb1, shown.fencingToken());
        boolean removed = operator.forceRelease(lock, "b is stuck", tb1);
        ForcedRelease record = operator.lastForcedRelease(lock).orElseThrow();
        LockInfo after = operator.holding(lock).orElse(null);
        afterTokenWrite.resume();
        Object aOutcome = outcome(check);

        assertFalse(removed && after != null && after.fencingToken() == tb1 && after.holder().rid().equals(b.rid()),
                "forceRelease(lock, r, " + tb1 + ") returned true and recorded " + record.released().orElseThrow().rid()
                        + " as released, yet B's claim with token " + tb1 + " is still the holder: " + after
                        + " (A's dead column carrying " + tb1 + " was removed instead; A's check ended with " + aOutcome
                        + ")");
    }

    /**
     * The operator read A with token t, then stalls before its record write; A releases, and B takes the lock with a
     * higher token. The release goes on: its record names A, the holder of t, and never B. B keeps the lock, told nothing.
     * The release returns true, as documented for this protocol.
     */
    @Test
    void aLockThatChangedHandsDuringTheReleaseKeepsItsNewHolder() throws Exception {
        FaultyStore storeOp = new FaultyStore(shared);
        Locker a = locker(shared, "a");
        Locker b = locker(shared, "b");
        Locker operator = locker(storeOp, "operator");
        Object ta = new Object();
        long t = Interleavings.take(a, lock, ta);
        Pause beforeRecord = storeOp.pauseAt(FaultyStore.Op.MUTATE, 0, false);
        Future<Boolean> release = async(() -> operator.forceRelease(lock, "a hangs", t));
        beforeRecord.awaitArrival(); // the operator read A with t (twice) and is about to write the record

        a.deleteLocks(ta);
        Object tb = new Object();
        long u = Interleavings.take(b, lock, tb);
        assertTrue(u > t);
        beforeRecord.resume();
        assertEquals(Boolean.TRUE, outcome(release), "the protocol's stores do not say what a delete found");

        assertTrue(believesItHolds(b, tb));
        b.verifyLocks(tb);
        b.renewLocks(tb);
        assertEquals(b.rid(), operator.holding(lock).orElseThrow().holder().rid());
        assertEquals(u, operator.holding(lock).orElseThrow().fencingToken());
        assertEquals(a.rid(), operator.lastForcedRelease(lock).orElseThrow().released().orElseThrow().rid(),
                "the record names the holder of the expected token, never the new holder");
    }

    /**
     * A claim not confirmed yet carries token 0 and is shown with 0. No expected token (at least 1) matches it, so the
     * release leaves it to confirm.
     */
    @Test
    void anUnconfirmedClaimIsNeverReleasedByToken() {
        Locker a = locker(shared, "a");
        Locker operator = locker(shared, "operator");
        Object ta = new Object();
        a.writeLock(lock, ta);
        LockInfo shown = operator.holding(lock).orElseThrow();
        assertEquals(0, shown.fencingToken());
        assertFalse(operator.forceRelease(lock, "r", 1));
        assertFalse(operator.forceRelease(lock, "r", Long.MAX_VALUE));
        assertTrue(operator.lastForcedRelease(lock).isEmpty());
        a.checkLocks(ta);
        long t = a.fencingToken(lock, ta);
        assertTrue(operator.forceRelease(lock, "r", t));
        org.junit.jupiter.api.Assertions.assertThrows(ExpiredLockException.class, () -> a.verifyLocks(ta));
    }
}
