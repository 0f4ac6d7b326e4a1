package dev.locker.redis;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LeaseOptions;
import dev.locker.api.LockProbe;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.TimeSource;
import dev.locker.testkit.Pause;
import dev.locker.testkit.RedisServer;
import dev.locker.testkit.StepPauses;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** A locker closed on an interrupted thread still frees the lock of a lease whose renewal is in flight. */
class RedisInterruptedCloseTest {

    private static final Duration EXPIRY = Duration.ofSeconds(60);

    private final RedisServer server = RedisServer.shared();
    private final String prefix = "interrupted-close-" + LockerConfig.randomRid().substring(0, 8) + ":";
    private final List<Locker> opened = new ArrayList<>();

    @AfterEach
    void closeLockers() {
        opened.forEach(Locker::close);
    }

    private Locker open(String rid, LockProbe probe) {
        Locker l = RedisLocker.builder().node("127.0.0.1", server.port()).keyPrefix(prefix).restartGuard(Duration.ZERO)
                .config(LockerConfig.builder().rid(rid).expiry(EXPIRY).timeSource(TimeSource.system()).probe(probe)
                        .build()).build();
        opened.add(l);
        return l;
    }

    /**
     * Given a lease whose renewal is paused before it reaches Redis, its locker is closed on a thread whose interrupt
     * flag is set (a cancelled task, a shutdownNow). Once the renewal goes on, the lock must be free: close waits for
     * the step, or the step removes the claim it finds the hold closed under.
     */
    @Test
    void aLockerClosedOnAnInterruptedThreadFreesTheLockOfALeaseWhoseRenewalIsInFlight() throws Exception {
        StepPauses pauses = new StepPauses();
        Locker a = open("a", pauses);
        Locker b = open("b", LockProbe.NONE);
        KeyColumn lock = KeyColumn.named("closed-while-renewing");
        Lease lease = a.acquire(lock, "a cancelled task", LeaseOptions.DEFAULTS.keepAlive(false));
        Pause renewal = pauses.before(LockProbe.Step.RENEW);
        Thread renewer = new Thread(() -> {
            try {
                lease.renew();
            } catch (RuntimeException lostToTheClose) {
                // the close ends the lease: either answer is fine here, the lock's state is what counts
            }
        }, "renewer");
        renewer.start();
        renewal.awaitArrival();
        // The paused renewal goes on once close returned. A close that waits for it (as it should) is let through
        // after a while instead, so the fixed code does not hang here.
        CountDownLatch closeReturned = new CountDownLatch(1);
        Thread resumer = new Thread(() -> {
            try {
                closeReturned.await(3, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            renewal.resume();
        }, "resumer");
        resumer.start();
        Thread.currentThread().interrupt();
        try {
            a.close();
        } finally {
            Thread.interrupted(); // the test's own thread goes on uninterrupted
            closeReturned.countDown();
        }
        resumer.join();
        renewer.join();
        assertTrue(b.holding(lock).isEmpty(), "a closed locker's claim is gone, not left for its " + EXPIRY
                + " expiry: " + b.holding(lock));
    }
}
