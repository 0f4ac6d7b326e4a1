package dev.locker.hbase;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.LockInfo;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.engine.ConsistentKeyLocker;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.testkit.FaultyStore;
import dev.locker.testkit.Interleavings;
import dev.locker.testkit.Pause;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
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
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The forced release's token column on {@link HBaseKeyColumnValueStore} over the real mini cluster. A renewal that read
 * the row before the removal and rewrites its claim after it loses, by token and unconditionally: the column and the
 * removal are one {@code RowMutations}. Each "process" has its own {@link FaultyStore} over the one HBase store; claims
 * carry {@link VirtualClock} timestamps.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class HBaseForcedColumnTest {

    private static final Duration EXPIRY = Duration.ofSeconds(30);
    private static final Duration LOCK_WAIT = Duration.ofMillis(100);

    private final VirtualClock clock = new VirtualClock();
    private final ExecutorService pool = Executors.newCachedThreadPool();
    private final List<Locker> lockers = new ArrayList<>();
    private KeyColumnValueStore shared;
    private KeyColumn lock;

    @BeforeEach
    void open(TestInfo info) {
        // the shared connection stays open; closing this store does not close it
        shared = HBaseKeyColumnValueStore.open(HBaseTestCluster.get().connection(), "forced_column", "l", true);
        lock = KeyColumn.of("vertex:" + info.getDisplayName() + ":" + System.nanoTime(), "name");
    }

    @AfterEach
    void tearDown() {
        pool.shutdownNow();
        lockers.forEach(Locker::close);
        shared.close();
    }

    private Locker locker(KeyColumnValueStore store, String name) {
        Locker l = ConsistentKeyLocker.builder(store)
                .config(LockerConfig.builder().rid(name).expiry(EXPIRY).lockWait(LOCK_WAIT).timeSource(clock).build())
                .build();
        lockers.add(l);
        return l;
    }

    private <T> Future<T> async(Callable<T> c) {
        return pool.submit(c);
    }

    private static Object outcome(Future<?> f) throws Exception {
        try {
            return f.get(2, TimeUnit.MINUTES);
        } catch (ExecutionException e) {
            return e.getCause();
        }
    }

    private boolean stillHolds(Locker a, Object ta) {
        try {
            a.verifyLocks(ta);
            return Interleavings.believesItHolds(a, lock, ta, clock);
        } catch (ExpiredLockException told) {
            return false;
        }
    }

    /** A's renewal read its claim, the release by token removes it, and A's rewrite lands and fails its confirm. */
    @Test
    void aRenewalInFlightLosesToAReleaseByToken() throws Exception {
        renewalInFlight(true);
    }

    /** The same across an unconditional release that read the claim with its token. */
    @Test
    void aRenewalInFlightLosesToAnUnconditionalRelease() throws Exception {
        renewalInFlight(false);
    }

    private void renewalInFlight(boolean byToken) throws Exception {
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
        rewrite.awaitArrival();
        assertTrue(byToken ? operator.forceRelease(lock, "a hangs", t) : operator.forceRelease(lock, "a hangs"));
        rewrite.resume();
        assertInstanceOf(ExpiredLockException.class, outcome(renewal), "the renewal fails its confirm on token " + t);
        assertFalse(stillHolds(a, ta));
        assertTrue(operator.holding(lock).isEmpty(), "the rewritten claim was withdrawn");
        Locker b = locker(shared, "b");
        long u = Interleavings.take(b, lock, new Object());
        assertTrue(u > t, u + " after " + t);
    }

    /**
     * An unconditional release reads A's claim before A confirmed it, and removes it while A's renewal is in flight.
     * The renewal does not put the claim back: A no longer holds, and the lock does not show A's token.
     */
    @Test
    void anUnconditionalReleaseThatReadTheClaimUnconfirmedIsNotUndoneByItsRenewal() throws Exception {
        FaultyStore storeA = new FaultyStore(shared);
        FaultyStore storeOp = new FaultyStore(shared);
        Locker a = locker(storeA, "a");
        Locker operator = locker(storeOp, "operator");
        Object ta = new Object();
        a.writeLock(lock, ta);

        Pause beforeDelete = storeOp.pauseAt(FaultyStore.Op.MUTATE, 1, false); // #0 is the record, #1 the delete
        Future<Boolean> release = async(() -> operator.forceRelease(lock, "a hangs"));
        beforeDelete.awaitArrival();

        a.checkLocks(ta);
        long t = a.fencingToken(lock, ta);
        Pause rewrite = storeA.pauseAt(FaultyStore.Op.MUTATE, 0, false);
        Future<String> renewal = async(() -> {
            a.renewLocks(ta);
            return "renewed";
        });
        rewrite.awaitArrival();

        beforeDelete.resume();
        assertEquals(Boolean.TRUE, outcome(release));
        rewrite.resume();
        Object renewed = outcome(renewal);

        boolean holds = stillHolds(a, ta);
        LockInfo shown = operator.holding(lock).orElse(null);
        assertFalse(holds || shown != null && shown.fencingToken() == t,
                "forceRelease(lock, r) returned true after removing A's claim (A held token " + t + "), yet A's renewal ("
                        + renewed + ") put it back: A believes it holds=" + holds + ", the lock shows " + shown);
    }
}
