package dev.locker.local;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.ForcedRelease;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockLost;
import dev.locker.api.LockProbe;
import dev.locker.api.LockTransaction;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LossReason;
import dev.locker.api.TemporaryLockingException;
import dev.locker.api.TimeSource;
import dev.locker.spi.Entry;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.spi.PermanentStoreException;
import dev.locker.spi.StoreTransaction;
import dev.locker.testkit.FaultyStore;
import dev.locker.testkit.Pause;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Adversarial review of today's core changes (forced-release token attribution, close waiting for operations in
 * flight, keep-alive stopping on a lost hold, per-locker clocks in a shared mediator, the once-only multi-lock
 * listener) on the {@code mem:} backend (ConsistentKeyLocker over a real {@link InMemoryStore}).
 *
 * <p>Findings are {@code @Disabled("finding N: ...")} tests that fail on the reviewed code (run them with
 * {@code -Djunit.jupiter.conditions.deactivate='org.junit.*DisabledCondition'}). The enabled tests are attacks that
 * found the code sound. No test asserts a timing: waits are bounded only so that a failure ends the test.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class TodayReviewTest {

    private static final Duration EXPIRY = Duration.ofSeconds(30);
    private static final Duration LOCK_WAIT = Duration.ofMillis(100);

    private final VirtualClock clock = new VirtualClock();
    private final InMemoryStore shared = new InMemoryStore("today-review");
    private final ExecutorService pool = Executors.newCachedThreadPool();
    private final List<Locker> lockers = new ArrayList<>();
    private final KeyColumn lock = KeyColumn.of("today", "c");
    private final KeyColumn x = KeyColumn.of("today", "x");
    private final KeyColumn y = KeyColumn.of("today", "y");

    @AfterEach
    void tearDown() {
        pool.shutdownNow();
        lockers.forEach(Locker::close);
    }

    private LockerConfig.Builder config(String rid) {
        return LockerConfig.builder().rid(rid).expiry(EXPIRY).lockWait(LOCK_WAIT).timeSource(clock);
    }

    private Locker locker(KeyColumnValueStore store, LockerConfig config) {
        Locker l = ConsistentKeyLocker.builder(store).config(config).build();
        lockers.add(l);
        return l;
    }

    private Locker locker(String rid) {
        return locker(shared, config(rid).build());
    }

    /** How many claims {@code l}'s row holds in {@code store} (record and token columns, from 0xfe on, aside). */
    private static long claims(KeyColumnValueStore store, KeyColumn l) {
        byte[] end = new byte[64];
        Arrays.fill(end, (byte) 0xff);
        List<Entry> row = store.getSlice(l.encoded(), new byte[0], end, store.beginTransaction());
        return row.stream().filter(e -> e.column().length == 0 || (e.column()[0] & 0xff) < 0xfe).count();
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

    /** A store that refuses every call once closed, as a client closed by closeBackend does; the data stays. */
    private static final class ClosingStore implements KeyColumnValueStore {
        private final KeyColumnValueStore real;
        private volatile boolean closed;

        ClosingStore(KeyColumnValueStore real) {
            this.real = real;
        }

        private void open() {
            if (closed) {
                throw new PermanentStoreException("store " + real.name() + " is closed (its client was closed)");
            }
        }

        @Override
        public String name() {
            return real.name();
        }

        @Override
        public List<Entry> getSlice(byte[] key, byte[] start, byte[] end, StoreTransaction tx) {
            open();
            return real.getSlice(key, start, end, tx);
        }

        @Override
        public void mutate(byte[] key, List<Entry> additions, List<byte[]> deletions, StoreTransaction tx) {
            open();
            real.mutate(key, additions, deletions, tx);
        }

        @Override
        public List<byte[]> getKeys(byte[] keyPrefix, byte[] startAfter, int limit, StoreTransaction tx) {
            open();
            return real.getKeys(keyPrefix, startAfter, limit, tx);
        }

        @Override
        public StoreTransaction beginTransaction() {
            return real.beginTransaction();
        }

        @Override
        public void close() {
            closed = true;
        }
    }

    // =================================================================================================================
    // Findings
    // =================================================================================================================

    /**
     * Finding 1 (change 4): close() does not wait for a claim whose write is in flight; it releases that claim's
     * mediator entry itself, so {@code awaitOperationsInFlight} finds nothing to wait for and closeBackend cuts the
     * ground from under the write: the claim lands in the store, its withdrawal fails on the closed backend, and it
     * stays until it expires (the exact outcome the new javadoc says the wait prevents).
     *
     * <p>Interleaving: T1 writeLock(lock, tx): takes the entry, adds the hold to the transaction's record, passes the
     * closed check, sends the claim's write; the store applies it, the reply is in flight (paused). T2 close():
     * closed=true; removes the transaction's record and finish(hold, lose(LOCKER_CLOSED)): the state before has no
     * status, so nothing is deleted, and releaseHold's finally removes the mediator entry; awaitOperationsInFlight sees
     * no entry of this locker and returns at once; closeBackend closes the store. The reply arrives: the hold is
     * lost, withdraw fails (store closed), and the claim is left in the store.
     */
    @Test
    void f1_closeWaitsForAClaimWhoseWriteIsInFlight() throws Exception {
        InMemoryStore inner = new InMemoryStore("today-f1");
        FaultyStore faulty = new FaultyStore(inner);
        Locker a = ConsistentKeyLocker.builder(new ClosingStore(faulty)).config(config("a").build())
                .closeStoreOnClose(true).build();
        lockers.add(a);
        Pause replyInFlight = faulty.pauseAt(FaultyStore.Op.MUTATE, 0, true); // the claim's write, applied
        Object tx = new Object();
        Future<Throwable> claiming = async(() -> {
            try {
                a.writeLock(lock, tx);
                return null;
            } catch (RuntimeException e) {
                return e;
            }
        });
        replyInFlight.awaitArrival();
        assertEquals(1, claims(inner, lock), "the claim is in the store, its reply in flight");

        Future<Boolean> closing = async(() -> {
            a.close();
            return replyInFlight.hasArrived() && !claiming.isDone(); // returned while the write was still in flight
        });
        Boolean returnedWhileInFlight = null;
        try {
            returnedWhileInFlight = closing.get(2, TimeUnit.SECONDS); // a correct close is still waiting here
        } catch (TimeoutException stillWaiting) {
            // expected: it waits for the write in flight
        }
        replyInFlight.resume();
        get(claiming);
        boolean late = returnedWhileInFlight != null ? returnedWhileInFlight : get(closing);
        long left = claims(inner, lock);
        assertEquals(0, left, "close() returned while the claim's write was in flight (" + late + "); the claim it "
                + "wrote was left in the store after close, until it expires");
    }

    // =================================================================================================================
    // Attacks that found the code sound
    // =================================================================================================================

    /**
     * Change 1: a forced release by token takes claim T1 of locker a; a later claim T2 of the same locker, lost within
     * one expiry of that release for another reason (its column is gone: the store lost it), is not blamed on the
     * release (the time heuristic alone would have said FORCE_RELEASED).
     */
    @Test
    void aLaterClaimOfTheSameLockerIsNotBlamedOnTheReleaseOfAnEarlierOne() {
        Locker a = locker("a");
        Locker op = locker("op");
        Lease first = a.acquire(lock, "first");
        long t1 = first.fencingToken();
        assertTrue(op.forceRelease(lock, "stuck", t1));
        ExpiredLockException e1 = assertThrows(ExpiredLockException.class, first::check);
        assertEquals(LossReason.FORCE_RELEASED, e1.reason());
        assertEquals(t1, op.lastForcedRelease(lock).orElseThrow().releasedToken().orElseThrow());
        first.close();

        Lease second = a.acquire(lock, "second");
        long t2 = second.fencingToken();
        assertTrue(t2 > t1);
        // the store loses the claim column (not a forced release): every column of the row below the records
        byte[] end = new byte[]{(byte) 0xfe};
        List<byte[]> cols = new ArrayList<>();
        for (Entry e : shared.getSlice(lock.encoded(), new byte[0], end, shared.beginTransaction())) {
            cols.add(e.column());
        }
        shared.mutate(lock.encoded(), List.of(), cols, shared.beginTransaction());
        ExpiredLockException e2 = assertThrows(ExpiredLockException.class, second::check);
        assertFalse(e2.reason() == LossReason.FORCE_RELEASED, "a loss of claim " + t2 + " blamed on the release of "
                + t1 + ": " + e2);
        second.close();
    }

    /**
     * Change 1, wait-and-read-back: a forced release that reads the claim before it is confirmed records no token
     * (0); the holder, whose hold has no token either, still learns FORCE_RELEASED (the fallback), and so does a
     * holder that confirmed after the release read the row.
     */
    @Test
    void aReleaseOfAClaimNotConfirmedYetIsStillToldAsForced() {
        Locker a = locker("a");
        Locker op = locker("op");
        Object tx = new LockTransaction("three-phase");
        a.writeLock(lock, tx); // written, not confirmed: holding() shows token 0
        assertEquals(0, op.holding(lock).orElseThrow().fencingToken());
        assertTrue(op.forceRelease(lock, "stuck"));
        ForcedRelease rec = op.lastForcedRelease(lock).orElseThrow();
        assertTrue(rec.releasedToken().isEmpty(), rec.toString());
        clock.advance(LOCK_WAIT.plusMillis(1));
        ExpiredLockException e = assertThrows(ExpiredLockException.class, () -> a.checkLocks(tx));
        assertEquals(LossReason.FORCE_RELEASED, e.reason(), e.toString());
        a.deleteLocks(tx);
    }

    /**
     * Change 4: close() from a lost-listener (on the notifier thread) and from a probe inside a step of the closing
     * thread's own hold returns, and the other claims of the locker are deleted.
     */
    @Test
    void closeFromAListenerOrFromInsideAStepReturnsAndDeletesTheClaims() throws Exception {
        Locker a = locker("a");
        Locker b = locker("b");
        Lease lx = a.acquire(x, "x");
        Lease ly = a.acquire(y, "y");
        CopyOnWriteArrayList<String> seen = new CopyOnWriteArrayList<>();
        lx.onLost(loss -> {
            a.close();
            seen.add("closed from the listener");
        });
        assertTrue(b.forceRelease(x, "go", lx.fencingToken()));
        assertThrows(ExpiredLockException.class, lx::check);
        for (int i = 0; i < 6000 && seen.isEmpty(); i++) {
            Thread.sleep(10);
        }
        assertEquals(List.of("closed from the listener"), seen);
        assertFalse(ly.isValid());
        assertEquals(0, claims(shared, y), "y's claim deleted by close");

        // a probe that closes its locker inside a CHECK step of a claim the same thread is confirming
        AtomicReference<Locker> self = new AtomicReference<>();
        Locker c = locker(shared, config("c").probe(new LockProbe() {
            @Override
            public void before(Step step, KeyColumn l, String rid) {
                if (step == Step.CHECK && l.equals(lock)) {
                    self.get().close();
                }
            }
        }).build());
        self.set(c);
        Lease other = c.acquire(x, "other");
        Object tx = new LockTransaction("t");
        c.writeLock(lock, tx);
        Future<Object> checking = async(() -> {
            clock.advance(LOCK_WAIT.plusMillis(1));
            try {
                c.checkLocks(tx);
                return "checked";
            } catch (RuntimeException e) {
                return e;
            }
        });
        Object r = get(checking);
        assertTrue(r instanceof RuntimeException, "the check on a closed locker fails: " + r);
        assertFalse(other.isValid());
        assertEquals(0, claims(shared, x) + claims(shared, lock), "claims deleted");
    }

    /** Change 6: a lease on two locks that loses both tells its listener once. */
    @Test
    void aMultiLockLeaseThatLosesBothLocksTellsItsListenerOnce() throws Exception {
        Locker a = locker("a");
        Locker op = locker("op");
        Lease both = a.acquireAll(List.of(x, y), "both");
        CopyOnWriteArrayList<LockLost> told = new CopyOnWriteArrayList<>();
        both.onLost(told::add);
        assertTrue(op.forceRelease(x, "go"));
        assertTrue(op.forceRelease(y, "go"));
        assertThrows(ExpiredLockException.class, both::check);
        assertThrows(ExpiredLockException.class, both::check);
        for (int i = 0; i < 200 && told.isEmpty(); i++) {
            Thread.sleep(10);
        }
        Thread.sleep(200); // a second telling, if any, is queued on the same notifier behind the first
        assertEquals(1, told.size(), told.toString());
        both.close();
    }

    /**
     * Change 5: a mediator made by a locker on the system clock, shared with a locker on a virtual clock (whose
     * monotonic origin is far from the system's): the virtual-clock locker's live hold is judged on its own clock, so
     * the system-clock locker's transaction does not take it over.
     */
    @Test
    void aSharedMediatorJudgesEachHoldOnItsOwnLockersClock() {
        Locker sys = locker(shared, LockerConfig.builder().rid("sys").expiry(EXPIRY).lockWait(LOCK_WAIT)
                .localWait(Duration.ofMillis(50)).timeSource(TimeSource.system()).build());
        Locker virt = locker(shared, config("virt").localArbitration(sys.arbitration()).build());
        Lease held = virt.acquire(lock, "held");
        TemporaryLockingException e = assertThrows(TemporaryLockingException.class,
                () -> sys.acquire(lock, "contender"));
        assertTrue(e.getMessage().contains("in this process"), e.getMessage());
        assertTrue(held.isValid());
        held.check();
        held.close();
    }
}
