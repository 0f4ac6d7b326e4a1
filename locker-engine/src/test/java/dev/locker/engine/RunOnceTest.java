package dev.locker.engine;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockLost;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.Run;
import dev.locker.api.TimeSource;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.testkit.FaultyStore;
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

/** Run-once and run at most once per period on the wait-and-read-back locker: one RAN per run, and records from the future do not bind. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RunOnceTest {

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

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /**
     * A finishes its task, confirms its claim, and pauses before its record write; an outage of A's store stands in for
     * a GC pause that stops its keep-alive too. A's claim expires; B takes the lock, finds no record, runs the job and
     * records it. When A resumes, A and B are never both told RAN. Real clock: expiry 1 s.
     */
    @Test
    void aPausedRecordWriterAndAnotherRunnerAreNeverBothToldRan() throws Exception {
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
     * A run on a host whose wall clock was a day ahead records a start one day ahead. An hourly job is not held off
     * for that day: two hours later it runs again.
     */
    @Test
    void aRecordFromTheFutureHoldsAnHourlyJobOffNoLongerThanItsPeriod() {
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
