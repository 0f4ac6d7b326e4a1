package dev.locker.engine;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LeaseOptions;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A release inside the hold-at-least leaves a claim still alive on the backend, even after the early lost signal. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class HoldAtLeastAfterEarlyLossTest {

    private static final Duration EXPIRY = Duration.ofSeconds(10);

    private final VirtualClock clock = new VirtualClock();
    private final MemLockTable table = new MemLockTable("hold-at-least-" + LockerConfig.randomRid().substring(0, 8));
    private final List<Locker> lockers = new ArrayList<>();
    private final KeyColumn lock = KeyColumn.named("nightly-report");

    @AfterEach
    void closeLockers() {
        lockers.forEach(Locker::close);
    }

    private Locker open(String rid) {
        Locker l = MemLocker.builder(table)
                .config(LockerConfig.builder().rid(rid).expiry(EXPIRY).timeSource(clock).build()).build();
        lockers.add(l);
        return l;
    }

    /**
     * A holds a 10 s lease with a 10 s hold-at-least and a lost-listener, as the ShedLock adapter does when
     * lockAtLeastFor equals lockAtMostFor. At 9.5 s its watchdog tells the loss (a margin before its validity ends),
     * though the claim lives on the backend until 10 s. A's task ends then and releases the lease. The backend still
     * holds A's claim, so the release must leave it until 10 s: B is refused.
     */
    @Test
    void aReleaseAfterTheEarlyLostSignalStillLeavesTheClaimForItsHoldAtLeast() throws Exception {
        Locker a = open("a");
        Locker b = open("b");
        Lease lease = a.acquire(lock, "a job that must hold its lock 10 s",
                LeaseOptions.expiry(EXPIRY).keepAlive(false).holdAtLeast(EXPIRY));
        clock.advance(Duration.ofMillis(9_500)); // inside the watchdog's margin; the claim lives until 10 s
        CountDownLatch told = new CountDownLatch(1);
        lease.onLost(loss -> told.countDown());
        assertTrue(told.await(30, TimeUnit.SECONDS), "the early lost signal came");
        assertEquals(a.rid(), b.holder(lock).orElseThrow().rid(), "A's claim still holds the lock on the backend");
        lease.close(); // inside the hold-at-least
        Optional<Lease> second = b.tryAcquire(lock, "a second run", Duration.ZERO);
        second.ifPresent(Lease::close);
        assertTrue(second.isEmpty(), "B was granted the lock 0.5 s before A's hold-at-least ended");
    }

    /** The same release without a listener (no early signal) leaves the claim: B is refused. */
    @Test
    void aReleaseInsideTheHoldAtLeastLeavesTheClaim() {
        Locker a = open("a");
        Locker b = open("b");
        Lease lease = a.acquire(lock, "a job that must hold its lock 10 s",
                LeaseOptions.expiry(EXPIRY).keepAlive(false).holdAtLeast(EXPIRY));
        clock.advance(Duration.ofMillis(9_500));
        lease.close();
        assertTrue(b.tryAcquire(lock, "a second run", Duration.ZERO).isEmpty(), "A's claim is left until 10 s");
        clock.advance(Duration.ofMillis(600));
        Optional<Lease> after = b.tryAcquire(lock, "a run after the hold-at-least", Duration.ZERO);
        assertTrue(after.isPresent(), "the hold-at-least has ended: " + b.holding(lock));
        after.get().close();
    }
}
