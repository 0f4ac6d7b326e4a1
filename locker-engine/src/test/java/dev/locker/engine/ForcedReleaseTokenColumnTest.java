package dev.locker.engine;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.LockInfo;
import dev.locker.api.LockPage;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.spi.Entry;
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
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The token column a forced release writes on the wait-and-read-back protocol keeps tokens rising and frees the lock. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ForcedReleaseTokenColumnTest {

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

    private static Object outcome(Future<?> f) throws Exception {
        try {
            return f.get(1, TimeUnit.MINUTES);
        } catch (ExecutionException e) {
            return e.getCause();
        }
    }

    /** The token columns (first byte 0xFF) of the lock row, as stored. */
    private List<byte[]> tokenColumns() {
        List<byte[]> out = new ArrayList<>();
        for (Entry e : shared.getSlice(lock.encoded(), new byte[0], new byte[0], shared.beginTransaction())) {
            if (e.column().length > 0 && e.column()[0] == (byte) 0xFF) {
                out.add(e.column());
            }
        }
        return out;
    }

    /** Whether A still holds after its renewal: one verify round trip, and its belief. */
    private boolean stillHolds(Locker a, Object ta) {
        try {
            a.verifyLocks(ta);
            return believesItHolds(a, ta);
        } catch (ExpiredLockException told) {
            return false;
        }
    }

    /**
     * The operator's unconditional release reads A's claim before its token is written, then stalls before its delete.
     * A confirms (token 1) and renews; its renewal reads the row and stalls before its rewrite. The delete lands, then the
     * rewrite. A does not hold on, and the lock is never shown with A's token again.
     */
    @Test
    void anUnconditionalReleaseThatReadTheClaimUnconfirmedIsNeverUndoneByItsRenewal() throws Exception {
        FaultyStore storeA = new FaultyStore(shared);
        FaultyStore storeOp = new FaultyStore(shared);
        Locker a = locker(storeA, "a");
        Locker operator = locker(storeOp, "operator");
        Object ta = new Object();
        a.writeLock(lock, ta);

        Pause beforeDelete = storeOp.pauseAt(FaultyStore.Op.MUTATE, 1, false); // #0 is the record, #1 the delete
        Future<Boolean> release = async(() -> operator.forceRelease(lock, "a hangs"));
        beforeDelete.awaitArrival(); // the operator read A's claim carrying token 0

        a.checkLocks(ta);
        long t = a.fencingToken(lock, ta);
        assertTrue(believesItHolds(a, ta), "A holds with token " + t + " before the removal lands");
        Pause rewrite = storeA.pauseAt(FaultyStore.Op.MUTATE, 0, false);
        Future<String> renewal = async(() -> {
            a.renewLocks(ta);
            return "renewed";
        });
        rewrite.awaitArrival(); // A's renewal read its claim (token t) and is about to rewrite it

        beforeDelete.resume();
        assertEquals(Boolean.TRUE, outcome(release), "the release removed A's claim column");
        rewrite.resume();
        Object renewed = outcome(renewal);

        boolean holds = stillHolds(a, ta);
        LockInfo shown = operator.holding(lock).orElse(null);
        assertFalse(holds || shown != null && shown.fencingToken() == t,
                "forceRelease(lock, r) returned true after removing A's claim (A held token " + t + " then), yet A's"
                        + " renewal (" + renewed + ") put it back: A believes it holds=" + holds + ", the lock shows "
                        + shown + "; token columns: " + tokenColumns().size());
    }

    /**
     * The same renewal in flight across an unconditional release that read the claim with its token: the renewal fails
     * its confirm on the release's column, withdraws the claim and tells A.
     */
    @Test
    void anUnconditionalReleaseThatSawTheTokenBeatsTheRenewalInFlight() throws Exception {
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
        assertTrue(operator.forceRelease(lock, "a hangs"));
        rewrite.resume();
        assertInstanceOf(ExpiredLockException.class, outcome(renewal), "the renewal fails its confirm on token " + t);
        assertFalse(stillHolds(a, ta));
        assertTrue(operator.holding(lock).isEmpty(), "the rewritten claim was withdrawn");
    }

    /**
     * A claim granted after either kind of release gets a token above the release's column, and verifies, renews and
     * checks without tripping on it. Over 20 cycles of take and release of both kinds, the row keeps at most four token
     * columns: the high-water mark of the previous holder and release, the holder's own, and its release's.
     */
    @Test
    void holdersAfterAReleaseAreNotFailedByItsColumnAndTheRowStaysSmall() {
        Locker operator = locker(shared, "operator");
        long last = 0;
        for (int i = 0; i < 20; i++) {
            Locker b = locker(shared, "b" + i);
            Object tb = new Object();
            long t = Interleavings.take(b, lock, tb);
            assertTrue(t > last, "token " + t + " after " + last);
            b.verifyLocks(tb);
            clock.advance(Duration.ofSeconds(1));
            b.renewLocks(tb);
            b.verifyLocks(tb);
            assertEquals(t, operator.holding(lock).orElseThrow().fencingToken());
            assertTrue(tokenColumns().size() <= 4, "cycle " + i + ": " + tokenColumns().size() + " token columns");
            boolean released = i % 2 == 0 ? operator.forceRelease(lock, "cycle " + i)
                    : operator.forceRelease(lock, "cycle " + i, t);
            assertTrue(released);
            assertThrows(ExpiredLockException.class, () -> b.verifyLocks(tb));
            b.deleteLocks(tb);
            assertTrue(operator.holding(lock).isEmpty());
            assertTrue(operator.holder(lock).isEmpty());
            assertTrue(tokenColumns().size() <= 4, "cycle " + i + ": " + tokenColumns().size() + " token columns");
            last = t;
        }
    }

    /**
     * A row that holds nothing but token columns (the holder's and the release's "forced" column) lists no lock and
     * shows no holder. The "forced" column is never decoded as a claim, and the lock is free at once.
     */
    @Test
    void aRowOfOnlyTokenColumnsIsFreeAndListsNothing() {
        Locker a = locker(shared, "a");
        Locker operator = locker(shared, "operator");
        Object ta = new Object();
        long t = Interleavings.take(a, lock, ta);
        assertTrue(operator.forceRelease(lock, "r", t));
        assertEquals(2, tokenColumns().size(), "A's token column and the release's");
        assertTrue(operator.holding(lock).isEmpty());
        assertTrue(operator.holder(lock).isEmpty());
        LockPage page = operator.list(new byte[0], 10, null);
        assertTrue(page.locks().isEmpty(), "listed " + page.locks());
        assertFalse(operator.forceRelease(lock, "again", t), "nothing carries " + t + " any more");
        assertFalse(operator.forceRelease(lock, "again"), "no claim left: the row's token columns are not claims");
        Object tb = new Object();
        long u = Interleavings.take(locker(shared, "b"), lock, tb);
        assertEquals(t + 1, u);
    }

    /**
     * A holds t; B's claim is junior, and its check reads A live with a token, so it backs off whatever the release does.
     * After the release by token, B takes the lock with t + 1: tokens never repeat across a release.
     */
    @Test
    void tokensStayMonotonicAcrossAReleaseByToken() {
        Locker a = locker(shared, "a");
        Locker b = locker(shared, "b");
        Locker operator = locker(shared, "operator");
        Object ta = new Object();
        long t = Interleavings.take(a, lock, ta);
        Object tb = new Object();
        b.writeLock(lock, tb);
        assertThrows(dev.locker.api.TemporaryLockingException.class, () -> b.checkLocks(tb));
        b.deleteLocks(tb);
        assertTrue(operator.forceRelease(lock, "a hangs", t));
        Object tb2 = new Object();
        long u = Interleavings.take(b, lock, tb2);
        assertTrue(u > t, u + " after " + t);
        b.renewLocks(tb2);
        b.verifyLocks(tb2);
        assertThrows(ExpiredLockException.class, () -> a.verifyLocks(ta));
    }
}
