package dev.locker.local;

import dev.locker.spi.Entry;
import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.api.LockLost;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockingException;
import dev.locker.api.LossReason;
import dev.locker.api.Run;
import dev.locker.api.TimeSource;
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
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Adversarial review of run once / at most once per period (58dc803) and the audited forced release (c29f476), on
 * the wait-and-read-back locker over an in-memory store. Each test replays one interleaving; its javadoc names the
 * property it breaks.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RunOnceReviewTest {

    private final VirtualClock clock = new VirtualClock();
    private final InMemoryStore shared = new InMemoryStore("run-once-review");
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

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /**
     * R1 (SAFETY of the outcome: two RAN for one runOnce). writeRecord is "checked, then written": it confirms the
     * claim (read), reads the record columns (read), then writes. A finishes its task, confirms its claim, and pauses
     * (GC, VM freeze: its keep-alive is stopped too, played here by an outage of A's store) before the write. A's claim
     * expires; B takes the lock, finds no record, runs the job and records it (RAN). A resumes and writes its record
     * column (token lower than B's, but the guard only looked at the columns that existed before the pause): RAN as
     * well. Both callers are told their run was the one; the job ran twice and nothing crashed. On Redis and HBase
     * (check atomic with the write) A would be told LOST. Real clock: expiry 1 s.
     */
    @Test
    void r1_aPausedRecordWriterReportsRanAfterAnotherProcessRanTheJob() throws Exception {
        FaultyStore storeA = new FaultyStore(shared);
        Locker a = locker(storeA, "a", Duration.ofSeconds(1), Duration.ofMillis(20), TimeSource.system());
        Locker b = locker(shared, "b", Duration.ofSeconds(1), Duration.ofMillis(20), TimeSource.system());
        AtomicInteger runs = new AtomicInteger();
        List<LockLost> aLost = new CopyOnWriteArrayList<>();
        // A's mutations: #1 its claim, #2 the token at its check, #3 the record
        Pause beforeRecord = storeA.pauseAt(FaultyStore.Op.MUTATE, 2, false);
        Future<Run> ranA = pool.submit(() -> a.runOnce(job, "a", lease -> {
            lease.onLost(aLost::add);
            runs.incrementAndGet();
        }));
        beforeRecord.awaitArrival();
        assertEquals(1, runs.get(), "A's task ran and A is writing its record");
        storeA.unavailable(true); // A is frozen: no renewal reaches the store
        sleep(1_600); // A's claim expires on the store
        Run ranB = b.runOnce(job, "b", lease -> runs.incrementAndGet());
        storeA.unavailable(false);
        beforeRecord.resume();
        Run a1 = ranA.get(30, TimeUnit.SECONDS);
        assertFalse(a1.ran() && ranB.ran(), "runOnce ran the job " + runs.get() + " times and BOTH callers were told RAN: A "
                + a1 + " (its lease was lost meanwhile: " + aLost + "), B " + ranB);
    }

    /**
     * R2 (COSMETIC, a false audit trail): the forced-release record names a locker by rid and stays until the next
     * forced release, and forcedAway() compares rids only. A was force-released once ("first"). Days later A holds the
     * lock again with a new claim, which then disappears for an unrelated reason (the store lost it, or it was
     * scrubbed as dead): A's loss is reported FORCE_RELEASED, quoting the old operator and reason.
     */
    @Test
    void r2_aStaleForcedRecordNamesTheSameLockerForALaterUnrelatedLoss() {
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

    private static ExpiredLockException expectLoss(Locker l, Object tx) {
        try {
            l.verifyLocks(tx);
        } catch (ExpiredLockException e) {
            return e;
        }
        return fail("expected the claim to be found lost");
    }

    /**
     * R3 (COSMETIC/operability): forceRelease deletes the claims, then writes its record, not atomically. When the
     * record write fails (a store blip), forceRelease throws although the lock was taken away; the operator's retry
     * returns false and overwrites the record with "released: none", so the holder learns GONE and the audit trail
     * never names it.
     */
    @Test
    void r3_aFailedRecordWriteMakesForceReleaseThrowAfterItTookTheLock() {
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
     * R4 (LIVENESS): the period is judged on wall clocks and a record from the future is trusted. A run whose
     * process's wall clock was a day ahead (then corrected by NTP) records startedAt one day ahead; every later call
     * of an hourly job says NOT_DUE for a day (negative "since" is less than the period).
     */
    @Test
    void r4_aRecordFromTheFutureHoldsAnHourlyJobOffForADay() {
        Locker a = locker(shared, "a", Duration.ofSeconds(30), Duration.ofMillis(100), clock);
        Duration hour = Duration.ofHours(1);
        clock.stepWallClock(Duration.ofDays(1));
        assertEquals(Run.Outcome.RAN, a.runAtMostOncePer(job, hour, "hourly", l -> { }).outcome());
        clock.stepWallClock(Duration.ofDays(-1)); // NTP corrects the clock
        clock.advance(Duration.ofHours(2));
        Run later = a.runAtMostOncePer(job, hour, "hourly", l -> { });
        assertEquals(Run.Outcome.RAN, later.outcome(), "two hours later an hourly job is still held off: " + later);
    }
}
