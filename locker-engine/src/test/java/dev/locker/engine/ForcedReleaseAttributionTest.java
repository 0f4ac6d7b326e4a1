package dev.locker.engine;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.ForcedRelease;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockTransaction;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockingException;
import dev.locker.api.LossReason;
import dev.locker.api.TimeSource;
import dev.locker.spi.Entry;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.testkit.FaultyStore;
import dev.locker.testkit.Interleavings;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/** A loss is blamed on a forced release only when that release took this very claim. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ForcedReleaseAttributionTest {

    private final VirtualClock clock = new VirtualClock();

    private final InMemoryStore shared = new InMemoryStore("shared");

    private final ExecutorService pool = Executors.newCachedThreadPool();

    private final List<Locker> lockers = new ArrayList<>();

    private final KeyColumn job = KeyColumn.of("job:migrate", "once");

    @AfterEach
    void tearDown() {
        pool.shutdownNow();
        lockers.forEach(Locker::close);
    }

    private Locker locker(KeyColumnValueStore store, String rid, Duration expiry, Duration lockWait, TimeSource time) {
        Locker l = ConsistentKeyLocker.builder(store)
                .config(LockerConfig.builder().rid(rid).expiry(expiry).lockWait(lockWait).timeSource(time).build())
                .build();
        lockers.add(l);
        return l;
    }

    private static ExpiredLockException expectLoss(Locker l, Object tx) {
        try {
            l.verifyLocks(tx);
        } catch (ExpiredLockException e) {
            return e;
        }
        return fail("expected the claim to be found lost");
    }

    private static final Duration EXPIRY = Duration.ofSeconds(30);

    private static final Duration LOCK_WAIT = Duration.ofMillis(100);

    private final KeyColumn lock = KeyColumn.of("today", "c");

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

    /**
     * A was force-released once, and the record stays until the next forced release. Later A holds the lock again with a
     * new claim, which disappears for an unrelated reason. That loss is not reported FORCE_RELEASED.
     */
    @Test
    void aStaleForcedRecordIsNotBlamedForALaterUnrelatedLoss() {
        Locker a = locker(shared, "a", Duration.ofSeconds(30), Duration.ofMillis(100), clock);
        Locker op = locker(shared, "operator", Duration.ofSeconds(30), Duration.ofMillis(100), clock);
        Object t1 = new Object();
        Interleavings.take(a, job, t1);
        op.forceRelease(job, "first: stuck since the deploy");
        ExpiredLockException first = expectLoss(a, t1);
        assertEquals(LossReason.FORCE_RELEASED, first.reason(), "sanity: the real forced release is named");
        a.deleteLocks(t1);

        clock.advance(Duration.ofHours(1));
        Object t2 = new Object();
        Interleavings.take(a, job, t2);
        // the claim is lost without any forced release: the store lost it (GONE)
        byte[] row = job.encoded();
        List<byte[]> claims = new ArrayList<>();
        for (Entry e : shared.getSlice(row, new byte[0], new byte[0], shared.beginTransaction())) {
            if (ClaimCodec.isClaimColumn(e.column())) {
                claims.add(e.column());
            }
        }
        shared.mutate(row, List.of(), claims, shared.beginTransaction());
        ExpiredLockException second = expectLoss(a, t2);
        assertNotEquals(LossReason.FORCE_RELEASED, second.reason(), "an unrelated loss an hour later is blamed on the "
                + "old forced release: " + second.getMessage());
    }

    /**
     * forceRelease writes its record, then deletes the claims, not atomically. When the removal fails, a
     * forceRelease that throws has not taken the lock unannounced: the holder still learns FORCE_RELEASED.
     */
    @Test
    void aForcedReleaseWhoseRecordWriteFailedIsStillToldAsForced() {
        FaultyStore opStore = new FaultyStore(shared);
        Locker a = locker(shared, "a", Duration.ofSeconds(30), Duration.ofMillis(100), clock);
        Locker op = locker(opStore, "operator", Duration.ofSeconds(30), Duration.ofMillis(100), clock);
        Object t = new Object();
        Interleavings.take(a, job, t);
        opStore.scriptMutations(FaultyStore.Outcome.OK, FaultyStore.Outcome.TEMPORARY_FAILURE);
        boolean threw = false;
        try {
            op.forceRelease(job, "stuck");
        } catch (LockingException e) {
            threw = true;
        }
        boolean retried = op.forceRelease(job, "stuck (retry)");
        ExpiredLockException loss = expectLoss(a, t);
        assertFalse(threw && loss.reason() != LossReason.FORCE_RELEASED, "forceRelease threw, yet removed A's claim; "
                + "the retry returned " + retried + ", the record says " + op.lastForcedRelease(job).orElse(null)
                + ", and A learned " + loss.reason());
    }

    /**
     * A forced release by token takes claim T1 of locker a. A later claim T2 of the same locker, lost within one expiry
     * for another reason (the store lost its column), is not blamed on that release.
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
     * A forced release that reads the claim before it is confirmed records no token (0). The holder, whose hold has no
     * token either, still learns FORCE_RELEASED, and so does a holder that confirmed after the release read the row.
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

    /** A forced release without token whose removal fails while the claim stays leaves the earlier record in place. */
    @Test
    void aForcedReleaseWithoutTokenThatCannotRemoveTheClaimLeavesNoRecordOfIt() {
        FaultyStore opStore = new FaultyStore(shared);
        Locker a = locker(shared, "a", Duration.ofSeconds(30), Duration.ofMillis(100), clock);
        Locker op = locker(opStore, "operator", Duration.ofSeconds(30), Duration.ofMillis(100), clock);
        Object t = new Object();
        Interleavings.take(a, job, t);
        opStore.scriptMutations(FaultyStore.Outcome.OK, FaultyStore.Outcome.TEMPORARY_FAILURE);
        assertThrows(LockingException.class, () -> op.forceRelease(job, "stuck"));
        assertTrue(op.lastForcedRelease(job).isEmpty(), "a record says the release happened: "
                + op.lastForcedRelease(job));
        a.verifyLocks(t);
        assertTrue(op.holder(job).orElseThrow().rid().startsWith("a-"), "the claim is still there");
    }

    /** A failed forced release puts back the record of the release before it, which still names its own claim. */
    @Test
    void aForcedReleaseThatCannotRemoveTheClaimKeepsTheEarlierRecord() {
        FaultyStore opStore = new FaultyStore(shared);
        Locker a = locker(shared, "a", Duration.ofSeconds(30), Duration.ofMillis(100), clock);
        Locker op = locker(opStore, "operator", Duration.ofSeconds(30), Duration.ofMillis(100), clock);
        assertFalse(op.forceRelease(job, "first: nobody holds it"));
        ForcedRelease earlier = op.lastForcedRelease(job).orElseThrow();
        Object t = new Object();
        Interleavings.take(a, job, t);
        opStore.scriptMutations(FaultyStore.Outcome.OK, FaultyStore.Outcome.TEMPORARY_FAILURE);
        assertThrows(LockingException.class, () -> op.forceRelease(job, "second: stuck"));
        assertEquals(earlier.reason(), op.lastForcedRelease(job).orElseThrow().reason());
        a.verifyLocks(t);
    }

    /** A removal that landed though its reply was lost keeps its record: the holder learns FORCE_RELEASED. */
    @Test
    void aForcedReleaseWithoutTokenWhoseRemovalLandedBeforeItFailedIsToldAsForced() {
        FaultyStore opStore = new FaultyStore(shared);
        Locker a = locker(shared, "a", Duration.ofSeconds(30), Duration.ofMillis(100), clock);
        Locker op = locker(opStore, "operator", Duration.ofSeconds(30), Duration.ofMillis(100), clock);
        Object t = new Object();
        Interleavings.take(a, job, t);
        opStore.scriptMutations(FaultyStore.Outcome.OK, FaultyStore.Outcome.APPLIED_THEN_TEMPORARY_FAILURE);
        assertThrows(LockingException.class, () -> op.forceRelease(job, "stuck"));
        assertEquals(LossReason.FORCE_RELEASED, expectLoss(a, t).reason());
    }
}
