package dev.locker.testkit;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LeaseOptions;
import dev.locker.api.LockProbe;
import dev.locker.api.Locker;
import dev.locker.api.TimeSource;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A lease's own terms hold while its steps race: a renewal in flight, a release, a renewal to a new expiry. */
public interface LeaseRaceSection extends ConformanceScenario {

    /**
     * Starts {@code lease.release()} on a thread of its own while a renewal of the lease is paused in flight, and
     * waits until the release parks: it then waits for that renewal, the one step it can wait for.
     */
    private Future<Boolean> releaseBehindRenewal(Lease lease) throws InterruptedException {
        AtomicReference<Thread> releaser = new AtomicReference<>();
        Future<Boolean> released = stepPool().submit(() -> {
            releaser.set(Thread.currentThread());
            return lease.release();
        });
        for (int i = 0; i < 6000 && (releaser.get() == null || releaser.get().getState() != Thread.State.WAITING); i++) {
            Thread.sleep(10);
        }
        assertEquals(Thread.State.WAITING, releaser.get().getState(), "the release waits for the renewal in flight");
        return released;
    }

    /** Lets a renewal that raced a release end either way: what counts is what the release left. */
    private static void settle(Future<?> renewing) throws Exception {
        try {
            renewing.get(1, TimeUnit.MINUTES);
        } catch (ExecutionException raced) {
            // a renewal that meets a release may fail: the lease is closed
        }
    }

    /**
     * Given a lease with a hold-at-least whose renewal (the keep-alive's, or the holder's) is in flight, a release
     * that comes meanwhile still leaves the claim for its hold-at-least, says it was ours, and refuses others.
     */
    @Test
    default void aRenewalInFlightDoesNotCutAReleasedHoldAtLeastShort() throws Exception {
        StepPauses pauses = new StepPauses();
        Locker a = pausable("a", pauses);
        Locker b = process("b");
        KeyColumn lock = lock("x");
        Lease lease = a.acquire(lock, "nightly report", LeaseOptions.expiry(expiry().multipliedBy(4))
                .holdAtLeast(expiry().multipliedBy(2)).keepAlive(false));
        Pause renewal = pauses.before(LockProbe.Step.RENEW);
        Future<?> renewing = stepPool().submit(() -> {
            lease.renew();
            return null;
        });
        renewal.awaitArrival();
        Future<Boolean> released = releaseBehindRenewal(lease);
        renewal.resume();
        settle(renewing);
        assertTrue(released.get(1, TimeUnit.MINUTES), "our claim was there at the release, and is left for its "
                + "hold-at-least");
        assertTrue(b.tryAcquire(lock, "other", Duration.ZERO).isEmpty(),
                "the claim outlives the release until its hold-at-least ends");
    }

    /**
     * Given a lease whose renewal is in flight when it is released, release() says the claim was ours (it was, until
     * this release), and the lock is free after it.
     */
    @Test
    default void aReleaseRacingItsOwnRenewalSaysTheClaimWasOurs() throws Exception {
        StepPauses pauses = new StepPauses();
        Locker a = pausable("a", pauses);
        Locker b = process("b");
        KeyColumn lock = lock("x");
        Lease lease = a.acquire(lock, "job", LeaseOptions.DEFAULTS.keepAlive(false));
        Pause renewal = pauses.before(LockProbe.Step.RENEW);
        Future<?> renewing = stepPool().submit(() -> {
            lease.renew();
            return null;
        });
        renewal.awaitArrival();
        Future<Boolean> released = releaseBehindRenewal(lease);
        renewal.resume();
        settle(renewing);
        assertTrue(released.get(1, TimeUnit.MINUTES), "nobody else took the claim: it was ours at the release");
        try (Lease next = b.tryAcquire(lock, "next", Duration.ZERO).orElseThrow()) {
            assertTrue(next.isValid(), "the release freed the lock");
        }
    }

    /**
     * Given a kept-alive lease renewed to an expiry far shorter than the locker's, the keep-alive renews it on the new
     * expiry's terms. Real time: the keep-alive runs on it.
     */
    @Test
    default void aKeptAliveLeaseRenewedToAShorterExpiryIsKeptAliveOnIt() throws Exception {
        Locker a = open(config("a").timeSource(TimeSource.system()).expiry(LEASE_EXPIRY.multipliedBy(50)).build());
        Locker b = realTimeProcess("b");
        KeyColumn lock = lock("x");
        try (Lease lease = a.acquire(lock, "job")) {
            long token = lease.fencingToken();
            lease.renewFor(LEASE_EXPIRY);
            for (int i = 0; i < 3; i++) {
                Thread.sleep(LEASE_EXPIRY.toMillis());
                assertTrue(lease.isValid(), "kept alive within its new expiry, " + (i + 1) + " expiries on");
            }
            assertTrue(b.tryAcquire(lock, "other", Duration.ZERO).isEmpty(), "the kept-alive lease holds its lock");
            lease.check();
            assertEquals(token, lease.fencingToken(), "renewed in place: same token");
        }
    }
}
