package dev.locker.faults;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.Lockers;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The deadline a worker reports for its lease must never lie past the lease's own: the checker counts any overlap of
 * reported validities as a violation. A pause of the worker between reading its clock and reading the lease's
 * remaining time (SIGSTOP in the STOP_HOLDER scenario) is played here by a virtual clock that jumps as it is read.
 */
class WorkerDeadlineTest {

    @Test
    void aPauseBetweenTheTwoReadingsNeverMovesTheReportedDeadlinePastTheLeases() {
        VirtualClock clock = new VirtualClock();
        try (Locker locker = Lockers.open("mem:worker-deadline",
                LockerConfig.builder().expiry(Duration.ofSeconds(1)).timeSource(clock).build())) {
            Lease lease = locker.acquire(KeyColumn.named("l"), "test");
            lease.keepAlive(false);
            long deadline = clock.nanoTime() + lease.remaining().toNanos();
            assertEquals(deadline, Worker.deadlineOf(lease, clock::nanoTime), "no pause: the lease's deadline");

            // the worker is stopped for 2 s around its clock reading (just before it, or right after it): whichever
            // of the two readings comes first, the lease has expired by the second one, and no deadline may be
            // reported past the lease's (read the other way round, the pause before the clock reading added 2 s)
            long pausedBefore = Worker.deadlineOf(lease, () -> {
                clock.advance(Duration.ofSeconds(2));
                return clock.nanoTime();
            });
            assertEquals(0, pausedBefore, "expired by the time its remaining time is read: no deadline reported");
            Lease again = locker.acquire(KeyColumn.named("k"), "test");
            again.keepAlive(false);
            long pausedAfter = Worker.deadlineOf(again, () -> {
                long now = clock.nanoTime();
                clock.advance(Duration.ofSeconds(2));
                return now;
            });
            assertEquals(0, pausedAfter, "expired by the time its remaining time is read: no deadline reported");

            // a shorter pause: the lease is still valid, and the deadline reported is not past its own
            Lease second = locker.acquire(KeyColumn.named("m"), "test");
            second.keepAlive(false);
            long own = clock.nanoTime() + second.remaining().toNanos();
            long shortPause = Worker.deadlineOf(second, () -> {
                long now = clock.nanoTime();
                clock.advance(Duration.ofMillis(300));
                return now;
            });
            assertTrue(shortPause > 0 && shortPause - own <= 0, "reported " + shortPause + ", the lease's " + own);
        }
    }
}
