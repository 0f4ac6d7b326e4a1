package dev.locker.local;

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

    private final InMemoryStore shared = new InMemoryStore("ftok-review");

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
     * Finding 1. A holds with token t and is renewing: its renewal has read the row (claim there) and is about to
     * rewrite the claim column. The operator's {@code forceRelease(lock, r, t)} deletes the column, returns true and
     * records that A was released; then A's renewal rewrites the column (a blind write) and confirms: A holds on,
     * never told, and the lock shows A with token t again. The class comment names this as a limit of every forced
     * release on a store without conditional writes ("the operator must repeat it"), but the conditional form's
     * contract (Locker javadoc) says the holder taken from learns FORCE_RELEASED and true means the claim was removed,
     * and the CLI prints "released ... with token t" and exits 0.
     */
    @Test
    void aRenewalInFlightUndoesAForcedReleaseByTokenThatReturnedTrue() throws Exception {
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
     * Finding 2. Two claim columns can carry the same token for a moment (the safety argument allows it: two
     * claimants that both wrote a token; one of them backs off at its confirm). A read its row back as senior and is
     * about to write token 1 when it stalls past its expiry; B takes the lock with token 1; A's late write lands
     * (token 1 in A's dead column) and A stalls again before its confirm. The operator sees B holding with token 1 and
     * releases by token 1: {@code deleteClaimWithToken} deletes the FIRST column carrying 1 in row order, A's dead
     * one, returns true and records B as released, while B's claim stays the holder ({@code holding} and
     * {@code locker show} still show it with token 1; B learns of a loss at its next verify only because A's stale token
     * column is left behind, see the report). Suggested fix:
     * match only the live claim that {@code Row.holder(now)} picks (or delete every live column carrying the token),
     * as the Redis script (live claims only) and the other backends do.
     */
    @Test
    void aDeadColumnWithTheHoldersTokenIsRemovedInsteadOfTheHolder() throws Exception {
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
     * Sound (as documented): the operator read A with token t, then stalls before its record write; A releases and B
     * takes the lock with a higher token. The release goes on: the record names A (the holder of t, never B), the
     * delete finds A's column gone, B keeps the lock and is not told anything. The return is true, as the javadoc
     * says for this protocol.
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
     * Sound: a claim not confirmed yet carries token 0 and is shown with 0; no expected token (at least 1) matches it,
     * and the release leaves it to confirm.
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
