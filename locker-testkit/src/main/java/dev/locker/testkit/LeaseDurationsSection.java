package dev.locker.testkit;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LeaseOptions;
import dev.locker.api.LockProbe;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockingException;
import dev.locker.api.TimeSource;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Leases with durations: each lease's own expiry, renewal to a new expiry, a hold-at-least, release's answer. */
public interface LeaseDurationsSection extends ConformanceScenario {

    /** One attempt of {@code locker} on {@code lock}: the lease, or empty when it is taken. */
    private static Optional<Lease> tryNow(Locker locker, KeyColumn lock) {
        return locker.tryAcquire(lock, "try", Duration.ZERO);
    }

    @Test
    default void twoLeasesOfOneLockerExpireEachAtItsOwnExpiry() throws Exception {
        Locker a = process("a");
        Locker b = process("b");
        KeyColumn shortLock = lock("short");
        KeyColumn longLock = lock("long");
        Lease shortLease = a.acquire(shortLock, "short job", LeaseOptions.expiry(expiry()).keepAlive(false));
        Lease longLease = a.acquire(longLock, "long job", LeaseOptions.expiry(expiry().multipliedBy(4))
                .keepAlive(false));
        pass(expiry().multipliedBy(3).dividedBy(2));
        assertFalse(shortLease.isValid(), "the short lease ended at its own expiry");
        assertTrue(longLease.isValid(), "the long lease lives on past the short one's expiry");
        try (Lease taken = tryNow(b, shortLock).orElseThrow()) {
            assertTrue(taken.isValid());
        }
        assertTrue(tryNow(b, longLock).isEmpty(), "the long lease still holds its lock");
        pass(expiry().multipliedBy(3));
        try (Lease taken = tryNow(b, longLock).orElseThrow()) {
            assertEquals(b.rid(), a.holder(longLock).orElseThrow().rid());
        }
        shortLease.close();
        longLease.close();
    }

    @Test
    default void aKeptAliveLeaseIsRenewedOnItsOwnExpiry() throws Exception {
        Locker a = open(config("a").timeSource(TimeSource.system()).expiry(LEASE_EXPIRY.multipliedBy(50)).build());
        Locker b = realTimeProcess("b");
        KeyColumn lock = lock("x");
        try (Lease lease = a.acquire(lock, "job", LeaseOptions.expiry(LEASE_EXPIRY))) {
            long token = lease.fencingToken();
            Instant latest = Instant.now().plus(LEASE_EXPIRY.multipliedBy(2));
            assertTrue(b.holding(lock).orElseThrow().expiresAt().isBefore(latest),
                    "the claim was written with the lease's expiry, not the locker's");
            for (int i = 0; i < 3; i++) {
                Thread.sleep(LEASE_EXPIRY.toMillis());
                assertTrue(lease.isValid(), "renewed within its own expiry " + (i + 1) + " times");
                assertTrue(tryNow(b, lock).isEmpty());
            }
            lease.check();
            assertEquals(token, lease.fencingToken(), "renewed in place: same token");
        }
    }

    @Test
    default void renewingToANewExpiryKeepsTheClaimAndItsToken() throws Exception {
        Locker a = process("a");
        Locker b = process("b");
        KeyColumn lock = lock("x");
        try (Lease lease = a.acquire(lock, "job", LeaseOptions.expiry(expiry()).keepAlive(false))) {
            long token = lease.fencingToken();
            pass(expiry().dividedBy(2));
            lease.renewFor(expiry().multipliedBy(4));
            pass(expiry().multipliedBy(2)); // past the first expiry, within the new one
            assertTrue(tryNow(b, lock).isEmpty(), "the renewed lease still holds its lock");
            lease.check();
            assertEquals(token, lease.fencingToken(), "a renewal to a new expiry keeps the token");
            lease.renew(); // later renewals keep the new expiry
            pass(expiry().multipliedBy(2));
            assertTrue(tryNow(b, lock).isEmpty(), "a plain renewal kept the new expiry");
            assertEquals(token, lease.fencingToken());
        }
    }

    @Test
    default void aHoldAtLeastOutlivesTheReleaseThenFreesTheLock() throws Exception {
        Locker a = process("a");
        Locker b = process("b");
        KeyColumn lock = lock("x");
        Lease lease = a.acquire(lock, "nightly report", LeaseOptions.expiry(expiry().multipliedBy(4))
                .holdAtLeast(expiry().multipliedBy(2)).keepAlive(false));
        assertTrue(lease.release(), "our claim was there, and is left for its hold-at-least");
        assertTrue(lease.isClosed());
        assertTrue(tryNow(b, lock).isEmpty(), "the claim outlives the release until its hold-at-least ends");
        assertEquals(a.rid(), b.holder(lock).orElseThrow().rid(), "the backend keeps the released claim");
        pass(expiry().multipliedBy(3));
        try (Lease taken = tryNow(b, lock).orElseThrow()) {
            assertEquals(b.rid(), a.holder(lock).orElseThrow().rid());
        }
    }

    @Test
    default void theReleasingLockerItselfIsRefusedUntilTheHoldAtLeastEnds() throws Exception {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        LeaseOptions options = LeaseOptions.expiry(expiry().multipliedBy(4)).holdAtLeast(expiry().multipliedBy(2))
                .keepAlive(false);
        assertTrue(a.acquire(lock, "scheduled job", options).release());
        assertTrue(tryNow(a, lock).isEmpty(), "the claim left on the backend refuses its own locker too");
        pass(expiry().multipliedBy(3));
        try (Lease again = tryNow(a, lock).orElseThrow()) {
            assertTrue(again.isValid());
        }
    }

    @Test
    default void aReleaseAfterTheHoldAtLeastRemovesTheClaim() throws Exception {
        Locker a = process("a");
        Locker b = process("b");
        KeyColumn lock = lock("x");
        Lease lease = a.acquire(lock, "job", LeaseOptions.expiry(expiry().multipliedBy(4))
                .holdAtLeast(expiry().dividedBy(2)).keepAlive(false));
        pass(expiry());
        assertTrue(lease.release());
        assertTrue(b.holder(lock).isEmpty(), "a release after the hold-at-least removes the claim");
        try (Lease taken = tryNow(b, lock).orElseThrow()) {
            assertTrue(taken.isValid());
        }
    }

    @Test
    default void aReleaseSaysWhetherOurClaimWasStillOurs() throws Exception {
        Locker a = process("a");
        Locker b = process("b");
        Lease kept = a.acquire(lock("kept"), "job", LeaseOptions.DEFAULTS);
        assertTrue(kept.release(), "our claim was there and is removed");
        assertFalse(kept.release(), "a second release finds the lease released");
        kept.close(); // harmless after a release
        assertTrue(b.holder(lock("kept")).isEmpty());

        KeyColumn expired = lock("expired");
        Lease late = a.acquire(expired, "job", LeaseOptions.expiry(expiry()).keepAlive(false));
        pass(expiry().multipliedBy(3).dividedBy(2));
        Lease taker = tryNow(b, expired).orElseThrow();
        assertFalse(late.release(), "our claim expired and was taken over");
        assertEquals(b.rid(), a.holder(expired).orElseThrow().rid(), "the taker's claim is left alone");
        taker.close();

        KeyColumn forced = lock("forced");
        Lease victim = a.acquire(forced, "job", LeaseOptions.expiry(expiry()).keepAlive(false));
        assertTrue(b.forceRelease(forced, "operator"));
        assertFalse(victim.release(), "our claim was force-released");
    }

    @Test
    default void badLeaseOptionsAreRefusedBeforeAnyIo() {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        assertThrows(IllegalArgumentException.class, () -> LeaseOptions.expiry(Duration.ZERO));
        assertThrows(IllegalArgumentException.class, () -> LeaseOptions.expiry(Duration.ofMillis(-1)));
        assertThrows(IllegalArgumentException.class, () -> LeaseOptions.expiry(null));
        assertThrows(IllegalArgumentException.class, () -> LeaseOptions.DEFAULTS.holdAtLeast(Duration.ofMillis(-1)));
        assertThrows(IllegalArgumentException.class, () -> a.acquire(lock, "job", null));
        assertThrows(IllegalArgumentException.class, () -> a.acquire(lock, "job",
                LeaseOptions.expiry(LockerConfig.MAX_EXPIRY.plusDays(1))));
        assertThrows(IllegalArgumentException.class, () -> a.tryAcquire(lock, "job", Duration.ZERO,
                LeaseOptions.expiry(expiry()).holdAtLeast(expiry().multipliedBy(2))));
        assertThrows(IllegalArgumentException.class, () -> a.acquireAll(List.of(lock, lock("y")), "job",
                LeaseOptions.expiry(LockerConfig.MAX_EXPIRY.plusDays(1))));
        assertTrue(a.holder(lock).isEmpty(), "nothing was written");
        try (Lease lease = a.acquire(lock, "job", LeaseOptions.DEFAULTS)) {
            assertThrows(IllegalArgumentException.class, () -> lease.renewFor(Duration.ZERO));
            assertThrows(IllegalArgumentException.class, () -> lease.renewFor(null));
            assertThrows(IllegalArgumentException.class, () -> lease.renewFor(LockerConfig.MAX_EXPIRY.plusDays(1)));
            assertTrue(lease.isValid(), "a refused renewal leaves the lease as it was");
        }
    }

    /**
     * A lease renewed for a shorter term, whose answer was lost, may have its shorter term in the store: it is lost, so
     * its holder never believes in it past that term.
     */
    @Test
    default void aShorterRenewalWhoseAnswerWasLostEndsTheLease() {
        StepPauses steps = new StepPauses();
        Locker a = pausable("a", steps);
        Lease lease = a.acquire(lock("x"), "job", LeaseOptions.expiry(expiry().multipliedBy(4)).keepAlive(false));
        steps.loseAnswerOf(LockProbe.Step.RENEW);
        assertThrows(LockingException.class, () -> lease.renewFor(expiry()));
        assertFalse(lease.isValid(), "the holder still believes in a lease whose shorter term may be in the store");
    }

    /** The same with a longer term: the former deadline is the earlier one either way, so the lease stays. */
    @Test
    default void aLongerRenewalWhoseAnswerWasLostKeepsTheLease() {
        StepPauses steps = new StepPauses();
        Locker a = pausable("a", steps);
        try (Lease lease = a.acquire(lock("x"), "job", LeaseOptions.expiry(expiry()).keepAlive(false))) {
            steps.loseAnswerOf(LockProbe.Step.RENEW);
            assertThrows(LockingException.class, () -> lease.renewFor(expiry().multipliedBy(4)));
            assertTrue(lease.isValid(), "a lease was lost for a longer renewal's lost answer");
        }
    }

}
