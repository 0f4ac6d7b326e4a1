package dev.locker.engine;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockProbe;
import dev.locker.api.LockTransaction;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.spi.Entry;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.spi.PermanentStoreException;
import dev.locker.spi.StoreTransaction;
import dev.locker.testkit.FaultyStore;
import dev.locker.testkit.Interleavings;
import dev.locker.testkit.Pause;
import dev.locker.testkit.StepPauses;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.parallel.Isolated;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/** Closing a locker or a lease waits for steps in flight and leaves no claim, no mediator entry and no thread behind. */
// alone: it looks for locker threads left in the JVM, and other classes' lockers start some
@Isolated
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class CloseTest {

    private static final Duration EXPIRY = Duration.ofSeconds(30);

    private static final Duration LOCK_WAIT = Duration.ofMillis(100);

    private final VirtualClock clock = new VirtualClock();

    private final InMemoryStore shared = new InMemoryStore("shared");

    private final ExecutorService pool = Executors.newCachedThreadPool();

    private final List<Locker> lockers = new ArrayList<>();

    private final KeyColumn lock = KeyColumn.of("core", "c");

    private final KeyColumn x = KeyColumn.of("core", "x");

    private final KeyColumn y = KeyColumn.of("core", "y");

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

    /** How many claims {@code lock}'s row holds (record and token columns, from 0xfe on, aside). */
    private long claims(KeyColumn l) {
        byte[] end = new byte[64];
        Arrays.fill(end, (byte) 0xff);
        List<Entry> row = shared.getSlice(l.encoded(), new byte[0], end, shared.beginTransaction());
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

    /** How many claims {@code l}'s row holds in {@code store} (record and token columns, from 0xfe on, aside). */
    private static long claims(KeyColumnValueStore store, KeyColumn l) {
        byte[] end = new byte[64];
        Arrays.fill(end, (byte) 0xff);
        List<Entry> row = store.getSlice(l.encoded(), new byte[0], end, store.beginTransaction());
        return row.stream().filter(e -> e.column().length == 0 || (e.column()[0] & 0xff) < 0xfe).count();
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

    /**
     * {@code close()} waits for a release already in flight, so no claim of the locker outlives it. Otherwise, with a
     * backend the locker owns, the release would fail on the closed client and the claim would stay until it expired.
     *
     * <p>Interleaving: lease held; thread T closes the lease and pauses inside its delete, before the store. The main
     * thread closes the locker; when close returns, the claim is gone.
     */
    @Test
    void closeReturnsOnlyOnceAReleaseInFlightRemovedItsClaim() throws Exception {
        FaultyStore fa = new FaultyStore(shared);
        Locker a = locker(fa, config("a").build());
        Lease lease = a.acquire(lock, "job");
        assertEquals(1, claims(lock));
        Pause delete = fa.pauseAt(FaultyStore.Op.MUTATE, 0, false); // the lease's delete
        Future<?> closing = async(() -> {
            lease.close();
            return null;
        });
        delete.awaitArrival();
        // the locker's close, from a thread of its own; what the store holds the moment it returns
        Future<Long> closed = async(() -> {
            a.close();
            return claims(lock);
        });
        Thread.sleep(200); // the release stays paused meanwhile: a close that does not wait for it returns now
        delete.resume();
        assertEquals(0L, get(closed), "after locker.close() returned, no claim of it is left in the store");
        get(closing);
    }

    /**
     * Closing a lease while its renewal is in flight (paused after the store answered): the close waits for it, the
     * renewal fails, and the close deletes the claim it renewed: the claim is gone when close returns.
     * After the locker's close no thread of its background is left running.
     */
    @Test
    void closeWaitsForARenewalInFlightAndLeavesNoBackgroundThread() throws Exception {
        Set<Thread> before = Thread.getAllStackTraces().keySet();
        StepPauses pauses = new StepPauses();
        Locker a = locker(shared, config("a").probe(pauses).build());
        Lease lease = a.acquire(lock, "job").keepAlive(false);
        lease.onLost(l -> { }); // starts the background (watchdog, notifier)
        Pause renewal = pauses.after(LockProbe.Step.RENEW);
        Future<?> renewing = async(() -> {
            lease.renew();
            return null;
        });
        renewal.awaitArrival();
        Future<?> closing = async(() -> {
            lease.close();
            return null;
        });
        Thread.sleep(100);
        assertFalse(closing.isDone(), "the lease's close waits for the renewal in flight");
        renewal.resume();
        get(closing);
        assertEquals(0, claims(lock), "no claim left once the lease's close returned");
        try {
            renewing.get(1, TimeUnit.MINUTES);
            fail("the renewal that answered after the release must fail");
        } catch (ExecutionException e) {
            assertTrue(e.getCause() instanceof ExpiredLockException, e.getCause().toString());
        }
        a.close();
        List<Thread> left = List.of();
        for (int i = 0; i < 500; i++) {
            left = Thread.getAllStackTraces().keySet().stream()
                    .filter(t -> !before.contains(t) && t.isAlive() && t.getName().startsWith("locker-"))
                    .collect(Collectors.toList());
            if (left.isEmpty()) {
                break;
            }
            Thread.sleep(10);
        }
        assertEquals(List.of(), left.stream().map(Thread::getName).toList(), "threads of the closed locker still run");
    }

    /**
     * After close every call but releasing fails with IllegalStateException, including on a lease of the closed
     * locker; releasing stays harmless.
     */
    @Test
    void afterCloseEveryCallButReleasingFailsWithIllegalState() {
        Locker a = locker("a");
        Lease lease = a.acquire(lock, "job");
        Object tx = new LockTransaction("tx");
        Interleavings.take(a, x, tx);
        a.close();
        assertEquals(0, claims(lock));
        assertEquals(0, claims(x));
        List<Runnable> calls = List.of(
                () -> a.acquire(lock, "again"),
                () -> a.acquireAll(List.of(x, y), "again"),
                () -> a.tryAcquire(lock, "again", Duration.ofSeconds(1)),
                () -> a.acquireWithin(lock, "again", Duration.ZERO),
                () -> a.runOnce(lock, "again", l -> { }),
                () -> a.writeLock(y, tx),
                () -> a.checkLocks(tx),
                () -> a.verifyLocks(tx),
                () -> a.renewLocks(tx),
                () -> a.keepAlive(tx, true),
                () -> a.whenLost(x, tx, l -> { }),
                () -> a.status(x, tx),
                () -> a.fencingToken(x, tx),
                () -> a.holder(lock),
                () -> a.holding(lock),
                () -> a.forceRelease(lock, "op"),
                () -> a.lastRun(lock),
                () -> a.lastForcedRelease(lock),
                () -> a.list(new byte[0], 10, null),
                lease::renew,
                lease::check,
                lease::fencingToken,
                () -> lease.onLost(l -> { }),
                () -> lease.keepAlive(true));
        for (int i = 0; i < calls.size(); i++) {
            int n = i;
            assertThrows(IllegalStateException.class, calls.get(i)::run, "call " + n);
        }
        assertFalse(lease.isValid());
        lease.close();
        a.deleteLocks(tx);
        a.close();
    }

    /**
     * {@code close()} waits for a claim whose write is in flight. The claim is then withdrawn before the backend closes,
     * so it does not stay in the store until it expires.
     *
     * <p>Interleaving: T1 writeLock(lock, tx) sends the claim's write; the store applies it, and its reply is paused.
     * T2 calls close(). The reply arrives, the hold is lost to the close, and its claim is withdrawn. When close returns,
     * no claim of the locker is left.
     */
    @Test
    void closeWaitsForAClaimWhoseWriteIsInFlight() throws Exception {
        InMemoryStore inner = new InMemoryStore("inner");
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

    /**
     * close() from a lost-listener (on the notifier thread), and from a probe inside a step of the closing thread's own
     * hold, returns; the locker's other claims are deleted.
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

    /**
     * close waits a bounded time for a step of another thread that does not end, then returns; that claim is left
     * to expire. A backend call that never answers must not hang the close of the whole locker.
     *
     * <p>Interleaving: lease held; thread T checks it and stalls inside its VERIFY step, before the store. The main
     * thread closes the locker; close returns while T is still stalled.
     */
    @Test
    void closeReturnsWhileAStepOfAnotherThreadNeverEnds() throws Exception {
        StepPauses pauses = new StepPauses();
        Locker a = locker(shared, config("a").probe(pauses).build());
        Lease lease = a.acquire(lock, "job").keepAlive(false);
        Pause check = pauses.before(LockProbe.Step.VERIFY);
        Future<?> checking = async(() -> {
            lease.check();
            return null;
        });
        check.awaitArrival();
        Future<?> closing = async(() -> {
            a.close();
            return null;
        });
        try {
            // six times the bound close keeps for operations in flight: it is a hang, not a slow close
            closing.get(6 * Closing.CLOSE_WAIT_NANOS, TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            fail("close never returned while another thread's check stalled inside the backend (its bound is "
                    + Duration.ofNanos(Closing.CLOSE_WAIT_NANOS) + ")");
        } finally {
            check.resume();
        }
        assertThrows(ExecutionException.class, () -> checking.get(1, TimeUnit.MINUTES), "the stalled check fails");
    }
}
