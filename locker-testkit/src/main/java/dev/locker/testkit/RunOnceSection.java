package dev.locker.testkit;

import dev.locker.api.KeyColumn;
import dev.locker.api.Locker;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/** Run-once and run at most once per period, across processes, on top of leases. */
public interface RunOnceSection extends ConformanceScenario {

    @Test
    default void runOnceRunsAJobOnceAcrossProcessesEver() {
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
    default void aRunningJobIsBusyForOthersAndAFailedOneRunsAgain() throws Exception {
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
    default void aCrashedRunIsRetriedAfterItsClaimLapses() throws Exception {
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
    default void aRunThatLostItsLockIsNotRecorded() {
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
    default void runAtMostOncePerPeriodSkipsUntilThePeriodPassed() throws Exception {
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
}
