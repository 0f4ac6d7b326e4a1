package dev.locker.engine;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LeaseOptions;
import dev.locker.api.LockProbe;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.testkit.Pause;
import dev.locker.testkit.StepPauses;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A wait-and-read-back release tells whether our claim was still ours: one that expired, untaken, was not. */
class WaitAndReadBackExpiredReleaseTest {

    private static final Duration EXPIRY = Duration.ofSeconds(10);

    private final VirtualClock clock = new VirtualClock();
    private final InMemoryStore store = new InMemoryStore("expired-release");
    private final List<Locker> lockers = new ArrayList<>();
    private final KeyColumn lock = KeyColumn.of("vertex:7", "name");

    @AfterEach
    void closeLockers() {
        lockers.forEach(Locker::close);
    }

    private Locker open(String rid) {
        return open(rid, LockProbe.NONE);
    }

    private Locker open(String rid, LockProbe probe) {
        Locker l = ConsistentKeyLocker.builder(store)
                .config(LockerConfig.builder().rid(rid).expiry(EXPIRY).timeSource(clock).probe(probe).build()).build();
        lockers.add(l);
        return l;
    }

    /**
     * A's claim expires in the store and nobody takes the lock. Its release must say the claim was no longer ours,
     * as Lease.release documents: the read-back finds our claim's column still there, but dead.
     */
    @Test
    void aReleaseAfterOurClaimExpiredUntakenSaysItWasNotOurs() {
        Locker a = open("a");
        Lease lease = a.acquire(lock, "a task that outlived its lease", LeaseOptions.DEFAULTS.keepAlive(false));
        clock.advance(EXPIRY.multipliedBy(2)); // the claim's expiry passed in the store; nobody came
        assertFalse(lease.isValid(), "the lease has ended by A's own clock");
        assertFalse(lease.release(), "the claim had expired before the release, so it was no longer ours");
    }

    /** The same lease released within its expiry was ours. */
    @Test
    void aReleaseWithinTheExpirySaysItWasOurs() {
        Locker a = open("a");
        Lease lease = a.acquire(lock, "a task within its lease", LeaseOptions.DEFAULTS.keepAlive(false));
        clock.advance(EXPIRY.dividedBy(2));
        assertTrue(lease.release(), "the claim was ours when released");
    }

    /**
     * The release starts well within the expiry, then pauses before it reaches the store until our claim's expiry
     * passed there. The store's read-back finds our claim dead, so the answer is that it was no longer ours.
     */
    @Test
    void aReleaseThatPausedPastOurClaimsExpiryBeforeReachingTheStoreSaysItWasNotOurs() throws Exception {
        StepPauses pauses = new StepPauses();
        Locker a = open("a", pauses);
        Lease lease = a.acquire(lock, "a task whose release stalls", LeaseOptions.DEFAULTS.keepAlive(false));
        clock.advance(EXPIRY.dividedBy(2));
        Pause release = pauses.before(LockProbe.Step.RELEASE);
        CompletableFuture<Boolean> ours = CompletableFuture.supplyAsync(lease::release);
        release.awaitArrival();
        clock.advance(EXPIRY); // our claim's expiry passes in the store while the release is paused
        release.resume();
        assertFalse(ours.get(1, TimeUnit.MINUTES), "the claim had expired in the store before the release reached it");
    }
}
