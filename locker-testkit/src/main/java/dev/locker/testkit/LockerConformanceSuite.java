package dev.locker.testkit;

import dev.locker.spi.Entry;
import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.api.Lease;
import dev.locker.api.LockInfo;
import dev.locker.api.LockOwner;
import dev.locker.api.LockPage;
import dev.locker.api.LockProbe;
import dev.locker.api.LockStatus;
import dev.locker.api.LockTransaction;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockingException;
import dev.locker.api.PermanentLockingException;
import dev.locker.spi.StoreTransaction;
import dev.locker.api.TemporaryLockingException;
import dev.locker.api.TimeSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The behaviour every backend must show, written once. A backend's test class extends this and provides a
 * {@link LockerFixture}; each "process" in a scenario is a separate locker instance with its own rid and its own
 * JVM-local mediator, on the one shared backend.
 *
 * <p>Backends whose expiry follows the configured clock run on a {@link VirtualClock} (milliseconds per scenario);
 * the others run on the system clock with a short expiry.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
public abstract class LockerConformanceSuite {

    /** The backend under test; called once per test class. */
    protected abstract LockerFixture createFixture() throws Exception;

    /**
     * An expected-value-checking store guarded by {@code locker}, over a data store of the backend's choice that is
     * the SAME for every call within a test class (two contenders must see one another's data); null (the default)
     * skips the expected-value scenarios.
     */
    protected KeyColumnValueStore expectedValueChecking(Locker locker) {
        return null;
    }

    protected LockerFixture fixture;
    protected TimeSource clock;
    protected VirtualClock virtualClock;
    private final List<Locker> opened = new CopyOnWriteArrayList<>();
    private String prefix;

    @BeforeAll
    void startBackend() throws Exception {
        fixture = createFixture();
    }

    @AfterAll
    void stopBackend() throws Exception {
        if (fixture != null) {
            fixture.close();
        }
    }

    @BeforeEach
    void freshScenario(TestInfo info) {
        if (fixture.expiryFollowsConfiguredClock()) {
            virtualClock = new VirtualClock();
            clock = virtualClock;
        } else {
            virtualClock = null;
            clock = TimeSource.system();
        }
        prefix = info.getTestMethod().map(m -> m.getName()).orElse("t") + "-" + LockerConfig.randomRid().substring(0, 8) + "/";
    }

    @AfterEach
    void closeLockers() {
        for (Locker l : opened) {
            try {
                l.close();
            } catch (RuntimeException e) {
                // a scenario may have broken the backend; closing is best effort
            }
        }
        opened.clear();
    }

    // ---- scenario vocabulary ------------------------------------------------------------------------------------

    /** Claim lifetime in scenarios: long on a virtual clock, short on a real one. */
    protected Duration expiry() {
        return fixture.expiryFollowsConfiguredClock() ? Duration.ofSeconds(30) : Duration.ofMillis(1500);
    }

    protected LockerConfig.Builder config(String name) {
        return LockerConfig.builder()
                .rid(name + "-" + LockerConfig.randomRid().substring(0, 12))
                .host("host-" + name)
                .pid(4242)
                .expiry(expiry())
                .lockWait(Duration.ofMillis(fixture.expiryFollowsConfiguredClock() ? 100 : 20))
                .timeSource(clock);
    }

    /** A new "process" on the shared backend. */
    protected Locker process(String name) {
        return open(config(name).build());
    }

    protected Locker open(LockerConfig config) {
        Locker l = fixture.open(config);
        opened.add(l);
        return l;
    }

    /** A lock unique to this scenario. */
    protected KeyColumn lock(String name) {
        return KeyColumn.of(prefix + name, "c");
    }

    protected void pass(Duration d) throws InterruptedException {
        if (virtualClock != null) {
            virtualClock.advance(d);
        } else {
            Thread.sleep(d.toMillis());
        }
    }

    /** writeLock then checkLocks; on failure the transaction's locks are released and the failure rethrown. */
    protected static void take(Locker locker, KeyColumn lock, Object tx) {
        try {
            locker.writeLock(lock, tx);
            locker.checkLocks(tx);
        } catch (RuntimeException e) {
            locker.deleteLocks(tx);
            throw e;
        }
    }

    protected static TemporaryLockingException assertContended(Locker locker, KeyColumn lock, Object tx) {
        return assertThrows(TemporaryLockingException.class, () -> take(locker, lock, tx));
    }

    // ---- the three phases ---------------------------------------------------------------------------------------

    @Test
    void writeCheckDeleteHoldsThenFrees() {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        LockTransaction tx = new LockTransaction("single");
        a.writeLock(lock, tx);
        a.checkLocks(tx);
        LockStatus s = a.status(lock, tx).orElseThrow();
        assertTrue(s.isHeld());
        assertTrue(s.fencingToken() > 0, "a held lock has a positive fencing token");
        assertEquals(a.rid(), a.holder(lock).orElseThrow().rid());
        a.deleteLocks(tx);
        assertEquals(Optional.empty(), a.holder(lock));
        assertEquals(Optional.empty(), a.status(lock, tx));
    }

    @Test
    void otherProcessIsRefusedWithTheHolderNamed() {
        Locker a = process("a");
        Locker b = process("b");
        KeyColumn lock = lock("x");
        take(a, lock, new LockTransaction("doing balance round"));
        TemporaryLockingException e = assertContended(b, lock, new LockTransaction());
        assertEquals(lock, e.lock());
        LockOwner holder = e.holder();
        assertNotNull(holder, "the exception names the holder");
        assertEquals(a.rid(), holder.rid());
        assertEquals("host-a", holder.host());
        assertEquals(4242, holder.pid());
        assertEquals("doing balance round", holder.why());
        assertTrue(e.getMessage().contains(a.rid()), e.getMessage());
        assertTrue(e.getMessage().contains(lock.toString()), e.getMessage());
    }

    @Test
    void releasedLockCanBeTakenByAnotherProcess() {
        Locker a = process("a");
        Locker b = process("b");
        KeyColumn lock = lock("x");
        Object ta = new Object();
        take(a, lock, ta);
        a.deleteLocks(ta);
        Object tb = new Object();
        take(b, lock, tb);
        assertEquals(b.rid(), b.holder(lock).orElseThrow().rid());
    }

    @Test
    void localContentionFailsFast() {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        take(a, lock, new LockTransaction("first"));
        TemporaryLockingException e = assertThrows(TemporaryLockingException.class,
                () -> a.writeLock(lock, new LockTransaction("second")));
        assertTrue(e.getMessage().contains("this process"), e.getMessage());
        assertEquals(lock, e.lock());
    }

    @Test
    void localWaitTakesTheLockWhenTheOtherTransactionReleases() throws Exception {
        // the waiter's back-off sleeps advance a virtual clock at once: a long expiry keeps the race away from it
        Duration longExpiry = virtualClock != null ? Duration.ofDays(1) : expiry();
        Locker a = open(config("a").localWait(Duration.ofDays(1)).expiry(longExpiry).build());
        KeyColumn lock = lock("x");
        Object first = new Object();
        take(a, lock, first);
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            Object second = new Object();
            Future<?> waiter = pool.submit(() -> take(a, lock, second));
            Thread.sleep(20);
            a.deleteLocks(first);
            waiter.get(60, TimeUnit.SECONDS);
            assertTrue(a.status(lock, second).orElseThrow().isHeld());
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void localWaitIsBounded() {
        Locker a = open(config("a").localWait(Duration.ofMillis(50)).build());
        KeyColumn lock = lock("x");
        take(a, lock, new Object());
        assertThrows(TemporaryLockingException.class, () -> a.writeLock(lock, new Object()));
    }

    @Test
    void repeatedWriteLockIsANoOpAndDoesNotExtend() throws Exception {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        Object tx = new Object();
        a.writeLock(lock, tx);
        LockStatus first = a.status(lock, tx).orElseThrow();
        pass(Duration.ofMillis(200));
        a.writeLock(lock, tx);
        assertEquals(first.deadlineNanos(), a.status(lock, tx).orElseThrow().deadlineNanos());
        a.checkLocks(tx);
    }

    @Test
    void checkLocksIsIdempotent() {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        Object tx = new Object();
        take(a, lock, tx);
        long token = a.fencingToken(lock, tx);
        a.checkLocks(tx);
        a.checkLocks(tx);
        assertEquals(token, a.fencingToken(lock, tx));
    }

    @Test
    void unknownTransactionsAreNoOps() {
        Locker a = process("a");
        assertDoesNotThrow(() -> a.deleteLocks(new Object()));
        assertDoesNotThrow(() -> a.checkLocks(new Object()));
        assertDoesNotThrow(() -> a.renewLocks(new Object()));
        assertEquals(Optional.empty(), a.status(lock("x"), new Object()));
    }

    @Test
    void deleteLocksFreesTheLocalMediator() {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        Object t1 = new Object();
        take(a, lock, t1);
        a.deleteLocks(t1);
        Object t2 = new Object();
        take(a, lock, t2);
        assertTrue(a.status(lock, t2).orElseThrow().isHeld());
    }

    @Test
    void aFailedWriteFreesTheLocalMediator() {
        Locker a = process("a");
        Locker b = process("b");
        KeyColumn lock = lock("x");
        Object ta = new Object();
        take(a, lock, ta);
        assertContended(b, lock, new Object());
        a.deleteLocks(ta);
        Object tb = new Object();
        take(b, lock, tb); // b's mediator was freed by its failed attempt
        assertTrue(b.status(lock, tb).orElseThrow().isHeld());
    }

    @Test
    void fencingTokenBeforeCheckIsRefused() {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        Object tx = new Object();
        assertThrows(IllegalStateException.class, () -> a.fencingToken(lock, tx));
    }

    // ---- expiry, renewal, fencing ----------------------------------------------------------------------------

    @Test
    void ownExpiredClaimFailsTheCheck() throws Exception {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        Object tx = new Object();
        take(a, lock, tx);
        pass(expiry().plusMillis(200));
        assertThrows(ExpiredLockException.class, () -> a.checkLocks(tx));
        assertThrows(ExpiredLockException.class, () -> a.renewLocks(tx));
        a.deleteLocks(tx);
    }

    @Test
    void anExpiredHolderIsTakenOverWithAGreaterToken() throws Exception {
        Locker a = process("a");
        Locker b = process("b");
        KeyColumn lock = lock("x");
        Object ta = new Object();
        take(a, lock, ta);
        long tokenA = a.fencingToken(lock, ta);
        pass(expiry().plusMillis(300)); // a "crashed" and never released
        Object tb = new Object();
        take(b, lock, tb);
        assertTrue(b.fencingToken(lock, tb) > tokenA, "the new holder's token is greater");
        assertEquals(b.rid(), b.holder(lock).orElseThrow().rid());
    }

    @Test
    void renewalKeepsSeniorityAndToken() throws Exception {
        Locker a = process("a");
        Locker b = process("b");
        KeyColumn lock = lock("x");
        Object ta = new Object();
        take(a, lock, ta);
        long token = a.fencingToken(lock, ta);
        Duration step = expiry().multipliedBy(6).dividedBy(10);
        pass(step);
        a.renewLocks(ta);
        pass(step); // past the first expiry, within the renewed one
        TemporaryLockingException e = assertContended(b, lock, new Object());
        assertEquals(a.rid(), e.holder().rid());
        a.checkLocks(ta);
        assertEquals(token, a.fencingToken(lock, ta), "renewal keeps the token");
        assertTrue(a.status(lock, ta).orElseThrow().isHeld());
    }

    @Test
    void leaseRenewalKeepsTheLock() throws Exception {
        Locker a = process("a");
        Locker b = process("b");
        KeyColumn lock = lock("x");
        try (Lease lease = a.acquire(lock, "refresh cache")) {
            long token = lease.fencingToken();
            for (int i = 0; i < 3; i++) {
                pass(expiry().dividedBy(2));
                lease.renew();
            }
            assertContended(b, lock, new Object());
            assertEquals(token, lease.fencingToken());
        }
        take(b, lock, new Object());
    }

    @Test
    void fencingTokensStrictlyIncreaseAcrossHolders() throws Exception {
        Locker[] procs = {process("a"), process("b"), process("c")};
        KeyColumn lock = lock("x");
        long last = 0;
        for (int i = 0; i < 9; i++) {
            Locker p = procs[i % procs.length];
            Object tx = new Object();
            take(p, lock, tx);
            long t = p.fencingToken(lock, tx);
            assertTrue(t > last, "token " + t + " after " + last);
            last = t;
            switch (i % 3) {
                case 0:
                    p.deleteLocks(tx);
                    break;
                case 1:
                    procs[(i + 1) % procs.length].forceRelease(lock);
                    p.deleteLocks(tx);
                    break;
                default:
                    pass(expiry().plusMillis(300)); // expire it
                    p.deleteLocks(tx);
                    break;
            }
        }
    }

    @Test
    void aPausedFormerHoldersWriteIsRefusedByItsFencingToken() throws Exception {
        Locker a = process("a");
        Locker b = process("b");
        KeyColumn lock = lock("x");
        FencedResource resource = new FencedResource();
        Object ta = new Object();
        take(a, lock, ta);
        long tokenA = a.fencingToken(lock, ta);
        assertTrue(resource.write("a", tokenA, "a-before-pause"));
        pass(expiry().plusMillis(300)); // a pauses (GC, partition) past its expiry
        Object tb = new Object();
        take(b, lock, tb);
        assertTrue(resource.write("b", b.fencingToken(lock, tb), "b"));
        assertFalse(resource.write("a", tokenA, "a-after-pause"), "the stale holder's token is refused");
        assertEquals(List.of(), resource.violations());
        assertEquals(List.of("a-before-pause", "b"), resource.accepted());
        assertThrows(ExpiredLockException.class, () -> a.checkLocks(ta), "and a learns it has lost the lock");
    }

    @Test
    void aFormerHolderCannotReleaseOrRenewTheNewHoldersLock() throws Exception {
        Locker a = process("a");
        Locker b = process("b");
        KeyColumn lock = lock("x");
        Object ta = new Object();
        take(a, lock, ta);
        pass(expiry().plusMillis(300)); // a pauses past its expiry
        Object tb = new Object();
        take(b, lock, tb);
        assertThrows(ExpiredLockException.class, () -> a.renewLocks(ta));
        a.deleteLocks(ta); // must not delete b's claim
        assertEquals(b.rid(), b.holder(lock).orElseThrow().rid());
        assertContended(process("c"), lock, new Object());
        b.checkLocks(tb);
        b.renewLocks(tb);
    }

    @Test
    void aLoserCannotReleaseTheHoldersLock() {
        Locker a = process("a");
        Locker b = process("b");
        KeyColumn lock = lock("x");
        Object ta = new Object();
        take(a, lock, ta);
        Object tb = new Object();
        assertThrows(TemporaryLockingException.class, () -> {
            b.writeLock(lock, tb);
            b.checkLocks(tb);
        });
        b.renewLocks(tb);
        b.deleteLocks(tb);
        b.deleteLocks(tb);
        assertEquals(a.rid(), a.holder(lock).orElseThrow().rid());
        a.checkLocks(ta);
        a.renewLocks(ta);
    }

    @Test
    void forceReleaseFreesTheLockAndTheHolderLearnsAtRenewal() {
        Locker a = process("a");
        Locker b = process("b");
        Locker operator = process("operator");
        KeyColumn lock = lock("x");
        Object ta = new Object();
        take(a, lock, ta);
        long tokenA = a.fencingToken(lock, ta);
        assertTrue(operator.forceRelease(lock));
        assertFalse(operator.forceRelease(lock), "nothing left to release");
        Object tb = new Object();
        take(b, lock, tb);
        assertTrue(b.fencingToken(lock, tb) > tokenA);
        assertThrows(ExpiredLockException.class, () -> a.renewLocks(ta));
        a.deleteLocks(ta);
        assertEquals(b.rid(), operator.holder(lock).orElseThrow().rid());
    }

    // ---- interleavings: a process paused at a chosen step while others act (issue 8) ------------------------------

    private final ExecutorService stepPool = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "paused-process");
        t.setDaemon(true);
        return t;
    });

    /** A process whose backend steps the test can pause. */
    protected Locker pausable(String name, StepPauses pauses) {
        return open(config(name).probe(pauses).build());
    }

    /** Takes {@code lock} for a new transaction, writes once to the resource with its token, and releases it. */
    private long takeWriteRelease(Locker l, KeyColumn lock, FencedResource resource) {
        Object tx = new Object();
        take(l, lock, tx);
        try {
            long token = l.fencingToken(lock, tx);
            assertTrue(resource.write(l.rid(), token, l.rid()), "a fresh holder's write is accepted");
            return token;
        } finally {
            l.deleteLocks(tx);
        }
    }

    /**
     * A holder paused right after its claim write answered (atomic backends: after the grant) until the claim expired,
     * while another process took the lock: it does not hold when it resumes, and no token is issued twice.
     */
    @Test
    void aProcessPausedAfterItsClaimWriteDoesNotHoldOnceItExpired() throws Exception {
        StepPauses pauses = new StepPauses();
        Locker a = pausable("a", pauses);
        Locker b = process("b");
        KeyColumn lock = lock("x");
        FencedResource resource = new FencedResource();
        Pause afterWrite = pauses.after(LockProbe.Step.WRITE);
        Object ta = new Object();
        Future<Long> paused = stepPool.submit(() -> {
            take(a, lock, ta);
            return a.fencingToken(lock, ta);
        });
        afterWrite.awaitArrival();
        pass(expiry().plusMillis(300));
        takeWriteRelease(b, lock, resource);
        Object tb = new Object();
        take(b, lock, tb);
        afterWrite.resume();
        assertInstanceOf(TemporaryLockingException.class, Interleavings.failureOf(paused), "the paused process does not hold");
        assertTrue(resource.write(b.rid(), b.fencingToken(lock, tb), "b again"));
        assertEquals(List.of(), resource.violations());
        assertEquals(b.rid(), b.holder(lock).orElseThrow().rid());
        b.checkLocks(tb);
    }

    /**
     * A claimant paused after its read-back (wait-and-read-back backends; atomic ones decide in the write and skip
     * this case) until its claim expired: it does not hold, and its late token write neither repeats nor lowers tokens.
     */
    @Test
    void aProcessPausedAfterItsReadBackDoesNotHoldOnceItExpired() throws Exception {
        StepPauses pauses = new StepPauses();
        Locker a = pausable("a", pauses);
        Locker b = process("b");
        Locker c = process("c");
        KeyColumn lock = lock("x");
        FencedResource resource = new FencedResource();
        Pause afterCheck = pauses.after(LockProbe.Step.CHECK);
        Object ta = new Object();
        Future<Long> paused = stepPool.submit(() -> {
            take(a, lock, ta);
            return a.fencingToken(lock, ta);
        });
        long waitUntil = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!afterCheck.hasArrived() && !paused.isDone() && System.nanoTime() < waitUntil) {
            Thread.sleep(1);
        }
        if (!afterCheck.hasArrived()) {
            afterCheck.resume();
            paused.get(1, TimeUnit.MINUTES);
            a.deleteLocks(ta);
            Assumptions.abort("this backend decides the holder in its claim write: there is no read-back to pause after");
        }
        pass(expiry().plusMillis(300));
        long tb = takeWriteRelease(b, lock, resource);
        afterCheck.resume();
        assertInstanceOf(TemporaryLockingException.class, Interleavings.failureOf(paused), "the paused process does not hold");
        long tc = takeWriteRelease(c, lock, resource);
        assertTrue(tc > tb, "tokens keep rising: " + tb + " then " + tc);
        assertEquals(List.of(), resource.violations());
    }

    /** A holder paused before its renewal reached the backend, until its claim expired and another took over. */
    @Test
    void aRenewalPausedBeforeTheBackendCannotRevive() throws Exception {
        StepPauses pauses = new StepPauses();
        Locker a = pausable("a", pauses);
        Locker b = process("b");
        KeyColumn lock = lock("x");
        Object ta = new Object();
        take(a, lock, ta);
        Pause beforeRenew = pauses.before(LockProbe.Step.RENEW);
        Future<Object> renewal = stepPool.submit(() -> {
            a.renewLocks(ta);
            return "renewed";
        });
        beforeRenew.awaitArrival();
        pass(expiry().plusMillis(300));
        Object tb = new Object();
        take(b, lock, tb);
        beforeRenew.resume();
        assertInstanceOf(ExpiredLockException.class, Interleavings.failureOf(renewal), "the late renewal is refused");
        assertThrows(ExpiredLockException.class, () -> a.checkLocks(ta));
        assertEquals(b.rid(), b.holder(lock).orElseThrow().rid());
        b.checkLocks(tb);
        b.renewLocks(tb);
    }

    /** A holder whose renewal answered and who then paused past the renewed expiry: the renewal does not count. */
    @Test
    void aRenewalPausedAfterItsAnswerPastTheExpiryDoesNotCount() throws Exception {
        StepPauses pauses = new StepPauses();
        Locker a = pausable("a", pauses);
        Locker b = process("b");
        KeyColumn lock = lock("x");
        Object ta = new Object();
        take(a, lock, ta);
        Pause afterRenew = pauses.after(LockProbe.Step.RENEW);
        Future<Object> renewal = stepPool.submit(() -> {
            a.renewLocks(ta);
            return "renewed";
        });
        afterRenew.awaitArrival();
        pass(expiry().plusMillis(300));
        Object tb = new Object();
        take(b, lock, tb);
        afterRenew.resume();
        assertInstanceOf(ExpiredLockException.class, Interleavings.failureOf(renewal), "a renewal that outlived itself does not count");
        assertThrows(ExpiredLockException.class, () -> a.checkLocks(ta));
        a.deleteLocks(ta);
        assertEquals(b.rid(), b.holder(lock).orElseThrow().rid(), "and its withdrawal left b's claim alone");
        b.checkLocks(tb);
    }

    /** A release paused before it reached the backend, past the expiry, while another took over: it removes nothing of theirs. */
    @Test
    void aReleasePausedPastTheExpiryLeavesTheNewHolderAlone() throws Exception {
        StepPauses pauses = new StepPauses();
        Locker a = pausable("a", pauses);
        Locker b = process("b");
        KeyColumn lock = lock("x");
        Object ta = new Object();
        take(a, lock, ta);
        Pause beforeRelease = pauses.before(LockProbe.Step.RELEASE);
        Future<Object> release = stepPool.submit(() -> {
            a.deleteLocks(ta);
            return "released";
        });
        beforeRelease.awaitArrival();
        pass(expiry().plusMillis(300));
        Object tb = new Object();
        take(b, lock, tb);
        beforeRelease.resume();
        assertEquals("released", release.get(1, TimeUnit.MINUTES));
        assertEquals(b.rid(), b.holder(lock).orElseThrow().rid());
        assertContended(process("c"), lock, new Object());
        b.checkLocks(tb);
        b.renewLocks(tb);
    }

    /** A claim write paused before it reached the backend while another process took and holds the lock. */
    @Test
    void aClaimWritePausedWhileAnotherTakesTheLockIsRefused() throws Exception {
        StepPauses pauses = new StepPauses();
        Locker a = pausable("a", pauses);
        Locker b = process("b");
        KeyColumn lock = lock("x");
        Pause beforeWrite = pauses.before(LockProbe.Step.WRITE);
        Object ta = new Object();
        Future<Object> paused = stepPool.submit(() -> {
            take(a, lock, ta);
            return "held";
        });
        beforeWrite.awaitArrival();
        Object tb = new Object();
        take(b, lock, tb);
        beforeWrite.resume();
        assertInstanceOf(TemporaryLockingException.class, Interleavings.failureOf(paused));
        assertEquals(b.rid(), b.holder(lock).orElseThrow().rid());
        b.checkLocks(tb);
    }

    // ---- leases for applications: keep-alive and the lost signal (issue 9) ----------------------------------------
    // Keep-alive runs on real background time, so these cases use the system clock and a short expiry everywhere.

    /** A lost-signal listener that keeps what it was told, and when (System.nanoTime). */
    private static final class Losses implements java.util.function.Consumer<dev.locker.api.LockLost> {
        final List<dev.locker.api.LockLost> told = new CopyOnWriteArrayList<>();
        private final CountDownLatch first = new CountDownLatch(1);
        private volatile long toldAt;

        @Override
        public void accept(dev.locker.api.LockLost loss) {
            if (first.getCount() > 0) {
                toldAt = System.nanoTime();
            }
            told.add(loss);
            first.countDown();
        }

        boolean await(long timeout, TimeUnit unit) throws InterruptedException {
            return first.await(timeout, unit);
        }

        /** When the first loss was told. */
        long toldAt() {
            return toldAt;
        }
    }

    private static final Duration LEASE_EXPIRY = Duration.ofMillis(1200); // a stall of ~0.6 s on a busy machine is tolerated

    protected Locker realTimeProcess(String name) {
        return open(config(name).timeSource(TimeSource.system()).expiry(LEASE_EXPIRY).build());
    }

    @Test
    void aKeptAliveLeaseOutlivesManyExpiriesWithItsToken() throws Exception {
        Locker a = realTimeProcess("a");
        Locker b = realTimeProcess("b");
        KeyColumn lock = lock("x");
        try (Lease lease = a.acquire(lock, "long job")) {
            long token = lease.fencingToken();
            for (int i = 0; i < 4; i++) {
                Thread.sleep(LEASE_EXPIRY.toMillis());
                assertTrue(lease.isValid(), "still valid after " + (i + 1) + " expiries");
                assertContended(b, lock, new Object());
            }
            lease.check();
            assertEquals(token, lease.fencingToken(), "renewed in place: same token");
        }
        take(b, lock, new Object()); // closing stopped the keep-alive and released at once
    }

    @Test
    void aLeaseWithoutKeepAliveExpiresAndSaysSo() throws Exception {
        Locker a = realTimeProcess("a");
        KeyColumn lock = lock("x");
        Lease lease = a.acquire(lock, "short job").keepAlive(false);
        assertTrue(lease.isValid());
        assertTrue(lease.remaining().compareTo(LEASE_EXPIRY) <= 0);
        Thread.sleep(LEASE_EXPIRY.toMillis() + 100);
        assertFalse(lease.isValid());
        assertEquals(Duration.ZERO, lease.remaining());
        assertThrows(ExpiredLockException.class, lease::fencingToken);
        lease.close();
    }

    /** The lost signal after a force release: told once, with the reason; afterwards the lease is invalid everywhere. */
    @Test
    void aForceReleasedLeaseTellsItsListenerOnce() throws Exception {
        Locker a = realTimeProcess("a");
        Locker operator = realTimeProcess("operator");
        KeyColumn lock = lock("x");
        Losses losses = new Losses();
        Lease lease = a.acquire(lock, "job").onLost(losses);
        long token = lease.fencingToken();
        long released = System.nanoTime();
        assertTrue(operator.forceRelease(lock, "stuck since the deploy"));
        assertTrue(losses.await(LEASE_EXPIRY.toMillis() * 3, TimeUnit.MILLISECONDS), "the listener was told");
        long latency = System.nanoTime() - released;
        System.out.printf("[conformance] %s: lost signal %d ms after a force release (expiry %d ms, %.2f expiries)%n",
                getClass().getSimpleName(), latency / 1_000_000, LEASE_EXPIRY.toMillis(),
                latency / (double) LEASE_EXPIRY.toNanos());
        Thread.sleep(LEASE_EXPIRY.toMillis());
        assertEquals(1, losses.told.size(), "exactly once: " + losses.told);
        assertEquals(lock, losses.told.get(0).lock());
        assertEquals(dev.locker.api.LossReason.FORCE_RELEASED, losses.told.get(0).reason(), losses.told.get(0).toString());
        assertTrue(losses.told.get(0).toString().contains("stuck since the deploy"), "names why: " + losses.told.get(0));
        assertTrue(losses.told.get(0).toString().contains(operator.rid()), "names who: " + losses.told.get(0));
        dev.locker.api.ForcedRelease record = a.lastForcedRelease(lock).orElseThrow();
        assertEquals(operator.rid(), record.by().rid());
        assertEquals("stuck since the deploy", record.reason());
        assertEquals(a.rid(), record.released().orElseThrow().rid());
        assertEquals(token, record.releasedToken().orElseThrow(), "the record names the claim taken by its token");
        assertFalse(lease.isValid());
        assertThrows(ExpiredLockException.class, lease::check);
        assertThrows(ExpiredLockException.class, lease::fencingToken);
        List<dev.locker.api.LockLost> late = new CopyOnWriteArrayList<>();
        lease.onLost(late::add); // a listener added after the loss is told at once
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (late.isEmpty() && System.nanoTime() < until) {
            Thread.sleep(5);
        }
        assertEquals(1, late.size());
        lease.close();
    }

    /**
     * A forced release that names the claim it takes (the operator read token t; the lock changed hands to a live
     * holder with token u before the release): the release by t changes nothing and records nothing; the release by u
     * takes the lock from its holder, who learns it, and the record names that holder.
     */
    @Test
    void aForcedReleaseByTokenTakesOnlyTheClaimThatCarriesIt() throws Exception {
        Locker a = realTimeProcess("a");
        Locker b = realTimeProcess("b");
        Locker operator = realTimeProcess("operator");
        KeyColumn lock = lock("x");
        Lease la = a.acquire(lock, "job");
        long seen = la.fencingToken(); // what 'locker show' printed
        la.close(); // a's claim ends, and b, alive, takes the lock
        Losses losses = new Losses();
        Lease lb = b.acquire(lock, "job").onLost(losses);
        long current = lb.fencingToken();
        assertTrue(current > seen);
        LockInfo shown = operator.holding(lock).orElseThrow(); // the holder with its token, in one read
        assertEquals(b.rid(), shown.holder().rid());
        assertEquals(current, shown.fencingToken());

        assertFalse(operator.forceRelease(lock, "a is dead", seen), "the claim with token " + seen + " is gone");
        assertTrue(lb.isValid());
        assertDoesNotThrow(lb::check, "b's claim is still there");
        assertEquals(b.rid(), operator.holder(lock).orElseThrow().rid());
        assertTrue(operator.lastForcedRelease(lock).isEmpty(), "nothing recorded");
        assertTrue(losses.told.isEmpty(), "b was told nothing: " + losses.told);

        assertTrue(operator.forceRelease(lock, "b is stuck", current));
        assertTrue(losses.await(LEASE_EXPIRY.toMillis() * 3, TimeUnit.MILLISECONDS), "b was told");
        assertEquals(dev.locker.api.LossReason.FORCE_RELEASED, losses.told.get(0).reason(), losses.told.get(0).toString());
        assertFalse(lb.isValid());
        assertThrows(ExpiredLockException.class, lb::check);
        assertTrue(operator.holder(lock).isEmpty());
        assertTrue(operator.holding(lock).isEmpty());
        dev.locker.api.ForcedRelease record = operator.lastForcedRelease(lock).orElseThrow();
        assertEquals(operator.rid(), record.by().rid());
        assertEquals("b is stuck", record.reason());
        assertEquals(b.rid(), record.released().orElseThrow().rid());
        assertEquals(current, record.releasedToken().orElseThrow());
        lb.close();

        // the same token again, now that nobody holds the lock: nothing to do, nothing recorded
        assertFalse(operator.forceRelease(lock, "once more", current));
        assertEquals("b is stuck", operator.lastForcedRelease(lock).orElseThrow().reason());
        // a later holder's token is another one: the old token never takes the lock from it
        try (Lease lc = a.acquire(lock, "job")) {
            assertFalse(operator.forceRelease(lock, "b is stuck", current));
            assertTrue(lc.isValid());
            assertEquals(a.rid(), operator.holder(lock).orElseThrow().rid());
            assertEquals("b is stuck", operator.lastForcedRelease(lock).orElseThrow().reason());
        }
    }

    /** Bad arguments of the conditional forced release are refused before any I/O, like the unconditional form's. */
    @Test
    void aForcedReleaseByTokenRefusesBadArguments() {
        Locker operator = process("operator");
        KeyColumn lock = lock("x");
        assertThrows(IllegalArgumentException.class, () -> operator.forceRelease(lock, "r", 0));
        assertThrows(IllegalArgumentException.class, () -> operator.forceRelease(lock, "r", -1));
        assertThrows(IllegalArgumentException.class, () -> operator.forceRelease(lock, "r".repeat(1001), 1));
        assertThrows(IllegalArgumentException.class, () -> operator.forceRelease(null, "r", 1));
        assertFalse(operator.forceRelease(lock, "nobody holds it", 1), "an expected token with no holder");
        assertTrue(operator.lastForcedRelease(lock).isEmpty());
    }

    /**
     * A time source that parks the first {@code now()} a forced release asks for after it read the holder (outside
     * {@code readHolding}/{@code readHolder}): the record's timestamp, taken between the shared read of the holder and
     * the backend's conditional removal. The operator stalls exactly there while other processes act.
     */
    private static final class ForceReleasePause implements TimeSource {
        private final TimeSource real;
        private final Pause pause;
        private final java.util.concurrent.atomic.AtomicBoolean fired = new java.util.concurrent.atomic.AtomicBoolean();

        ForceReleasePause(TimeSource real, Pause pause) {
            this.real = real;
            this.pause = pause;
        }

        @Override
        public java.time.Instant now() {
            if (!fired.get() && betweenReadAndRemoval() && fired.compareAndSet(false, true)) {
                pause.park();
            }
            return real.now();
        }

        private static boolean betweenReadAndRemoval() {
            boolean forcing = false;
            for (StackTraceElement f : Thread.currentThread().getStackTrace()) {
                String m = f.getMethodName();
                if (m.equals("readHolding") || m.equals("readHolder") || m.equals("deleteClaimWithToken")) {
                    return false;
                }
                forcing |= m.equals("forceRelease") && f.getClassName().endsWith("AbstractLocker");
            }
            return forcing;
        }

        @Override
        public long nanoTime() {
            return real.nanoTime();
        }

        @Override
        public void sleep(Duration d) throws InterruptedException {
            real.sleep(d);
        }
    }

    /**
     * The operator read holder A with token t, then stalls before the removal; meanwhile A's claim ends and B, alive,
     * takes the lock. The release by t, resumed, must leave B alone: false, B's claim and token unchanged, B told
     * nothing, and no record (each backend's removal looks again).
     */
    @Test
    void aForcedReleaseByTokenThatStalledAfterItsReadLeavesTheNewHolderAlone() throws Exception {
        Pause stalled = new Pause("forceRelease between its holder read and its removal");
        Locker a = realTimeProcess("a");
        Locker b = realTimeProcess("b");
        Locker operator = open(config("operator").timeSource(new ForceReleasePause(TimeSource.system(), stalled))
                .expiry(LEASE_EXPIRY).build());
        KeyColumn lock = lock("x");
        Lease la = a.acquire(lock, "job");
        long t = la.fencingToken();
        Future<Boolean> release = stepPool.submit(() -> operator.forceRelease(lock, "a hangs", t));
        stalled.awaitArrival();

        la.close();
        Losses losses = new Losses();
        Lease lb = b.acquire(lock, "job").onLost(losses);
        long u = lb.fencingToken();
        assertTrue(u > t);
        stalled.resume();
        assertFalse(release.get(1, TimeUnit.MINUTES), "the claim with token " + t + " ended before the removal");

        assertDoesNotThrow(lb::check, "b's claim is still there");
        assertTrue(lb.isValid());
        LockInfo now = operator.holding(lock).orElseThrow();
        assertEquals(b.rid(), now.holder().rid());
        assertEquals(u, now.fencingToken());
        assertTrue(losses.told.isEmpty(), "b was told nothing: " + losses.told);
        assertTrue(operator.lastForcedRelease(lock).isEmpty(), "nothing recorded: "
                + operator.lastForcedRelease(lock).orElse(null));
        lb.close();
    }

    /**
     * The operator read holder A with token t and stalls before the removal while A's lease is kept alive (renewals
     * land in between). Resumed, the release removes A's claim: true, A learns FORCE_RELEASED, the lock is free (no
     * renewal puts the claim back), the record names A, and the next holder's token is higher.
     */
    @Test
    void aForcedReleaseByTokenThatStalledWhileTheHolderRenewedStillTakesTheLock() throws Exception {
        Pause stalled = new Pause("forceRelease between its holder read and its removal");
        Locker a = realTimeProcess("a");
        Locker operator = open(config("operator").timeSource(new ForceReleasePause(TimeSource.system(), stalled))
                .expiry(LEASE_EXPIRY).build());
        KeyColumn lock = lock("x");
        Losses losses = new Losses();
        Lease la = a.acquire(lock, "job").onLost(losses);
        long t = la.fencingToken();
        Future<Boolean> release = stepPool.submit(() -> operator.forceRelease(lock, "a hangs", t));
        stalled.awaitArrival();
        Thread.sleep(LEASE_EXPIRY.toMillis()); // the keep-alive renews A's claim (in place, same token) meanwhile
        assertTrue(la.isValid(), "a's lease was kept alive");
        assertEquals(t, la.fencingToken());
        stalled.resume();
        assertTrue(release.get(1, TimeUnit.MINUTES), "the claim with token " + t + " still held the lock");

        assertTrue(losses.await(LEASE_EXPIRY.toMillis() * 3, TimeUnit.MILLISECONDS), "a was told");
        assertEquals(dev.locker.api.LossReason.FORCE_RELEASED, losses.told.get(0).reason(), losses.told.get(0).toString());
        assertFalse(la.isValid());
        assertTrue(operator.holding(lock).isEmpty(), "free: " + operator.holding(lock).orElse(null));
        assertEquals(a.rid(), operator.lastForcedRelease(lock).orElseThrow().released().orElseThrow().rid());
        try (Lease lb = realTimeProcess("b").acquire(lock, "job")) {
            assertTrue(lb.fencingToken() > t, "the next holder's token is higher");
        }
        la.close();
    }

    /** Tokens at the limits (1, 2^53, 2^53 + 1, Long.MAX_VALUE) and next to the holder's name no holder: nothing happens. */
    @Test
    void aForcedReleaseByATokenAtTheLimitsNamesNoOtherHolder() {
        Locker a = process("a");
        Locker operator = process("operator");
        KeyColumn lock = lock("x");
        Object tx = new Object();
        take(a, lock, tx);
        long t = a.fencingToken(lock, tx);
        for (long other : new long[] {1, t - 1, t + 1, 1L << 53, (1L << 53) + 1, Long.MAX_VALUE - 1, Long.MAX_VALUE}) {
            if (other != t && other >= 1) {
                assertFalse(operator.forceRelease(lock, "not its token", other), "token " + other + " vs " + t);
            }
        }
        assertTrue(operator.lastForcedRelease(lock).isEmpty());
        assertEquals(t, operator.holding(lock).orElseThrow().fencingToken());
        a.verifyLocks(tx);
        a.deleteLocks(tx);
    }

    /** Renewals that keep failing (backend unreachable): the lease is declared lost before its validity ends. */
    @Test
    void aLeaseWhoseRenewalsFailIsDeclaredLostBeforeItsValidityEnds() throws Exception {
        Assumptions.assumeTrue(fixture.canBreakBackend(), "backend cannot be broken");
        Locker a = realTimeProcess("a");
        KeyColumn lock = lock("x");
        Losses losses = new Losses();
        Lease lease = a.acquire(lock, "job").onLost(losses);
        fixture.breakBackend();
        long validUntil;
        try {
            validUntil = System.nanoTime() + lease.remaining().toNanos();
            assertTrue(losses.await(LEASE_EXPIRY.toMillis() * 4, TimeUnit.MILLISECONDS), "the listener was told");
        } finally {
            fixture.repairBackend();
        }
        assertEquals(dev.locker.api.LossReason.EXPIRED, losses.told.get(0).reason(), losses.told.get(0).toString());
        assertTrue(losses.toldAt() - validUntil < 0, "told " + (losses.toldAt() - validUntil) / 1_000_000
                + " ms after the validity ended; it must be before");
        assertFalse(lease.isValid());
        lease.close();
    }

    @Test
    void closingTheLockerTellsTheLeasesListeners() throws Exception {
        Locker a = realTimeProcess("a");
        Losses losses = new Losses();
        Lease lease = a.acquire(lock("x"), "job").onLost(losses);
        a.close();
        assertTrue(losses.await(10, TimeUnit.SECONDS));
        assertEquals(dev.locker.api.LossReason.LOCKER_CLOSED, losses.told.get(0).reason());
        assertFalse(lease.isValid());
        take(realTimeProcess("b"), lock("x"), new Object()); // close released the claim
    }

    /**
     * The record of a forced release names the claim it took by its fencing token, so a later loss of the same
     * locker is not blamed on it: A's first lease is force-released (A is told FORCE_RELEASED), A takes the lock again
     * at once, and the server then loses A's second claim. A is told GONE, not FORCE_RELEASED with the operator's
     * reason: that release took another claim (the record's token), whatever its rid and time say.
     */
    @Test
    void aLossAfterAnEarlierForcedReleaseOfTheSameLockerIsNotBlamedOnIt() throws Exception {
        Assumptions.assumeTrue(fixture.canLoseClaims(), "backend cannot lose claims on demand");
        Locker a = realTimeProcess("a");
        Locker operator = realTimeProcess("operator");
        KeyColumn lock = lock("x");
        Losses first = new Losses();
        Lease lease = a.acquire(lock, "job").onLost(first);
        long token = lease.fencingToken();
        assertTrue(operator.forceRelease(lock, "stuck since the deploy"));
        assertTrue(first.await(LEASE_EXPIRY.toMillis() * 3, TimeUnit.MILLISECONDS), "the listener was told");
        assertEquals(dev.locker.api.LossReason.FORCE_RELEASED, first.told.get(0).reason(), first.told.get(0).toString());
        assertEquals(token, operator.lastForcedRelease(lock).orElseThrow().releasedToken().orElseThrow(),
                "the record names the claim it took by its token");
        lease.close();

        Losses second = new Losses();
        Lease again = a.acquire(lock, "job").onLost(second);
        assertTrue(again.fencingToken() > token);
        fixture.loseClaims(lock);
        assertTrue(second.await(LEASE_EXPIRY.toMillis() * 3, TimeUnit.MILLISECONDS), "the listener was told");
        assertEquals(dev.locker.api.LossReason.GONE, second.told.get(0).reason(), second.told.get(0).toString());
        assertFalse(second.told.get(0).toString().contains("stuck since the deploy"),
                "not blamed on the earlier release: " + second.told.get(0));
        again.close();
    }

    /**
     * A server that lost the holder's claim (restart without its data, failover to a replica that missed it): the
     * holder is told GONE by its next renewal, before its validity ends, and is invalid from then on.
     */
    @Test
    void aLeaseWhoseClaimTheServerLostIsToldBeforeItsValidityEnds() throws Exception {
        Assumptions.assumeTrue(fixture.canLoseClaims(), "backend cannot lose claims on demand");
        Locker a = realTimeProcess("a");
        KeyColumn lock = lock("x");
        Losses losses = new Losses();
        Lease lease = a.acquire(lock, "job").onLost(losses);
        long validUntil = System.nanoTime() + lease.remaining().toNanos();
        long gone = System.nanoTime();
        fixture.loseClaims(lock);
        assertTrue(losses.await(LEASE_EXPIRY.toMillis() * 3, TimeUnit.MILLISECONDS), "the listener was told");
        System.out.printf("[conformance] %s: lost signal %d ms after the server lost the claim (expiry %d ms, %.2f "
                        + "expiries)%n", getClass().getSimpleName(), (losses.toldAt() - gone) / 1_000_000,
                LEASE_EXPIRY.toMillis(), (losses.toldAt() - gone) / (double) LEASE_EXPIRY.toNanos());
        assertEquals(dev.locker.api.LossReason.GONE, losses.told.get(0).reason(), losses.told.get(0).toString());
        assertTrue(losses.toldAt() - validUntil < 0, "told after the validity ended");
        assertFalse(lease.isValid());
        assertThrows(ExpiredLockException.class, lease::fencingToken);
        Thread.sleep(LEASE_EXPIRY.toMillis() / 2);
        assertEquals(1, losses.told.size(), "exactly once: " + losses.told);
        lease.close();
        take(realTimeProcess("b"), lock, new Object());
    }

    /**
     * A frozen connection (no byte passes, nothing is reset): renewals hang, and the holder is told EXPIRED before its
     * validity ends, however long the client's own timeouts are; once the claim expired another process takes the
     * lock with a higher token.
     */
    @Test
    void aLeaseOnAFrozenConnectionIsToldBeforeItsValidityEnds() throws Exception {
        Assumptions.assumeTrue(fixture.canFreezeConnections(), "backend has no connection to freeze");
        Locker a = fixture.openFreezable(config("a").timeSource(TimeSource.system()).expiry(LEASE_EXPIRY).build());
        opened.add(a);
        Locker b = realTimeProcess("b");
        KeyColumn lock = lock("x");
        Losses losses = new Losses();
        Lease lease = a.acquire(lock, "job").onLost(losses);
        long token = lease.fencingToken();
        long validUntil;
        long frozeAt;
        try {
            frozeAt = System.nanoTime();
            fixture.freezeConnections();
            validUntil = System.nanoTime() + lease.remaining().toNanos();
            assertTrue(losses.await(LEASE_EXPIRY.toMillis() * 4, TimeUnit.MILLISECONDS), "the listener was told");
            System.out.printf("[conformance] %s: lost signal %d ms after the connection froze (expiry %d ms, %.2f "
                            + "expiries)%n", getClass().getSimpleName(), (losses.toldAt() - frozeAt) / 1_000_000,
                    LEASE_EXPIRY.toMillis(), (losses.toldAt() - frozeAt) / (double) LEASE_EXPIRY.toNanos());
            assertEquals(dev.locker.api.LossReason.EXPIRED, losses.told.get(0).reason(), losses.told.get(0).toString());
            assertTrue(losses.toldAt() - validUntil < 0, "told " + (losses.toldAt() - validUntil) / 1_000_000
                    + " ms after the validity ended; it must be before");
            assertFalse(lease.isValid());
            dev.locker.api.Acquisition next = b.acquireWithin(lock, "after the claim expired", Duration.ofSeconds(20));
            assertTrue(next.acquired(), "the frozen holder's claim expired on the server: " + next
                    + next.failure().map(f -> " " + f).orElse(""));
            assertTrue(next.lease().orElseThrow().fencingToken() > token, "a higher token for the next holder");
            next.lease().orElseThrow().close();
        } finally {
            fixture.thawConnections();
        }
        lease.close();
        assertEquals(1, losses.told.size(), "exactly once: " + losses.told);
    }

    /**
     * A waiter is woken by the release: the holder keeps its lease alive (so the lock would never expire), releases
     * it, and the waiter gets it with a higher token, told nothing of a loss.
     */
    @Test
    void aWaiterIsServedWhenTheHolderReleases() throws Exception {
        Locker a = realTimeProcess("a");
        Locker b = realTimeProcess("b");
        KeyColumn lock = lock("x");
        Lease held = a.acquire(lock, "first");
        List<dev.locker.api.LockLost> told = new CopyOnWriteArrayList<>();
        held.onLost(told::add);
        long token = held.fencingToken();
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            Future<Long> waiting = pool.submit(() -> {
                Lease l = b.tryAcquire(lock, "patient", Duration.ofSeconds(60)).orElseThrow();
                long at = System.nanoTime();
                assertTrue(l.fencingToken() > token, "a higher token");
                l.close();
                return at;
            });
            Thread.sleep(LEASE_EXPIRY.toMillis()); // the waiter is refused at least once; the holder renews meanwhile
            long released = System.nanoTime();
            held.close();
            long granted = waiting.get(60, TimeUnit.SECONDS);
            System.out.printf("[conformance] %s: waiter granted %.1f ms after the release%n",
                    getClass().getSimpleName(), (granted - released) / 1e6);
        } finally {
            pool.shutdownNow();
        }
        assertEquals(List.of(), told, "a release is no loss");
    }

    /** A bounded wait says why it ended: busy (naming the holder), acquired, or the backend unreachable (with cause). */
    @Test
    void aBoundedWaitSaysWhyItEnded() throws Exception {
        Locker a = process("a");
        Locker b = process("b");
        KeyColumn lock = lock("x");
        Lease held = a.acquire(lock, "holding");
        dev.locker.api.Acquisition busy = b.acquireWithin(lock, "waiting", Duration.ZERO);
        assertEquals(dev.locker.api.Acquisition.Outcome.BUSY, busy.outcome(), busy.toString());
        assertEquals(a.rid(), busy.holder().orElseThrow().rid());
        assertTrue(busy.lease().isEmpty());
        held.close();
        dev.locker.api.Acquisition got = b.acquireWithin(lock, "now", Duration.ofSeconds(30));
        assertEquals(dev.locker.api.Acquisition.Outcome.ACQUIRED, got.outcome(), got.toString());
        got.lease().orElseThrow().close();
        if (fixture.canBreakBackend()) {
            fixture.breakBackend();
            try {
                dev.locker.api.Acquisition down = b.acquireWithin(lock("y"), "during an outage", Duration.ZERO);
                assertEquals(dev.locker.api.Acquisition.Outcome.UNREACHABLE, down.outcome(), down.toString());
                assertNotNull(down.failure().orElseThrow().getCause(), "the backend's failure is kept");
            } finally {
                fixture.repairBackend();
            }
        }
    }

    // ---- run once, and at most once per period (issue 9) -------------------------------------------------------

    @Test
    void runOnceRunsAJobOnceAcrossProcessesEver() {
        Locker a = realTimeProcess("a");
        Locker b = realTimeProcess("b");
        KeyColumn job = lock("migration");
        java.util.concurrent.atomic.AtomicInteger runs = new java.util.concurrent.atomic.AtomicInteger();
        dev.locker.api.Run first = a.runOnce(job, "migrate", lease -> {
            assertTrue(lease.fencingToken() > 0);
            runs.incrementAndGet();
        });
        assertEquals(dev.locker.api.Run.Outcome.RAN, first.outcome(), first.toString());
        assertEquals(a.rid(), first.record().orElseThrow().ranBy().rid());
        dev.locker.api.Run again = b.runOnce(job, "migrate", lease -> runs.incrementAndGet());
        assertEquals(dev.locker.api.Run.Outcome.ALREADY_DONE, again.outcome(), again.toString());
        assertEquals(a.rid(), again.record().orElseThrow().ranBy().rid(), "names who ran it");
        assertEquals(first.record().get().token(), again.record().get().token());
        operator().forceRelease(job); // a forced release or any later claim leaves the record alone
        b.acquire(job, "someone else").close();
        assertEquals(dev.locker.api.Run.Outcome.ALREADY_DONE, b.runOnce(job, "migrate", l -> runs.incrementAndGet()).outcome());
        assertEquals(1, runs.get());
        assertEquals(0, a.list("", 100, null).locks().stream().filter(i -> i.lock().equals(job)).count(),
                "the record is no held lock");
    }

    @Test
    void aRunningJobIsBusyForOthersAndAFailedOneRunsAgain() throws Exception {
        Locker a = realTimeProcess("a");
        Locker b = realTimeProcess("b");
        KeyColumn job = lock("job");
        CountDownLatch running = new CountDownLatch(1);
        CountDownLatch finish = new CountDownLatch(1);
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            Future<dev.locker.api.Run> first = pool.submit(() -> a.runOnce(job, "slow", lease -> {
                running.countDown();
                try {
                    finish.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                throw new IllegalStateException("the job failed");
            }));
            assertTrue(running.await(30, TimeUnit.SECONDS));
            dev.locker.api.Run busy = b.runOnce(job, "meanwhile", lease -> fail("ran while another ran it"));
            assertEquals(dev.locker.api.Run.Outcome.BUSY, busy.outcome(), busy.toString());
            assertEquals(a.rid(), busy.holder().orElseThrow().rid());
            finish.countDown();
            dev.locker.api.Run failed = first.get(30, TimeUnit.SECONDS);
            assertEquals(dev.locker.api.Run.Outcome.FAILED, failed.outcome(), failed.toString());
            assertEquals("the job failed", failed.failure().orElseThrow().getMessage());
        } finally {
            pool.shutdownNow();
        }
        java.util.concurrent.atomic.AtomicInteger runs = new java.util.concurrent.atomic.AtomicInteger();
        assertEquals(dev.locker.api.Run.Outcome.RAN, b.runOnce(job, "again", l -> runs.incrementAndGet()).outcome(),
                "a failed run left no record");
        assertEquals(1, runs.get());
    }

    /** A run that crashed (its holder never came back) is run by the next process once its claim lapsed. */
    @Test
    void aCrashedRunIsRetriedAfterItsClaimLapses() throws Exception {
        Locker crashed = realTimeProcess("crashed");
        Locker b = realTimeProcess("b");
        KeyColumn job = lock("job");
        crashed.acquire(job, "the run that crashed").keepAlive(false); // never released, never renewed
        assertEquals(dev.locker.api.Run.Outcome.BUSY, b.runOnce(job, "too soon", l -> fail("ran too soon")).outcome());
        Thread.sleep(LEASE_EXPIRY.toMillis() + 300);
        dev.locker.api.Run retried = b.runOnce(job, "retry", l -> { });
        assertEquals(dev.locker.api.Run.Outcome.RAN, retried.outcome(), retried.toString());
    }

    /** The lock lost while the task ran (forced away): the run is not recorded, and says so. */
    @Test
    void aRunThatLostItsLockIsNotRecorded() {
        Locker a = realTimeProcess("a");
        KeyColumn job = lock("job");
        dev.locker.api.Run lost = a.runOnce(job, "job", lease -> operator().forceRelease(job));
        assertEquals(dev.locker.api.Run.Outcome.LOST, lost.outcome(), lost.toString());
        java.util.concurrent.atomic.AtomicInteger runs = new java.util.concurrent.atomic.AtomicInteger();
        assertEquals(dev.locker.api.Run.Outcome.RAN, realTimeProcess("b").runOnce(job, "job", l -> runs.incrementAndGet())
                .outcome());
        assertEquals(1, runs.get());
    }

    @Test
    void runAtMostOncePerPeriodSkipsUntilThePeriodPassed() throws Exception {
        Locker a = realTimeProcess("a");
        Locker b = realTimeProcess("b");
        KeyColumn job = lock("report");
        Duration period = Duration.ofMillis(1500);
        java.util.concurrent.atomic.AtomicInteger runs = new java.util.concurrent.atomic.AtomicInteger();
        assertEquals(dev.locker.api.Run.Outcome.RAN, a.runAtMostOncePer(job, period, "report", l -> runs.incrementAndGet())
                .outcome());
        dev.locker.api.Run notDue = b.runAtMostOncePer(job, period, "report", l -> runs.incrementAndGet());
        assertEquals(dev.locker.api.Run.Outcome.NOT_DUE, notDue.outcome(), notDue.toString());
        assertEquals(a.rid(), notDue.record().orElseThrow().ranBy().rid());
        Thread.sleep(period.toMillis());
        assertEquals(dev.locker.api.Run.Outcome.RAN, b.runAtMostOncePer(job, period, "report", l -> runs.incrementAndGet())
                .outcome());
        assertEquals(2, runs.get());
        assertThrows(IllegalArgumentException.class, () -> a.runAtMostOncePer(job, Duration.ZERO, "x", l -> { }));
        assertThrows(IllegalArgumentException.class, () -> a.runOnce(job, "x", null));
    }

    private Locker operator() {
        return realTimeProcess("operator");
    }

    // ---- many locks at once (issue 9) ----------------------------------------------------------------------------

    @Test
    void acquireAllIsAllOrNothingAndNamesTheHolder() {
        Locker a = process("a");
        Locker c = process("c");
        KeyColumn x = lock("x");
        KeyColumn y = lock("y");
        Object tc = new Object();
        take(c, y, tc);
        TemporaryLockingException e = assertThrows(TemporaryLockingException.class,
                () -> a.acquireAll(List.of(x, y), "both"));
        assertEquals(c.rid(), e.holder().rid());
        take(process("b"), x, new Object()); // x was not left claimed
        c.deleteLocks(tc);
        Locker d = process("d");
        try (Lease both = d.acquireAll(List.of(y, lock("z"), y), "set")) {
            assertEquals(2, both.locks().size(), "duplicates count once");
            assertTrue(both.fencingToken(y) > 0);
            assertThrows(IllegalStateException.class, both::fencingToken, "several locks: one token each");
            assertEquals(d.rid(), a.holder(y).orElseThrow().rid());
        }
        assertThrows(IllegalArgumentException.class, () -> a.acquireAll(List.of(), "nothing"));
    }

    /** Two processes asking for the same set in opposite orders: never both inside, never stuck. */
    @Test
    void acquireAllInOppositeOrdersNeitherDeadlocksNorShares() throws Exception {
        Locker a = process("a");
        Locker b = process("b");
        List<KeyColumn> set = List.of(lock("p"), lock("q"), lock("r"));
        List<KeyColumn> reversed = new ArrayList<>(set);
        java.util.Collections.reverse(reversed);
        AtomicInteger inside = new AtomicInteger();
        List<String> violations = new CopyOnWriteArrayList<>();
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            List<Future<Integer>> runs = new ArrayList<>();
            for (Object[] who : new Object[][]{{a, set}, {b, reversed}}) {
                Locker l = (Locker) who[0];
                @SuppressWarnings("unchecked")
                List<KeyColumn> order = (List<KeyColumn>) who[1];
                runs.add(pool.submit(() -> {
                    int done = 0;
                    for (int i = 0; i < 40 && done < 5; i++) {
                        Optional<Lease> lease = l.tryAcquireAll(order, "set", Duration.ZERO);
                        if (lease.isEmpty()) {
                            Thread.sleep(ThreadLocalRandom.current().nextInt(3));
                            continue;
                        }
                        try (Lease held = lease.get()) {
                            if (inside.incrementAndGet() != 1) {
                                violations.add("both inside at round " + i);
                            }
                            Thread.sleep(1);
                            inside.decrementAndGet();
                            done++;
                        }
                    }
                    return done;
                }));
            }
            int total = 0;
            for (Future<Integer> f : runs) {
                total += f.get(100, TimeUnit.SECONDS);
            }
            assertEquals(List.of(), violations);
            assertTrue(total > 0, "the set was taken at all");
        } finally {
            pool.shutdownNow();
        }
    }

    /** Lockers of one process that share arbitration meet there first: the second is refused without backend I/O. */
    @Test
    void lockersSharingArbitrationMeetInTheProcessFirst() {
        Locker a = process("a");
        Locker b = open(config("b").localArbitration(a.arbitration()).build());
        assertTrue(a.arbitration() == b.arbitration());
        KeyColumn lock = lock("x");
        Object ta = new Object();
        take(a, lock, ta);
        TemporaryLockingException e = assertThrows(TemporaryLockingException.class, () -> b.writeLock(lock, new Object()));
        assertTrue(e.getMessage().contains("this process"), e.getMessage());
        a.deleteLocks(ta);
        take(b, lock, new Object());
    }

    /** Finding 12 of issue 8: one configuration given to two lockers makes two owners, never one owner twice. */
    @Test
    void oneConfigurationForTwoLockersMakesTwoOwners() {
        LockerConfig shared = config("shared").build();
        Locker a = open(shared);
        Locker b = open(shared);
        assertFalse(a.rid().equals(b.rid()), "a rid is unique per locker instance: " + a.rid());
        KeyColumn lock = lock("x");
        Object ta = new Object();
        take(a, lock, ta);
        TemporaryLockingException e = assertContended(b, lock, new Object());
        assertEquals(a.rid(), e.holder().rid());
        b.deleteLocks(new Object());
        a.checkLocks(ta);
    }

    /**
     * Finding 9 of issue 8: a wall-clock step that lands while a claim is being written (NTP, a resumed VM) does not
     * stretch the holder's belief: once the claim's lifetime has passed on the monotonic clock, the holder knows.
     */
    @Test
    void aWallClockStepDuringTheClaimWriteDoesNotStretchTheHoldersBelief() throws Exception {
        Assumptions.assumeTrue(virtualClock != null, "needs a virtual clock to step");
        for (Duration step : List.of(Duration.ofHours(1), Duration.ofHours(-1))) {
            VirtualClock vc = virtualClock;
            LockProbe stepper = new LockProbe() {
                @Override
                public void before(Step s, KeyColumn lock, String rid) {
                    if (s == Step.WRITE) {
                        vc.stepWallClock(step);
                    }
                }
            };
            Locker a = open(config("a").probe(stepper).build());
            KeyColumn lock = lock("x" + step.isNegative());
            Object ta = new Object();
            try {
                take(a, lock, ta);
            } catch (ExpiredLockException refused) {
                continue; // the step made our own claim look dead: refused, which is safe
            }
            pass(expiry().plusMillis(300));
            assertThrows(ExpiredLockException.class, () -> a.checkLocks(ta), "after a step of " + step);
            a.deleteLocks(ta);
        }
    }

    /**
     * Finding 4 of issue 8: a force-released holder learns it at its next verification (one round trip), through the
     * locker and its lease, and at its next renewal; after that, checkLocks fails too (a lost hold stays lost).
     */
    @Test
    void aForceReleasedHolderFailsItsNextVerification() {
        Locker a = process("a");
        Locker operator = process("operator");
        KeyColumn lock = lock("x");
        KeyColumn other = lock("y");
        KeyColumn third = lock("z");
        Object ta = new Object();
        take(a, lock, ta);
        a.verifyLocks(ta);
        Lease lease = a.acquire(other, "lease");
        lease.check();
        Object tc = new Object();
        take(a, third, tc);
        assertTrue(operator.forceRelease(lock));
        assertTrue(operator.forceRelease(other));
        assertTrue(operator.forceRelease(third));
        assertThrows(ExpiredLockException.class, () -> a.verifyLocks(ta));
        assertThrows(ExpiredLockException.class, () -> a.checkLocks(ta), "a lost hold stays lost");
        assertThrows(ExpiredLockException.class, () -> a.renewLocks(tc), "renewal learns it too");
        assertThrows(ExpiredLockException.class, () -> a.fencingToken(third, tc));
        assertThrows(ExpiredLockException.class, lease::check);
        assertThrows(ExpiredLockException.class, lease::renew);
        Locker b = process("b");
        take(b, lock, new Object());
        assertThrows(ExpiredLockException.class, () -> a.verifyLocks(ta), "and keeps failing");
        a.deleteLocks(ta); // must not release b's claim
        lease.close();
        assertEquals(b.rid(), operator.holder(lock).orElseThrow().rid());
    }

    /** Finding 5 of issue 8: every call on a closed locker, or on a lease whose locker closed, fails clearly. */
    @Test
    void aClosedLockerAndItsLeasesFailClearly() {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        Object tx = new Object();
        take(a, lock, tx);
        Lease lease = a.acquire(lock("y"), "closing under it");
        a.close();
        assertThrows(IllegalStateException.class, () -> a.checkLocks(tx));
        assertThrows(IllegalStateException.class, () -> a.verifyLocks(tx));
        assertThrows(IllegalStateException.class, () -> a.renewLocks(tx));
        assertThrows(IllegalStateException.class, () -> a.fencingToken(lock, tx));
        assertThrows(IllegalStateException.class, () -> a.holder(lock));
        assertThrows(IllegalStateException.class, () -> a.forceRelease(lock));
        assertThrows(IllegalStateException.class, lease::check);
        assertThrows(IllegalStateException.class, lease::renew);
        assertThrows(IllegalStateException.class, lease::fencingToken);
        assertDoesNotThrow(() -> a.deleteLocks(tx), "releasing after close is a no-op");
        assertDoesNotThrow(lease::close);
    }

    @Test
    void holderShowsOwnerMetadata() {
        Locker a = process("a");
        Locker viewer = process("viewer");
        KeyColumn lock = lock("x");
        assertEquals(Optional.empty(), viewer.holder(lock));
        String thread = Thread.currentThread().getName();
        take(a, lock, new LockTransaction("migrating schema v42"));
        LockOwner o = viewer.holder(lock).orElseThrow();
        assertEquals(a.rid(), o.rid());
        assertEquals("host-a", o.host());
        assertEquals(4242, o.pid());
        assertEquals(thread, o.thread());
        assertEquals("migrating schema v42", o.why());
    }

    @Test
    void closingALockerReleasesItsOpenTransactions() {
        Locker a = process("a");
        Locker b = process("b");
        KeyColumn lock = lock("x");
        take(a, lock, new Object());
        a.close();
        take(b, lock, new Object());
        assertThrows(IllegalStateException.class, () -> a.writeLock(lock("y"), new Object()));
    }

    // ---- listing ----------------------------------------------------------------------------------------------

    /**
     * Three processes: a holds two locks (keys of different lengths), b holds two columns of one key and released a
     * third lock, c "crashed" holding a lock that then expired, and a holds one lock outside the prefix whose key plus
     * column nevertheless starts with the prefix bytes. Listing the prefix shows exactly the four held locks with
     * their holders and fencing tokens; paging two at a time visits each of them once; the empty prefix lists them too.
     */
    @Test
    void listShowsExactlyTheHeldLocksWithTheirHoldersAndTokens() throws Exception {
        Duration longExpiry = Duration.ofMinutes(10);
        Locker a = open(config("a").expiry(longExpiry).build());
        Locker b = open(config("b").expiry(longExpiry).build());
        Locker c = process("c");
        Locker viewer = process("viewer");
        String thread = Thread.currentThread().getName();
        String scenario = new String(lock("").key(), StandardCharsets.UTF_8);
        take(c, lock("crashed"), new LockTransaction("crashed holder"));
        pass(expiry().plusMillis(300)); // c never released: its claim is dead now

        Map<KeyColumn, Long> held = new HashMap<>();
        Map<KeyColumn, Locker> holders = new HashMap<>();
        Map<KeyColumn, String> whys = new HashMap<>();
        List<KeyColumn> ofA = List.of(lock("a"), lock("a-with-a-longer-key"));
        List<KeyColumn> ofB = List.of(KeyColumn.of(scenario + "b", "c1"), KeyColumn.of(scenario + "b", "c2"));
        for (KeyColumn l : ofA) {
            LockTransaction tx = new LockTransaction("job " + l.keyLength());
            take(a, l, tx);
            held.put(l, a.fencingToken(l, tx));
            holders.put(l, a);
            whys.put(l, tx.why());
        }
        for (KeyColumn l : ofB) {
            LockTransaction tx = new LockTransaction("job b");
            take(b, l, tx);
            held.put(l, b.fencingToken(l, tx));
            holders.put(l, b);
            whys.put(l, tx.why());
        }
        Object released = new Object();
        take(b, lock("released"), released);
        b.deleteLocks(released);
        KeyColumn outside = KeyColumn.of(scenario.substring(0, scenario.length() - 1),
                scenario.substring(scenario.length() - 1) + "outside");
        take(a, outside, new Object());

        LockPage page = viewer.list(scenario, 100, null);
        List<LockInfo> listed = new ArrayList<>(page.locks());
        page.nextCursor().ifPresent(next -> listed.addAll(listAll(viewer, lock("").key(), 100, next)));
        Map<KeyColumn, LockInfo> byLock = new HashMap<>();
        for (LockInfo info : listed) {
            assertNull(byLock.put(info.lock(), info), "listed twice: " + info);
        }
        assertEquals(held.keySet(), byLock.keySet(), "exactly the held locks under the prefix");
        for (KeyColumn l : held.keySet()) {
            LockInfo info = byLock.get(l);
            LockOwner o = info.holder();
            assertEquals(holders.get(l).rid(), o.rid(), "holder of " + l);
            assertEquals(holders.get(l) == a ? "host-a" : "host-b", o.host());
            assertEquals(4242, o.pid());
            assertEquals(thread, o.thread());
            assertEquals(whys.get(l), o.why());
            assertEquals(held.get(l), info.fencingToken(), "the holder's fencing token of " + l);
            assertEquals(viewer.holder(l).orElseThrow(), o, "list and holder agree on " + l);
            assertNotNull(o.since(), "since of " + l);
            Duration lifetime = Duration.between(o.since(), info.expiresAt());
            assertTrue(lifetime.compareTo(longExpiry.minusSeconds(5)) > 0 && lifetime.compareTo(longExpiry.plusSeconds(5)) < 0,
                    "expiresAt of " + info + " is about since + expiry");
        }

        List<LockInfo> paged = listAll(viewer, lock("").key(), 2, null);
        assertEquals(held.size(), paged.size(), "paging visits each held lock once: " + paged);
        assertEquals(held.keySet(), new HashSet<>(paged.stream().map(LockInfo::lock).toList()));

        List<KeyColumn> everywhere = new ArrayList<>();
        for (LockInfo info : listAll(viewer, new byte[0], Locker.MAX_LIST_LIMIT, null)) {
            if (info.lock().keyStartsWith(lock("").key())) {
                everywhere.add(info.lock());
            }
        }
        assertEquals(held.size(), everywhere.size(), "the empty prefix lists every lock once: " + everywhere);
        assertEquals(held.keySet(), new HashSet<>(everywhere));
    }

    @Test
    void listRefusesBadArgumentsBeforeAnyIoAndFailsOnAClosedLocker() {
        Locker a = process("a");
        take(a, lock("x"), new Object());
        assertListArgumentsRefused(a);
        assertEquals(1, listAll(a, lock("").key(), 1, null).size(), "the locker works after refusing");
        a.close();
        assertThrows(IllegalStateException.class, () -> a.list(lock("").key(), 10, null));
        assertThrows(IllegalStateException.class, () -> a.list("", 10, null));
    }

    @Test
    void listArgumentsAreRefusedEvenWhenTheBackendIsDown() {
        Assumptions.assumeTrue(fixture.canBreakBackend(), "backend cannot be broken");
        Locker a = process("a");
        fixture.breakBackend();
        try {
            assertListArgumentsRefused(a);
        } finally {
            fixture.repairBackend();
        }
    }

    private static void assertListArgumentsRefused(Locker a) {
        assertThrows(IllegalArgumentException.class, () -> a.list("", 0, null));
        assertThrows(IllegalArgumentException.class, () -> a.list("", Locker.MAX_LIST_LIMIT + 1, null));
        assertThrows(IllegalArgumentException.class, () -> a.list(new byte[0], -1, null));
        assertThrows(IllegalArgumentException.class, () -> a.list((String) null, 10, null));
        assertThrows(IllegalArgumentException.class, () -> a.list((byte[]) null, 10, null));
        assertThrows(IllegalArgumentException.class, () -> a.list("lone\uD800surrogate", 10, null));
        assertThrows(IllegalArgumentException.class, () -> a.list("", 10, "not a cursor of this backend"));
        assertThrows(IllegalArgumentException.class, () -> a.list("", 10, ""));
        assertThrows(IllegalArgumentException.class, () -> a.list(new byte[1 << 20], 10, null), "longer than maxKeyBytes");
    }

    /** Every page of a listing from {@code cursor} on; each page holds at most {@code limit} locks. */
    protected static List<LockInfo> listAll(Locker locker, byte[] keyPrefix, int limit, String cursor) {
        List<LockInfo> out = new ArrayList<>();
        String next = cursor;
        for (int pages = 0; pages < 100_000; pages++) {
            LockPage page = locker.list(keyPrefix, limit, next);
            assertTrue(page.locks().size() <= limit, "a page holds at most " + limit + " locks: " + page);
            out.addAll(page.locks());
            next = page.nextCursor().orElse(null);
            if (next == null) {
                return out;
            }
        }
        throw new AssertionError("the listing did not end within 100000 pages");
    }

    // ---- names ----------------------------------------------------------------------------------------------

    static List<KeyColumn> hostileNames(String prefix) {
        List<KeyColumn> out = new ArrayList<>();
        out.add(KeyColumn.of(prefix + "plain", ""));
        out.add(KeyColumn.of(prefix + "$ne", "c"));
        out.add(KeyColumn.of(prefix + "a.b", "c"));
        out.add(KeyColumn.of(prefix + "{tag}", "c"));
        out.add(KeyColumn.of(prefix + "{\"$gt\": \"\"}", "c"));
        out.add(KeyColumn.of(prefix + "nul\u0000byte", "c"));
        out.add(KeyColumn.of(prefix + "nul", "\u0000byte"));
        out.add(KeyColumn.of(prefix + "quote'\"`;--", "*"));
        out.add(KeyColumn.of(prefix + "lua]]..redis.call('FLUSHALL')--", "c"));
        out.add(KeyColumn.of(prefix + "ünïcödé ✓ 𝄞", "c"));
        byte[] binary = new byte[256];
        for (int i = 0; i < binary.length; i++) {
            binary[i] = (byte) i;
        }
        out.add(KeyColumn.of((prefix + "bin").getBytes(StandardCharsets.UTF_8), binary));
        return out;
    }

    @Test
    void hostileNamesAreIndependentLocks() {
        Locker a = process("a");
        Locker b = process("b");
        List<KeyColumn> names = hostileNames(prefix);
        for (KeyColumn held : names) {
            Object ta = new Object();
            take(a, held, ta);
            assertEquals(a.rid(), b.holder(held).orElseThrow().rid(), "holder of " + held);
            for (KeyColumn other : names) {
                if (other.equals(held)) {
                    assertContended(b, other, new Object());
                } else {
                    Object tb = new Object();
                    take(b, other, tb);
                    b.deleteLocks(tb);
                }
            }
            a.deleteLocks(ta);
        }
    }

    @Test
    void prefixesAndSeparatorsDoNotCollide() {
        Locker a = process("a");
        Locker b = process("b");
        List<KeyColumn> names = List.of(KeyColumn.of(prefix + "a", ""), KeyColumn.of(prefix + "a:x", ""),
                KeyColumn.of(prefix + "a", ":x"), KeyColumn.of(prefix + "a:", "x"), KeyColumn.of(prefix + "a", "x"),
                KeyColumn.of(prefix + "ax", ""));
        Object ta = new Object();
        take(a, names.get(0), ta);
        for (KeyColumn other : names.subList(1, names.size())) {
            take(b, other, new Object());
        }
    }

    @Test
    void differentColumnsOfOneKeyNeverConflict() {
        Locker a = process("a");
        Locker b = process("b");
        take(a, KeyColumn.of(prefix + "row", "c1"), new Object());
        take(b, KeyColumn.of(prefix + "row", "c2"), new Object());
        take(a, KeyColumn.of(prefix + "row", "c3"), new Object());
    }

    @Test
    void badInputIsRefusedBeforeAnyIo() {
        Locker a = process("a");
        assertThrows(IllegalArgumentException.class, () -> a.writeLock(null, new Object()));
        assertThrows(IllegalArgumentException.class, () -> a.writeLock(lock("x"), null));
        assertThrows(IllegalArgumentException.class, () -> KeyColumn.of("", "c"));
        assertThrows(IllegalArgumentException.class, () -> KeyColumn.of("lone\uD800surrogate", "c"));
        assertThrows(IllegalArgumentException.class, () -> KeyColumn.of((String) null, "c"));
        KeyColumn huge = KeyColumn.of(new byte[1 << 20], new byte[0]);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> a.writeLock(huge, new Object()));
        assertTrue(e.getMessage().contains("maxKeyBytes"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> a.holder(huge));
        assertThrows(IllegalArgumentException.class, () -> a.forceRelease(huge));
        assertThrows(IllegalArgumentException.class, () -> config("x").expiry(Duration.ofSeconds(-1)));
        assertThrows(IllegalArgumentException.class, () -> config("x").lockWait(Duration.ofSeconds(-1)));
        assertThrows(IllegalArgumentException.class, () -> a.tryAcquire(lock("x"), "w", Duration.ofSeconds(-1)));
        // nothing was lost: the locker works after refusing
        take(a, lock("x"), new Object());
    }

    @Test
    void oversizedNamesAreRefusedEvenWhenTheBackendIsDown() {
        Assumptions.assumeTrue(fixture.canBreakBackend(), "backend cannot be broken");
        Locker a = process("a");
        KeyColumn huge = KeyColumn.of(new byte[1 << 20], new byte[0]);
        fixture.breakBackend();
        try {
            assertThrows(IllegalArgumentException.class, () -> a.writeLock(huge, new Object()));
        } finally {
            fixture.repairBackend();
        }
    }

    // ---- absurd durations ---------------------------------------------------------------------------------------

    /** 100 years and a day: past the longest expiry a backend may count exactly (Redis: server microseconds in doubles). */
    @Test
    void anExpiryOfACenturyAndADayIsRefusedUpFrontOrHoldsTheLock() throws Exception {
        assertRefusedUpFrontOrHolds(Duration.ofDays(36_525 + 1), "century");
    }

    /** Long.MAX_VALUE ms (~292 million years): made Redis's safety-net PEXPIRE overflow and delete a granted lock. */
    @Test
    void anExpiryOfLongMaxMillisIsRefusedUpFrontOrHoldsTheLock() throws Exception {
        assertRefusedUpFrontOrHolds(Duration.ofMillis(Long.MAX_VALUE), "max-millis");
    }

    /** Long.MAX_VALUE s: not even a whole number of nanoseconds, milliseconds or an Instant past "now" fits it. */
    @Test
    void anExpiryOfLongMaxSecondsIsRefusedUpFrontOrHoldsTheLock() throws Exception {
        assertRefusedUpFrontOrHolds(Duration.ofSeconds(Long.MAX_VALUE), "max-seconds");
    }

    /** A long but sane expiry is never refused: it holds the lock like any other. */
    @Test
    void aTenYearExpiryHoldsTheLock() throws Exception {
        Duration tenYears = Duration.ofDays(3_653);
        Locker a = open(config("a").expiry(tenYears).build());
        Locker b = open(config("b").expiry(tenYears).build());
        assertHoldsThenFrees(a, b, lock("ten-years"));
    }

    /**
     * Either the configuration {@code expiry} is refused when a locker is opened with it — an IllegalArgumentException
     * naming the expiry, also when the backend is down (so, before any I/O) — or a lease taken with it holds the lock
     * against a second locker with the same expiry and a third with the scenario's, and a release frees it.
     */
    private void assertRefusedUpFrontOrHolds(Duration expiry, String name) throws Exception {
        Locker a;
        try {
            a = open(config("a").expiry(expiry).build());
        } catch (IllegalArgumentException refused) {
            assertTrue(refused.getMessage().contains("expiry"), "the refusal names the expiry: " + refused.getMessage());
            if (fixture.canBreakBackend()) {
                fixture.breakBackend();
                try {
                    IllegalArgumentException down = assertThrows(IllegalArgumentException.class,
                            () -> open(config("a-down").expiry(expiry).build()), "refused before any I/O");
                    assertTrue(down.getMessage().contains("expiry"), down.getMessage());
                } finally {
                    fixture.repairBackend();
                }
            }
            return;
        }
        Locker b = open(config("b").expiry(expiry).build());
        assertHoldsThenFrees(a, b, lock(name));
    }

    /** a's lease holds {@code lock} against b and a third process, survives time passing and renewal, then frees it. */
    private void assertHoldsThenFrees(Locker a, Locker b, KeyColumn lock) throws Exception {
        Locker c = process("c");
        String scenario = new String(lock("").key(), StandardCharsets.UTF_8);
        long token;
        try (Lease lease = a.acquire(lock, "for ages")) {
            token = lease.fencingToken();
            assertTrue(token > 0, "a held lock has a positive fencing token: " + token);
            assertTrue(lease.isValid(), "the holder's lease is valid");
            assertFalse(lease.remaining().isNegative() || lease.remaining().isZero(), "remaining " + lease.remaining());
            assertEquals(a.rid(), b.holder(lock).orElseThrow().rid(), "b sees a hold it");
            assertThrows(TemporaryLockingException.class, () -> b.acquire(lock, "me too"));
            assertContended(b, lock, new LockTransaction("me too, in three phases"));
            assertContended(c, lock, new LockTransaction("me three"));

            pass(expiry().multipliedBy(2)); // longer than any scenario claim lives: this one must not have died
            assertTrue(lease.isValid(), "the holder's lease is still valid");
            lease.renew();
            assertEquals(token, lease.fencingToken(), "renewal keeps the token");
            assertContended(b, lock, new LockTransaction("after the renewal"));
            assertThrows(TemporaryLockingException.class, () -> c.acquire(lock, "after the renewal"));
            LockInfo listed = c.list(scenario, 10, null).locks().stream()
                    .filter(i -> i.lock().equals(lock)).findFirst().orElseThrow(() -> new AssertionError("not listed"));
            assertEquals(a.rid(), listed.holder().rid());
            assertEquals(token, listed.fencingToken());
            assertTrue(listed.expiresAt().isAfter(clock.now()), "listed as alive: " + listed);
        }
        assertEquals(Optional.empty(), c.holder(lock), "released");
        try (Lease second = b.acquire(lock, "my turn")) {
            assertTrue(second.fencingToken() > token, "the next holder's token " + second.fencingToken()
                    + " is above the first's, " + token);
            assertTrue(second.isValid());
            assertContended(c, lock, new LockTransaction("still not me"));
        }
        try (Lease third = c.acquire(lock, "at last")) {
            assertTrue(third.isValid());
        }
    }

    // ---- many processes -----------------------------------------------------------------------------------------

    /** N processes x M threads take one lock in turn; the guarded counter never sees two holders. */
    @Test
    void mutualExclusionOnOneLock() throws Exception {
        runContention(1, 3, 3, 12);
    }

    /** Same, over several locks at once: each lock has its own guard. */
    @Test
    void mutualExclusionOnManyLocks() throws Exception {
        runContention(6, 3, 2, 12);
    }

    private void runContention(int lockCount, int processes, int threadsPerProcess, int rounds) throws Exception {
        Duration longExpiry = Duration.ofMinutes(10);
        List<Locker> lockers = new ArrayList<>();
        for (int p = 0; p < processes; p++) {
            lockers.add(open(config("p" + p).expiry(longExpiry).build()));
        }
        KeyColumn[] locks = new KeyColumn[lockCount];
        AtomicInteger[] inside = new AtomicInteger[lockCount];
        AtomicLong[] lastToken = new AtomicLong[lockCount];
        @SuppressWarnings("unchecked")
        java.util.concurrent.atomic.AtomicReference<String>[] lastHolder = new java.util.concurrent.atomic.AtomicReference[lockCount];
        for (int i = 0; i < lockCount; i++) {
            locks[i] = lock("contended-" + i);
            inside[i] = new AtomicInteger();
            lastToken[i] = new AtomicLong();
            lastHolder[i] = new java.util.concurrent.atomic.AtomicReference<>("nobody");
        }
        AtomicInteger sections = new AtomicInteger();
        List<String> violations = new CopyOnWriteArrayList<>();
        ConcurrentHashMap<String, Integer> winsByProcess = new ConcurrentHashMap<>();
        ExecutorService pool = Executors.newFixedThreadPool(processes * threadsPerProcess);
        CountDownLatch start = new CountDownLatch(1);
        List<Future<?>> futures = new ArrayList<>();
        for (Locker l : lockers) {
            for (int t = 0; t < threadsPerProcess; t++) {
                futures.add(pool.submit(() -> {
                    start.await();
                    int done = 0;
                    int attempts = 0;
                    while (done < rounds && attempts < rounds * 400) {
                        attempts++;
                        int i = ThreadLocalRandom.current().nextInt(lockCount);
                        Object tx = new Object();
                        try {
                            take(l, locks[i], tx);
                        } catch (TemporaryLockingException contended) {
                            Thread.sleep(ThreadLocalRandom.current().nextInt(3));
                            continue;
                        }
                        try {
                            String me = l.rid() + " " + Thread.currentThread().getName() + " "
                                    + l.status(locks[i], tx).orElse(null) + " at " + clock.now();
                            if (inside[i].incrementAndGet() != 1) {
                                violations.add("two holders of " + locks[i] + ": " + me + " while " + lastHolder[i].get());
                            }
                            lastHolder[i].set(me);
                            long token = l.fencingToken(locks[i], tx);
                            long prev = lastToken[i].getAndSet(token);
                            if (token <= prev) {
                                violations.add("token " + token + " after " + prev + " on " + locks[i]);
                            }
                            Thread.sleep(1);
                            inside[i].decrementAndGet();
                            sections.incrementAndGet();
                            winsByProcess.merge(l.rid(), 1, Integer::sum);
                            done++;
                        } finally {
                            l.deleteLocks(tx);
                        }
                    }
                    return null;
                }));
            }
        }
        start.countDown();
        for (Future<?> f : futures) {
            f.get(100, TimeUnit.SECONDS);
        }
        pool.shutdownNow();
        assertEquals(List.of(), violations);
        assertTrue(sections.get() > 0, "some critical sections ran");
        assertTrue(winsByProcess.size() > 1, "more than one process won at some point: " + winsByProcess);
    }

    // ---- backend failures ---------------------------------------------------------------------------------

    @Test
    void anUnreachableBackendIsATemporaryFailureWithCause() throws Exception {
        Assumptions.assumeTrue(fixture.canBreakBackend(), "backend cannot be broken");
        Locker a = process("a");
        KeyColumn held = lock("held");
        Object ta = new Object();
        take(a, held, ta);
        fixture.breakBackend();
        try {
            LockingException e = assertThrows(LockingException.class, () -> take(a, lock("other"), new Object()));
            assertInstanceOf(TemporaryLockingException.class, e, "an unreachable server is temporary: " + e);
            assertNotNull(e.getCause(), "the backend failure is kept as the cause");
            assertEquals(lock("other"), e.lock());
            assertDoesNotThrow(() -> a.deleteLocks(ta), "deleteLocks never throws for a backend failure");
        } finally {
            fixture.repairBackend();
        }
        // the backend is back: the lock can be taken again (a restarted server may refuse grants for one expiry)
        Locker b = process("b");
        Optional<Lease> lease = b.tryAcquire(held, "after outage", expiry().multipliedBy(4));
        assertTrue(lease.isPresent(), "lock available again after the backend came back");
        lease.get().close();
    }

    // ---- leases ------------------------------------------------------------------------------------------

    @Test
    void leaseReleasesOnClose() {
        Locker a = process("a");
        Locker b = process("b");
        KeyColumn lock = lock("x");
        Lease lease;
        try (Lease l = a.acquire(lock, "run migration 7")) {
            lease = l;
            assertTrue(l.fencingToken() > 0);
            assertEquals("run migration 7", b.holder(lock).orElseThrow().why());
            assertThrows(TemporaryLockingException.class, () -> b.acquire(lock, "me too"));
        }
        assertTrue(lease.isClosed());
        lease.close(); // twice is harmless
        try (Lease l = b.acquire(lock, "me now")) {
            assertEquals(b.rid(), a.holder(lock).orElseThrow().rid());
        }
    }

    @Test
    void tryAcquireWaitsForTheHolderToRelease() throws Exception {
        Locker a = process("a");
        Locker b = process("b");
        KeyColumn lock = lock("x");
        Lease held = a.acquire(lock, "first");
        assertEquals(Optional.empty(), b.tryAcquire(lock, "impatient", Duration.ZERO));
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            Future<Optional<Lease>> waiting = pool.submit(() -> b.tryAcquire(lock, "patient", Duration.ofMinutes(30)));
            Thread.sleep(30);
            held.close();
            Optional<Lease> got = waiting.get(60, TimeUnit.SECONDS);
            assertTrue(got.isPresent());
            got.get().close();
        } finally {
            pool.shutdownNow();
        }
    }

    // ---- expected-value checking --------------------------------------------------------------------------

    private KeyColumnValueStore evcStore(Locker locker) {
        KeyColumnValueStore s = expectedValueChecking(locker);
        Assumptions.assumeTrue(s != null, "no expected-value-checking store for this backend");
        return s;
    }

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] value(KeyColumnValueStore store, byte[] key, byte[] col, StoreTransaction tx) {
        for (Entry e : store.getSlice(key, col, java.util.Arrays.copyOf(col, col.length + 1), tx)) {
            return e.value();
        }
        return null;
    }

    @Test
    void expectedValueCheckingLocksChecksMutatesCommits() {
        KeyColumnValueStore store = evcStore(process("a"));
        byte[] key = b(prefix + "vertex-1");
        byte[] col = b("name");
        StoreTransaction tx = store.beginTransaction();
        store.acquireLock(key, col, null, tx); // expects the cell absent
        store.mutate(key, List.of(new Entry(col, b("alice"))), List.of(), tx);
        tx.commit();
        StoreTransaction tx2 = store.beginTransaction();
        store.acquireLock(key, col, b("alice"), tx2);
        store.acquireLock(key, col, b("ignored: the first expectation wins"), tx2);
        store.mutate(key, List.of(new Entry(col, b("bob"))), List.of(), tx2);
        tx2.commit();
        StoreTransaction read = store.beginTransaction();
        assertArrayEquals(b("bob"), value(store, key, col, read));
    }

    @Test
    void expectedValueMismatchIsRefusedNamingTheCell() {
        KeyColumnValueStore store = evcStore(process("a"));
        byte[] key = b(prefix + "vertex-2");
        byte[] col = b("age");
        StoreTransaction tx = store.beginTransaction();
        store.acquireLock(key, col, null, tx);
        store.mutate(key, List.of(new Entry(col, b("41"))), List.of(), tx);
        tx.commit();
        StoreTransaction stale = store.beginTransaction();
        store.acquireLock(key, col, b("40"), stale);
        PermanentLockingException e = assertThrows(PermanentLockingException.class,
                () -> store.mutate(key, List.of(new Entry(col, b("42"))), List.of(), stale));
        assertEquals(KeyColumn.of(key, col), e.lock());
        stale.rollback();
        assertArrayEquals(b("41"), value(store, key, col, store.beginTransaction()));
    }

    @Test
    void expectedValueCheckingRefusesLockingAfterMutation() {
        KeyColumnValueStore store = evcStore(process("a"));
        byte[] key = b(prefix + "vertex-3");
        StoreTransaction tx = store.beginTransaction();
        store.acquireLock(key, b("a"), null, tx);
        store.mutate(key, List.of(new Entry(b("a"), b("1"))), List.of(), tx);
        assertThrows(PermanentLockingException.class, () -> store.acquireLock(key, b("b"), null, tx));
        tx.rollback();
    }

    @Test
    void expectedValueCheckingTwoContendersOneWins() {
        KeyColumnValueStore s1 = evcStore(process("a"));
        KeyColumnValueStore s2 = evcStore(process("b"));
        byte[] key = b(prefix + "vertex-4");
        byte[] col = b("unique-name");
        StoreTransaction t1 = s1.beginTransaction();
        StoreTransaction t2 = s2.beginTransaction();
        s1.acquireLock(key, col, null, t1);
        int failures = 0;
        try {
            s2.acquireLock(key, col, null, t2);
            s2.mutate(key, List.of(new Entry(col, b("from-2"))), List.of(), t2);
            t2.commit();
        } catch (TemporaryLockingException e) {
            failures++;
            t2.rollback();
        }
        try {
            s1.mutate(key, List.of(new Entry(col, b("from-1"))), List.of(), t1);
            t1.commit();
        } catch (LockingException e) {
            failures++;
            t1.rollback();
        }
        assertEquals(1, failures, "exactly one contender wins");
    }

    /** Fails the scenario with a message; for backends' own tests. */
    protected static void failWith(String message) {
        fail(message);
    }
}
