package dev.locker.engine;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockProbe;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.TimeSource;
import dev.locker.spi.Entry;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.testkit.Interleavings;
import dev.locker.testkit.Pause;
import dev.locker.testkit.StepPauses;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.reflect.Field;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/** Arbitration between transactions of one process: local waiters never overlap, and a taken-over hold never comes back. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class LocalArbitrationTest {

    private static final Duration EXPIRY = Duration.ofSeconds(30);

    private static final Duration LOCK_WAIT = Duration.ofMillis(100);

    private final VirtualClock clock = new VirtualClock();

    private final InMemoryStore shared = new InMemoryStore("shared");

    private final ExecutorService pool = Executors.newCachedThreadPool();

    private final List<Locker> lockers = new ArrayList<>();

    private final KeyColumn lock = KeyColumn.of("core", "c");

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

    private static <T> T get(Future<T> f) throws Exception {
        try {
            return f.get(1, TimeUnit.MINUTES);
        } catch (ExecutionException e) {
            throw new AssertionError("the operation failed: " + e.getCause(), e.getCause());
        }
    }

    private Locker locker(String name, LockerConfig.Builder config) {
        Locker l = ConsistentKeyLocker.builder(new InMemoryStore(name)).config(config.rid(name).build()).build();
        lockers.add(l);
        return l;
    }

    private static Object field(Class<?> owner, String name, Object of) throws Exception {
        Field f = owner.getDeclaredField(name);
        f.setAccessible(true);
        return f.get(of);
    }

    /** The holds of {@code tx} in {@code l} (reflection on Transactions.txs and TxHolds.all). */
    @SuppressWarnings("unchecked")
    private static Hold[] holdsOf(Locker l, Object tx) throws Exception {
        java.util.Map<Object, Object> txs = (java.util.Map<Object, Object>) field(Transactions.class, "txs",
                field(LockerEngine.class, "transactions", l));
        for (Object holds : txs.values()) {
            java.lang.reflect.Method all = holds.getClass().getDeclaredMethod("all");
            all.setAccessible(true);
            Hold[] a = (Hold[]) all.invoke(holds);
            if (a.length > 0 && a[0].tx == tx) {
                return a;
            }
        }
        return new Hold[0];
    }

    /**
     * A stalled transaction whose entry was taken over after its deadline learns it and cannot bring it back:
     * writeLock is idempotent on its lost hold (no new claim), checkLocks and renewLocks fail, and its deleteLocks
     * removes neither the new holder's entry nor its claim.
     */
    @Test
    void aStalledTransactionTakenOverLocallyCannotBringItsEntryBack() {
        Locker a = locker("a");
        LocalLockMediator m = (LocalLockMediator) a.arbitration();
        Object t1 = new Object();
        Object t2 = new Object();
        Interleavings.take(a, lock, t1);
        clock.advance(EXPIRY.plusSeconds(1)); // t1 stalls past its deadline (its claim expired in the store too)
        long token2 = Interleavings.take(a, lock, t2);
        a.writeLock(lock, t1); // idempotent: the lost hold stays lost
        assertThrows(ExpiredLockException.class, () -> a.checkLocks(t1));
        assertThrows(ExpiredLockException.class, () -> a.renewLocks(t1));
        assertEquals(t2, m.holder(lock).orElseThrow());
        a.deleteLocks(t1);
        assertEquals(t2, m.holder(lock).orElseThrow(), "t1's release removed only its own entry");
        a.checkLocks(t2);
        a.verifyLocks(t2); // t2's claim is still the holder in the store
        assertEquals(token2, a.fencingToken(lock, t2));
        a.deleteLocks(t2);
        assertEquals(0, m.size());
    }

    /**
     * One transaction used from two threads (JanusGraph's threaded transactions), with localWait long enough for a local
     * takeover. T1 claims the lock (hold hA) and its write stalls past the expiry. T2, same transaction, takes the lock
     * over from hA (hB). The transaction keeps one hold per lock, the live one: while T1's write is in flight, status()
     * shows the lock held, and the fencing token is valid.
     */
    @Test
    void aTakeoverWithinOneTransactionShowsTheLiveHoldNotTheLostOne() throws Exception {
        dev.locker.testkit.VirtualClock clock = new dev.locker.testkit.VirtualClock();
        CountDownLatch t2Waits = new CountDownLatch(1);
        CountDownLatch t2Go = new CountDownLatch(1);
        AtomicBoolean gated = new AtomicBoolean();
        dev.locker.api.TimeSource gate = new dev.locker.api.TimeSource() {
            @Override
            public java.time.Instant now() {
                return clock.now();
            }

            @Override
            public long nanoTime() {
                return clock.nanoTime();
            }

            @Override
            public void sleep(Duration d) throws InterruptedException {
                if (Thread.currentThread().getName().equals("alloc-t2") && gated.compareAndSet(false, true)) {
                    t2Waits.countDown(); // T2 is in takeLocal's back-off, past the idempotence check
                    t2Go.await();
                }
                clock.sleep(d);
            }
        };
        dev.locker.testkit.StepPauses pauses = new dev.locker.testkit.StepPauses();
        Duration expiry = Duration.ofSeconds(1);
        Locker l = locker("takeover", LockerConfig.builder().expiry(expiry).lockWait(Duration.ofMillis(10))
                .localWait(Duration.ofSeconds(30)).timeSource(gate).probe(pauses));
        KeyColumn lock = KeyColumn.named("taken-over");
        Object tx = new Object();
        Object txX = new Object();
        l.writeLock(lock, txX);
        l.checkLocks(txX); // X holds the lock
        List<Throwable> failures = new CopyOnWriteArrayList<>();
        Thread t2 = new Thread(() -> {
            try {
                l.writeLock(lock, tx);
            } catch (Throwable e) {
                failures.add(e);
            }
        }, "alloc-t2");
        t2.start();
        assertTrue(t2Waits.await(10, TimeUnit.SECONDS));
        l.deleteLocks(txX); // X lets go
        dev.locker.testkit.Pause t1Write = pauses.before(LockProbe.Step.WRITE);
        Thread t1 = new Thread(() -> {
            try {
                l.writeLock(lock, tx);
            } catch (Throwable e) {
                failures.add(e); // its write outlived the expiry: it is told so (correct)
            }
        }, "alloc-t1");
        t1.start();
        t1Write.awaitArrival(); // hA is the entry, its write in flight
        clock.advance(expiry.multipliedBy(2)); // ... and stalls past the expiry
        t2Go.countDown();
        t2.join(10_000);
        assertTrue(failures.isEmpty(), "T2 claimed the lock: " + failures);
        try {
            String holds = java.util.Arrays.toString(holdsOf(l, tx));
            assertTrue(l.status(lock, tx).isPresent(), "the transaction holds the lock (T2's claim is written) but "
                    + "status() finds T1's lost hold first; its holds: " + holds);
            l.checkLocks(tx);
            assertTrue(l.fencingToken(lock, tx) > 0);
        } finally {
            t1Write.resume();
            t1.join(10_000);
            l.deleteLocks(tx);
        }
    }

    /**
     * Six threads of one locker take two locks in turn with tryAcquire (local contention: the waiter waits for its
     * own lock's entry to go, on a monitor shared by both locks). Nobody overlaps on a lock, and every wait ends in
     * an acquisition well inside its generous maximum (a missed wake-up costs a back-off, never the whole wait).
     */
    @Test
    void localWaitersOnTwoLocksNeverOverlapAndAllGetThrough() throws Exception {
        Locker l = locker("alloc-waiters", LockerConfig.builder().expiry(Duration.ofSeconds(20)).lockWait(Duration.ofMillis(1)));
        KeyColumn[] locks = {KeyColumn.named("w-a"), KeyColumn.named("w-b")};
        java.util.concurrent.atomic.AtomicInteger[] inside = {new java.util.concurrent.atomic.AtomicInteger(),
                new java.util.concurrent.atomic.AtomicInteger()};
        java.util.concurrent.atomic.AtomicInteger overlaps = new java.util.concurrent.atomic.AtomicInteger();
        java.util.concurrent.atomic.AtomicInteger missed = new java.util.concurrent.atomic.AtomicInteger();
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(6);
        try {
            List<java.util.concurrent.Future<?>> done = new ArrayList<>();
            for (int t = 0; t < 6; t++) {
                int me = t;
                done.add(pool.submit(() -> {
                    for (int i = 0; i < 25; i++) {
                        int w = (me + i) % 2;
                        java.util.Optional<Lease> lease = l.tryAcquire(locks[w], "w" + me, Duration.ofSeconds(30));
                        if (lease.isEmpty()) {
                            missed.incrementAndGet();
                            continue;
                        }
                        try (Lease held = lease.get()) {
                            if (inside[w].incrementAndGet() != 1) {
                                overlaps.incrementAndGet();
                            }
                            Thread.yield();
                            inside[w].decrementAndGet();
                        }
                    }
                    return null;
                }));
            }
            for (java.util.concurrent.Future<?> f : done) {
                f.get(50, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        assertEquals(0, overlaps.get(), "two threads of one JVM inside one lock");
        assertEquals(0, missed.get(), "waits that ended without the lock");
        assertEquals(0, ((LocalLockMediator) ((LockerEngine<?>) l).arbitration()).size(), "entries left");
    }
}
