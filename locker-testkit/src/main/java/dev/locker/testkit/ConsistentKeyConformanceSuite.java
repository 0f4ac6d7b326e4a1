package dev.locker.testkit;

import dev.locker.api.Entry;
import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.KeyColumnValueStore;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.PermanentLockingException;
import dev.locker.api.PermanentStoreException;
import dev.locker.api.TemporaryLockingException;
import dev.locker.api.TemporaryStoreException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * JanusGraph's ConsistentKeyLocker scenarios, re-expressed on our API, for the wait-and-read-back locker over any
 * key-column-value store. Faults are injected around the real store by {@link FaultyStore}; time is a
 * {@link VirtualClock}, so a scenario with a 100 ms lock-wait runs in microseconds. Each "process" is a locker
 * instance with its own rid; skewed processes see the clock through an {@link OffsetClock}.
 *
 * <p>The lock row of a key-column is {@code KeyColumn.encoded()}; claim columns start with their 8-byte timestamp
 * (first byte below 0x80), token columns with 0xFF (see locker-local's ClaimCodec).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 60, unit = TimeUnit.SECONDS)
public abstract class ConsistentKeyConformanceSuite {

    /** The real store under test, opened once per test class (scenarios use fresh lock names). */
    protected abstract KeyColumnValueStore openStore() throws Exception;

    /** A ConsistentKeyLocker over {@code store} with {@code config} (its own mediator). */
    protected abstract Locker consistentKeyLocker(KeyColumnValueStore store, LockerConfig config);

    private KeyColumnValueStore real;
    protected FaultyStore store;
    protected VirtualClock clock;
    private final List<Locker> opened = new CopyOnWriteArrayList<>();
    private String prefix;

    private static final Duration LOCK_WAIT = Duration.ofMillis(100);
    private static final Duration EXPIRY = Duration.ofSeconds(30);
    private static final int RETRIES = 3;

    @BeforeAll
    void openRealStore() throws Exception {
        real = openStore();
    }

    @AfterAll
    void closeRealStore() {
        if (real != null) {
            real.close();
        }
    }

    @BeforeEach
    void fresh(TestInfo info) {
        clock = new VirtualClock();
        store = new FaultyStore(real);
        prefix = info.getTestMethod().map(m -> m.getName()).orElse("t") + "-" + LockerConfig.randomRid().substring(0, 8) + "/";
    }

    @AfterEach
    void closeLockers() {
        for (Locker l : opened) {
            l.close();
        }
        opened.clear();
    }

    protected LockerConfig.Builder config(String rid) {
        return LockerConfig.builder().rid(rid).lockWait(LOCK_WAIT).expiry(EXPIRY).retries(RETRIES).timeSource(clock);
    }

    protected Locker process(String rid) {
        return open(config(rid).build());
    }

    protected Locker open(LockerConfig config) {
        Locker l = consistentKeyLocker(store, config);
        opened.add(l);
        return l;
    }

    protected KeyColumn lock(String name) {
        return KeyColumn.of(prefix + name, "c");
    }

    /** The claim columns now in the lock's row (the token column excluded). */
    protected List<byte[]> claimColumns(KeyColumn lock) {
        List<byte[]> out = new ArrayList<>();
        for (Entry e : real.getSlice(lock.encoded(), new byte[0], new byte[0], real.beginTransaction())) {
            if (e.column().length > 8 && e.column()[0] >= 0) {
                out.add(e.column());
            }
        }
        return out;
    }

    @Test
    void singleWriteCheckDeleteLeavesNoClaim() {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        Object tx = new Object();
        a.writeLock(lock, tx);
        assertEquals(1, claimColumns(lock).size());
        a.checkLocks(tx);
        a.deleteLocks(tx);
        assertEquals(0, claimColumns(lock).size());
    }

    @Test
    void aSlowWriteIsRetriedAndItsColumnDeleted() {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        Object tx = new Object();
        store.slowNextMutations(1, LOCK_WAIT.multipliedBy(2), clock);
        a.writeLock(lock, tx);
        assertEquals(2, store.mutations(), "one slow write, one retry that also deletes the slow one");
        assertEquals(1, claimColumns(lock).size(), "the slow attempt's column was deleted");
        a.checkLocks(tx);
        assertTrue(a.status(lock, tx).orElseThrow().isHeld());
    }

    /**
     * A write that took exactly lockWait is not trusted: a claimant with the same timestamp could read the row at
     * the same clock reading as our write completes and miss it (found by the contention scenario: two holders).
     */
    @Test
    void aWriteTakingExactlyTheLockWaitIsRetried() {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        Object tx = new Object();
        store.slowNextMutations(1, LOCK_WAIT, clock);
        a.writeLock(lock, tx);
        assertEquals(2, store.mutations());
        assertEquals(1, claimColumns(lock).size());
    }

    @Test
    void exhaustedRetriesAreTemporaryWithTheCause() {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        store.failNextMutations(RETRIES, false, () -> new TemporaryStoreException("injected timeout"));
        TemporaryLockingException e = assertThrows(TemporaryLockingException.class, () -> a.writeLock(lock, new Object()));
        assertInstanceOf(TemporaryStoreException.class, e.getCause());
        assertEquals(lock, e.lock());
        assertEquals(RETRIES, store.mutations() - 1, "RETRIES attempts, then one clean-up delete");
        Object tx = new Object();
        a.writeLock(lock, tx); // the mediator was freed
        a.checkLocks(tx);
    }

    @Test
    void aPermanentStoreFailureIsPermanentAndTheColumnIsDeleted() {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        store.failNextMutations(1, true, () -> new PermanentStoreException("injected: table is read-only"));
        PermanentLockingException e = assertThrows(PermanentLockingException.class, () -> a.writeLock(lock, new Object()));
        assertInstanceOf(PermanentStoreException.class, e.getCause());
        assertEquals(0, claimColumns(lock).size(), "the written column was deleted");
    }

    @Test
    void localContentionDoesNoStoreIo() {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        Object first = new Object();
        a.writeLock(lock, first);
        int ops = store.operations();
        assertThrows(TemporaryLockingException.class, () -> a.writeLock(lock, new Object()));
        assertEquals(ops, store.operations(), "no store I/O for a lock held in this process");
    }

    @Test
    void repeatedWriteLockDoesNoIo() {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        Object tx = new Object();
        a.writeLock(lock, tx);
        int ops = store.operations();
        a.writeLock(lock, tx);
        assertEquals(ops, store.operations());
    }

    @Test
    void checkLocksTwiceReadsOnce() {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        Object tx = new Object();
        a.writeLock(lock, tx);
        a.checkLocks(tx);
        int ops = store.operations();
        a.checkLocks(tx);
        assertEquals(ops, store.operations(), "a confirmed lock costs no second I/O");
    }

    @Test
    void verifyLocksOnlyReads() {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        Object tx = new Object();
        a.writeLock(lock, tx);
        a.checkLocks(tx);
        int reads = store.reads();
        int mutations = store.mutations();
        a.verifyLocks(tx);
        assertEquals(reads + 1, store.reads(), "a confirmed lock is verified with one read");
        assertEquals(mutations, store.mutations(), "and nothing is written");
    }

    @Test
    void aClaimOneMillisecondSeniorWins() {
        Locker a = process("a");
        Locker b = open(config("b").timeSource(new OffsetClock(clock, Duration.ofMillis(-1))).build());
        KeyColumn lock = lock("x");
        Object ta = new Object();
        Object tb = new Object();
        a.writeLock(lock, ta);
        b.writeLock(lock, tb); // written later, but b's clock says 1 ms earlier
        TemporaryLockingException e = assertThrows(TemporaryLockingException.class, () -> a.checkLocks(ta));
        assertEquals(b.rid(), e.holder().rid());
        b.checkLocks(tb);
        assertTrue(b.status(lock, tb).orElseThrow().isHeld());
    }

    @Test
    void ourSeniorClaimHolds() {
        Locker a = process("a");
        Locker b = open(config("b").timeSource(new OffsetClock(clock, Duration.ofMillis(1))).build());
        KeyColumn lock = lock("x");
        Object ta = new Object();
        Object tb = new Object();
        a.writeLock(lock, ta);
        b.writeLock(lock, tb);
        a.checkLocks(ta);
        TemporaryLockingException e = assertThrows(TemporaryLockingException.class, () -> b.checkLocks(tb));
        assertEquals(a.rid(), e.holder().rid());
    }

    @Test
    void equalTimestampsGoToTheSmallerRid() {
        Locker z = process("z");
        Locker a = process("a");
        KeyColumn lock = lock("x");
        Object tz = new Object();
        Object ta = new Object();
        z.writeLock(lock, tz);
        a.writeLock(lock, ta); // same virtual instant
        a.checkLocks(ta);
        assertThrows(TemporaryLockingException.class, () -> z.checkLocks(tz));
    }

    @Test
    void ourClaimExpiringBeforeTheCheckIsExpiredLockException() {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        Object tx = new Object();
        a.writeLock(lock, tx);
        clock.advance(EXPIRY.plusMillis(1));
        assertThrows(ExpiredLockException.class, () -> a.checkLocks(tx));
    }

    @Test
    void expiredClaimsOfOthersAreIgnoredAndScrubbed() {
        Locker b = process("b");
        Locker a = process("a");
        KeyColumn lock = lock("x");
        b.writeLock(lock, new Object()); // b writes and dies
        clock.advance(EXPIRY.plusMillis(1));
        Object ta = new Object();
        a.writeLock(lock, ta);
        a.checkLocks(ta);
        assertEquals(1, claimColumns(lock).size(), "b's dead claim was scrubbed by a's check");
    }

    @Test
    void aContendedCheckScrubsDeadClaimsInTheBackground() throws Exception {
        Locker dead = process("dead");
        Locker holder = process("holder");
        Locker a = process("a");
        KeyColumn lock = lock("x");
        dead.writeLock(lock, new Object());
        clock.advance(EXPIRY.plusMillis(1));
        Object th = new Object();
        holder.writeLock(lock, th);
        holder.checkLocks(th);
        Object ta = new Object();
        a.writeLock(lock, ta);
        assertThrows(TemporaryLockingException.class, () -> a.checkLocks(ta));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (claimColumns(lock).size() > 2 && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertEquals(2, claimColumns(lock).size(), "only the holder's and a's claims remain");
    }

    /** A live claim of another locker instance counts, whatever its rid name: names are for operators, not owners. */
    @Test
    void aLiveClaimOfAnotherInstanceWithTheSameRidNameBlocks() {
        Locker before = process("same-rid");
        KeyColumn lock = lock("x");
        before.writeLock(lock, new Object()); // another instance with the same name (or an earlier incarnation)
        clock.advance(Duration.ofMillis(5));
        Locker after = process("same-rid");
        Object tx = new Object();
        after.writeLock(lock, tx);
        assertThrows(TemporaryLockingException.class, () -> after.checkLocks(tx));
        after.deleteLocks(tx);
        clock.advance(EXPIRY); // the earlier claim expired: now it is dead and scrubbed
        Object again = new Object();
        after.writeLock(lock, again);
        after.checkLocks(again);
        assertTrue(after.status(lock, again).orElseThrow().isHeld());
    }

    @Test
    void theTokenHighWaterMarkSurvivesForceRelease() {
        Locker a = process("a");
        Locker b = process("b");
        KeyColumn lock = lock("x");
        Object ta = new Object();
        a.writeLock(lock, ta);
        a.checkLocks(ta);
        long t = a.fencingToken(lock, ta);
        b.forceRelease(lock);
        assertEquals(0, claimColumns(lock).size());
        Object tb = new Object();
        b.writeLock(lock, tb);
        b.checkLocks(tb);
        assertTrue(b.fencingToken(lock, tb) > t);
    }

    @Test
    void aLateRenewalIsRefusedWithinTheLockWaitMargin() {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        Object tx = new Object();
        a.writeLock(lock, tx);
        a.checkLocks(tx);
        clock.advance(EXPIRY.minus(LOCK_WAIT.dividedBy(2)));
        assertThrows(ExpiredLockException.class, () -> a.renewLocks(tx),
                "a peer whose clock is ahead by up to lockWait may already consider the claim dead");
    }

    @Test
    void deleteLocksSurvivesAStoreFailure() {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        Object tx = new Object();
        a.writeLock(lock, tx);
        a.checkLocks(tx);
        store.failNextMutations(1, false, () -> new TemporaryStoreException("injected"));
        a.deleteLocks(tx); // logs, does not throw
        Object again = new Object();
        a.writeLock(lock, again); // the mediator was freed all the same
        a.checkLocks(again); // our own released claim that could not be deleted is known to us: it never blocks us
    }
}
