package dev.locker.mongo;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LeaseOptions;
import dev.locker.api.Locker;
import dev.locker.api.Run;
import dev.locker.api.TimeSource;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A caller's interrupt (a cancelled task) keeps no release and no run's record from MongoDB; it stays set. */
class MongoInterruptedCallerTest extends MongoScenarios {

    private static final Duration EXPIRY = Duration.ofSeconds(60);

    /** Runs {@code r} on this thread with its interrupt flag set; returns whether the flag was still set after. */
    private static boolean interrupted(Runnable r) {
        Thread.currentThread().interrupt();
        try {
            r.run();
        } catch (RuntimeException | Error e) {
            Thread.interrupted(); // the test's own thread goes on uninterrupted
            throw e;
        }
        return Thread.interrupted(); // clears it: the test's own thread goes on uninterrupted
    }

    @Test
    void aLeaseClosedOnAnInterruptedThreadReleasesItsClaim() {
        Locker a = open(config("a", EXPIRY, TimeSource.system()).build(), Duration.ZERO);
        Locker b = open(config("b", EXPIRY, TimeSource.system()).build(), Duration.ZERO);
        KeyColumn lock = MongoFixture.lock("interrupted-close");
        Lease lease = a.acquire(lock, "a cancelled task", LeaseOptions.DEFAULTS.keepAlive(false));
        assertTrue(interrupted(lease::close), "the caller's interrupt is kept for it");
        Optional<Lease> next = b.tryAcquire(lock, "next", Duration.ZERO);
        assertTrue(next.isPresent(), "the interrupted close removed the claim: " + b.holding(lock));
        next.get().close();
    }

    @Test
    void aLeaseReleasedOnAnInterruptedThreadSaysItWasOursAndFreesTheLock() {
        Locker a = open(config("a", EXPIRY, TimeSource.system()).build(), Duration.ZERO);
        Locker b = open(config("b", EXPIRY, TimeSource.system()).build(), Duration.ZERO);
        KeyColumn lock = MongoFixture.lock("interrupted-release");
        Lease lease = a.acquire(lock, "a cancelled task", LeaseOptions.DEFAULTS.keepAlive(false));
        boolean[] ours = new boolean[1];
        assertTrue(interrupted(() -> ours[0] = lease.release()), "the caller's interrupt is kept for it");
        assertTrue(ours[0], "the claim was ours when released");
        Optional<Lease> next = b.tryAcquire(lock, "next", Duration.ZERO);
        assertTrue(next.isPresent(), "the interrupted release removed the claim: " + b.holding(lock));
        next.get().close();
    }

    /**
     * Given a job whose task restores an interrupt it caught (as a cancelled task does), its run is recorded, and
     * another process then finds the job done rather than running it a second time.
     */
    @Test
    void aRunWhoseTaskRestoresAnInterruptIsRecordedOnce() {
        Locker a = open(config("a", EXPIRY, TimeSource.system()).build(), Duration.ZERO);
        Locker b = open(config("b", EXPIRY, TimeSource.system()).build(), Duration.ZERO);
        KeyColumn job = MongoFixture.lock("interrupted-run");
        Run first;
        try {
            first = a.runOnce(job, "nightly", lease -> Thread.currentThread().interrupt());
        } finally {
            assertTrue(Thread.interrupted(), "the task's interrupt is kept for the caller (and cleared here)");
        }
        assertEquals(Run.Outcome.RAN, first.outcome(), "the task ran under the lock: " + first);
        Run second = b.runOnce(job, "nightly", lease -> { });
        assertEquals(Run.Outcome.ALREADY_DONE, second.outcome(), "the job ran once: " + second);
    }
}
