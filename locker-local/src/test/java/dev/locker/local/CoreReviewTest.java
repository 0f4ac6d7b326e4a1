package dev.locker.local;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockLost;
import dev.locker.api.LockTransaction;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockingException;
import dev.locker.api.LossReason;
import dev.locker.api.TemporaryLockingException;
import dev.locker.api.TimeSource;
import dev.locker.spi.Entry;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.testkit.FaultyStore;
import dev.locker.testkit.Interleavings;
import dev.locker.testkit.Pause;
import dev.locker.testkit.StepPauses;
import dev.locker.testkit.VirtualClock;
import dev.locker.api.LockProbe;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.time.Instant;
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
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Adversarial review of the shared protocol core (AbstractLocker, Hold, KeepAlive, Timer, LocalLockMediator) as the
 * {@code mem:} backend (ConsistentKeyLocker over a real {@link InMemoryStore}) and the api's {@link Lease} use it.
 *
 * <p>Findings are {@code @Disabled("finding N: ...")} tests that fail on the reviewed code (run them with
 * {@code -Djunit.jupiter.conditions.deactivate='org.junit.*DisabledCondition'}). The enabled tests are attacks that
 * found the core sound; they pin that behaviour. No test asserts a timing: waits are bounded only so that a failure
 * ends the test, and the margins are seconds.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class CoreReviewTest {

    private static final Duration EXPIRY = Duration.ofSeconds(30);
    private static final Duration LOCK_WAIT = Duration.ofMillis(100);

    private final VirtualClock clock = new VirtualClock();
    private final InMemoryStore shared = new InMemoryStore("core-review");
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

    /** Waits (bounded, 10 s) until {@code list} has at least {@code n} elements; returns whether it has. */
    private static boolean awaitSize(List<?> list, int n) throws InterruptedException {
        for (int i = 0; i < 1000 && list.size() < n; i++) {
            Thread.sleep(10);
        }
        return list.size() >= n;
    }

    @SuppressWarnings("unchecked")
    private static <E extends Throwable> void sneakyThrow(Throwable e) throws E {
        throw (E) e;
    }

    // =================================================================================================================
    // Findings
    // =================================================================================================================

    /**
     * Finding 1: the lost signal is not delivered to every listener. {@link KeepAlive#tellHere} catches only
     * {@link RuntimeException}; a listener that throws anything else (an {@link Error} such as a failed
     * {@code assert}, or a checked exception thrown undeclared, as Kotlin and Lombok's sneaky throws do; the very case
     * {@link Timer#work} is written to survive) ends the loop, and on the notifier the task itself: every listener
     * registered after it on that lease is never told.
     *
     * <p>Interleaving: a lease (keep-alive off) with two listeners, the first throwing an undeclared
     * {@link java.io.IOException}; the clock passes its deadline; another transaction of this process takes the lock
     * over (the hold is marked lost, EXPIRED). The first listener throws; the second is never called.
     */
    @Test
    void f1_aListenerThatThrowsAnUndeclaredCheckedExceptionSilencesTheListenersAfterIt() throws Exception {
        Locker a = locker("a");
        Lease first = a.acquire(lock, "first").keepAlive(false);
        List<LockLost> told = new CopyOnWriteArrayList<>();
        AtomicInteger thrower = new AtomicInteger();
        first.onLost(l -> {
            thrower.incrementAndGet();
            sneakyThrow(new java.io.IOException("listener failed (thrown undeclared)"));
        });
        first.onLost(told::add);

        clock.advance(EXPIRY.plusSeconds(1)); // past the first lease's deadline, not renewed
        Lease second = a.acquire(lock, "second"); // takes the mediator entry over: the first is lost
        assertFalse(first.isValid());
        awaitSize(told, 1);
        assertEquals(1, thrower.get(), "the throwing listener was told");
        assertEquals(List.of(LossReason.EXPIRED), told.stream().map(LockLost::reason).toList(),
                "the second listener of the lost lease was told of the loss");
        second.close();
    }

    /**
     * Finding 2: {@link Lease#onLost} promises "calls listener once when this lease is lost", but on a lease from
     * {@code acquireAll} it registers the listener on every lock, and each lock's loss tells it again: closing the
     * locker tells it once per lock (twice here); a lease of which both locks were taken over likewise.
     */
    @Test
    void f2_aLeaseOnSeveralLocksToldItsListenerOncePerLostLock() throws Exception {
        Locker a = locker("a");
        Lease lease = a.acquireAll(List.of(x, y), "both");
        List<LockLost> told = new CopyOnWriteArrayList<>();
        lease.onLost(told::add);
        a.close(); // both locks lost (LOCKER_CLOSED); close waits for the notifier (briefly)
        awaitSize(told, 1);
        Thread.sleep(200); // any further call is made by now (close awaited the notifier already)
        assertEquals(1, told.size(), "the lease's listener was told once; it was told " + told);
    }

    /**
     * Finding 3: {@link Locker#keepAlive} documents "renews every claim of tx ... until tx is released or a claim is
     * lost", and {@link KeepAlive.Kept#keptAlive} "until a renewal finds none of its holds live"; the code follows
     * the latter. A lease from {@code acquireAll} that lost one lock is invalid for good ({@code isValid()} false,
     * listeners told), yet its keep-alive goes on renewing its other claims for as long as the lease is not closed: a
     * leaked or slow-to-close lease keeps those locks from every other process indefinitely, for a holder that was
     * already told it lost.
     *
     * <p>Real clock (the keep-alive's scheduler runs on it): expiry 1.5 s, renewals every 0.5 s. The lease holds x and
     * y; another locker force-releases x; the next renewal finds x gone (the lease is told); y's claim in the store is
     * then still renewed.
     */
    @Test
    void f3_keepAliveGoesOnRenewingTheOtherLocksOfALostMultiLockLease() throws Exception {
        LockerConfig.Builder real = LockerConfig.builder().expiry(Duration.ofMillis(1_500)).lockWait(Duration.ofMillis(20))
                .timeSource(TimeSource.system());
        Locker a = locker(shared, real.rid("a").build());
        Locker operator = locker(shared, real.rid("op").build());
        Lease lease = a.acquireAll(List.of(x, y), "both"); // kept alive
        List<LockLost> told = new CopyOnWriteArrayList<>();
        lease.onLost(told::add);

        assertTrue(operator.forceRelease(x, "review"));
        assertTrue(awaitSize(told, 1), "the lease learned that x was lost");
        assertFalse(lease.isValid(), "the lease is no longer valid");
        Instant afterLoss = operator.holding(y).orElseThrow().expiresAt();
        boolean renewedAgain = false;
        for (int i = 0; i < 300 && !renewedAgain; i++) { // bounded: 3 s, six renewal periods
            Thread.sleep(10);
            renewedAgain = operator.holding(y).map(h -> h.expiresAt().isAfter(afterLoss)).orElse(false);
        }
        assertFalse(renewedAgain, "after the lease lost x (and was told), its keep-alive renewed y again: "
                + operator.holding(y));
        lease.close();
    }

    /**
     * Finding 4: {@code close()} does not wait for a release already in flight. A lease's close that started just
     * before the locker's close owns the release ({@link Hold#markDone}); the locker's close skips that hold and goes
     * on to stop the background and close the backend ({@code closeBackend}) while the claim is still in the store.
     * After {@code close()} returns, a claim of the closed locker is still there; with a backend the locker owns
     * (closeStoreOnClose, or a client such as Redis, MongoDB or HBase closed by closeBackend) the release in flight
     * then fails on the closed client and the claim outlives the locker until it expires. The same holds for
     * {@code deleteLocks(tx)} of a transaction in flight (close no longer finds the transaction in its map) and for
     * a claim written while close runs (its withdrawal runs after close).
     *
     * <p>Interleaving: lease held; thread T closes the lease and pauses inside its delete, before the store (a slow
     * request); the main thread closes the locker: it returns; the claim is still in the store.
     */
    @Test
    void f4_closeReturnsWhileAReleaseInFlightStillHasItsClaimInTheStore() throws Exception {
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
     * Finding 5: the mediator judges every hold's deadline on its own time source, while each hold's deadline is on
     * its locker's. Nothing checks that lockers sharing a mediator ({@code localArbitration}, builder
     * {@code mediator(...)}, {@link LocalLockMediators#LocalLockMediators(TimeSource)}) share a monotonic clock, whose
     * origin is arbitrary per source. Then a live hold whose deadline has not passed on its own clock is "past its
     * deadline" for the mediator: another locker's transaction takes it over and marks it lost, so a valid lease is
     * lost through a sharing that {@link dev.locker.api.LocalArbitration} says is "never needed for safety, only to
     * fail fast"; the other way round a stalled hold is never taken over.
     *
     * <p>Interleaving: locker A (monotonic clock 27 years from its origin) makes the mediator; locker B, on the system
     * clock, shares it and acquires the lock; A tries to acquire it: the mediator takes B's entry over at once.
     */
    @Test
    void f5_aSharedMediatorJudgesAnotherLockersHoldOnItsOwnClock() {
        clock.advance(Duration.ofDays(10_000)); // A's monotonic reading: 8.6e17 ns, beyond any host's uptime
        Locker a = locker("a");
        Locker b = locker(shared, config("b").timeSource(TimeSource.system()).localArbitration(a.arbitration()).build());
        Lease held = b.acquire(lock, "b");
        List<LockLost> told = new CopyOnWriteArrayList<>();
        held.onLost(told::add);
        Duration left = held.remaining();
        assertTrue(held.isValid());
        try {
            a.acquire(lock, "a").close();
        } catch (LockingException refusedByTheStore) {
            // the store refuses A (B's claim is live); what matters is what the mediator did to B on the way
        }
        assertTrue(held.isValid(), "B's lease is still valid: its deadline, on its own clock, was " + left
                + " away just before A's attempt, a fraction of a second long; B was told " + told);
        held.close();
    }

    // =================================================================================================================
    // Sound: attacks that found nothing (they pass and pin the behaviour)
    // =================================================================================================================

    /**
     * acquireAll all-or-nothing with a lost reply: y's claim write lands on every attempt but each reply is lost, so
     * the acquire fails; nothing stays held: no claim of x or y in the store, no mediator entry, no transaction.
     */
    @Test
    void s1_acquireAllWhoseSecondWriteLostEveryReplyLeavesNothingHeld() {
        FaultyStore fa = new FaultyStore(shared);
        Locker a = locker(fa, config("a").build());
        fa.scriptMutations(FaultyStore.Outcome.OK, // x's claim
                FaultyStore.Outcome.APPLIED_THEN_TEMPORARY_FAILURE, // y's claim: written, reply lost (3 attempts)
                FaultyStore.Outcome.APPLIED_THEN_TEMPORARY_FAILURE,
                FaultyStore.Outcome.APPLIED_THEN_TEMPORARY_FAILURE);
        assertThrows(TemporaryLockingException.class, () -> a.acquireAll(List.of(x, y), "both"));
        assertEquals(0, claims(x), "no claim of x left");
        assertEquals(0, claims(y), "no claim of y left (every attempt was deleted)");
        assertEquals(0, ((LocalLockMediator) a.arbitration()).size(), "no mediator entry left");
        Locker b = locker("b");
        b.acquireAll(List.of(x, y), "b").close(); // free for another process
    }

    /**
     * A stalled transaction whose entry was taken over after its deadline learns it and cannot bring it back:
     * writeLock is idempotent on its lost hold (no new claim), checkLocks and renewLocks fail, and its deleteLocks
     * removes neither the new holder's entry nor its claim.
     */
    @Test
    void s2_aStalledTransactionTakenOverLocallyCannotBringItsEntryBack() {
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
     * Closing a lease while its renewal is in flight (paused after the store answered): the close waits for it, the
     * renewal finds the hold released and withdraws what it wrote, and the claim is gone when close returns.
     * After the locker's close no thread of its background is left running.
     */
    @Test
    void s3_closeWaitsForARenewalInFlightAndLeavesNoBackgroundThread() throws Exception {
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
     * A lost-listener that re-enters the locker (closes its lease, acquires the lock again, even closes the locker)
     * neither deadlocks nor breaks it; a listener that throws a RuntimeException does not stop the next one.
     */
    @Test
    void s4_aListenerThatReentersTheLockerNeitherDeadlocksNorBreaksIt() throws Exception {
        Locker a = locker("a");
        Lease first = a.acquire(lock, "first").keepAlive(false);
        List<String> seen = new CopyOnWriteArrayList<>();
        java.util.concurrent.CountDownLatch secondAcquired = new java.util.concurrent.CountDownLatch(1);
        first.onLost(l -> {
            throw new IllegalStateException("a listener's own failure");
        });
        first.onLost(l -> {
            first.close(); // releasing from the listener
            try {
                seen.add("reacquire: " + a.tryAcquire(KeyColumn.of("core", "other"), "in listener", Duration.ZERO)
                        .map(lease -> {
                            lease.close();
                            return "ok";
                        }).orElse("busy"));
            } catch (RuntimeException e) {
                seen.add("reacquire failed: " + e);
            }
            try {
                // the listener runs while the main thread's acquire goes on: the close waits for its end (else the
                // acquire fails, "the locker was closed", which is right but not this test's point)
                secondAcquired.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            a.close(); // closing the locker from its own notifier thread
            seen.add("closed");
        });
        clock.advance(EXPIRY.plusSeconds(1));
        Lease second = a.acquire(lock, "second"); // takes over: first is lost
        secondAcquired.countDown();
        assertTrue(awaitSize(seen, 2), "the re-entering listener ran to its end: " + seen);
        assertEquals(List.of("reacquire: ok", "closed"), seen);
        assertFalse(second.isValid(), "the locker closed from the listener closed the second lease too");
        assertThrows(IllegalStateException.class, () -> a.acquire(lock, "after"));
        second.close();
    }

    /**
     * After close every call but releasing fails with IllegalStateException, including on a lease of the closed
     * locker; releasing stays harmless.
     */
    @Test
    void s5_afterCloseEveryCallButReleasingFailsWithIllegalState() {
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
     * A renewal whose reply comes back after the holder's deadline never revives the lease, even though the store
     * accepted it: the lease is lost (told EXPIRED once), its renewed claim is withdrawn, and another process then
     * gets the lock with a higher fencing token.
     */
    @Test
    void s6_aRenewalAnsweringAfterTheDeadlineNeverRevivesTheLease() throws Exception {
        StepPauses pauses = new StepPauses();
        Locker a = locker(shared, config("a").probe(pauses).build());
        Locker b = locker("b");
        Lease lease = a.acquire(lock, "job").keepAlive(false);
        long token = lease.fencingToken();
        List<LockLost> told = new CopyOnWriteArrayList<>();
        lease.onLost(told::add);
        Pause renewal = pauses.after(LockProbe.Step.RENEW);
        Future<?> renewing = async(() -> {
            lease.renew();
            return null;
        });
        renewal.awaitArrival(); // the store renewed the claim; the reply is late
        clock.advance(EXPIRY); // past the holder's deadline
        renewal.resume();
        try {
            renewing.get(1, TimeUnit.MINUTES);
            fail("a renewal answered after the deadline must fail");
        } catch (ExecutionException e) {
            assertTrue(e.getCause() instanceof ExpiredLockException, e.getCause().toString());
        }
        assertFalse(lease.isValid());
        assertTrue(awaitSize(told, 1));
        assertEquals(List.of(LossReason.EXPIRED), told.stream().map(LockLost::reason).toList());
        assertEquals(0, claims(lock), "the late renewal's claim was withdrawn");
        try (Lease next = b.acquire(lock, "next")) {
            assertTrue(next.fencingToken() > token);
            assertFalse(lease.isValid());
        }
        lease.close();
    }
}
