package dev.locker.testkit;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockInfo;
import dev.locker.api.LockLost;
import dev.locker.api.Locker;
import dev.locker.api.TimeSource;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static dev.locker.testkit.Scenarios.take;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Forced release by an operator: it takes only the claim it names, records it, and the holder learns. */
public interface ForcedReleaseSection extends ConformanceScenario {

    @Test
    default void forceReleaseFreesTheLockAndTheHolderLearnsAtRenewal() {
        Locker a = process("a");
        Locker b = process("b");
        Locker operator = process("operator");
        KeyColumn lock = lock("x");
        Object ta = new Object();
        take(a, lock, ta);
        long tokenA = a.fencingToken(lock, ta);
        assertTrue(operator.forceRelease(lock));
        assertFalse(operator.forceRelease(lock), "nothing left to release");
        Object tb = new Object();
        take(b, lock, tb);
        assertTrue(b.fencingToken(lock, tb) > tokenA);
        assertThrows(ExpiredLockException.class, () -> a.renewLocks(ta));
        a.deleteLocks(ta);
        assertEquals(b.rid(), operator.holder(lock).orElseThrow().rid());
    }

    /**
     * A force-released holder learns it at its next verification (one round trip), through the
     * locker and its lease, and at its next renewal; after that, checkLocks fails too (a lost hold stays lost).
     */
    @Test
    default void aForceReleasedHolderFailsItsNextVerification() {
        Locker a = process("a");
        Locker operator = process("operator");
        KeyColumn lock = lock("x");
        KeyColumn other = lock("y");
        KeyColumn third = lock("z");
        Object ta = new Object();
        take(a, lock, ta);
        a.verifyLocks(ta);
        Lease lease = a.acquire(other, "lease");
        lease.check();
        Object tc = new Object();
        take(a, third, tc);
        assertTrue(operator.forceRelease(lock));
        assertTrue(operator.forceRelease(other));
        assertTrue(operator.forceRelease(third));
        assertThrows(ExpiredLockException.class, () -> a.verifyLocks(ta));
        assertThrows(ExpiredLockException.class, () -> a.checkLocks(ta), "a lost hold stays lost");
        assertThrows(ExpiredLockException.class, () -> a.renewLocks(tc), "renewal learns it too");
        assertThrows(ExpiredLockException.class, () -> a.fencingToken(third, tc));
        assertThrows(ExpiredLockException.class, lease::check);
        assertThrows(ExpiredLockException.class, lease::renew);
        Locker b = process("b");
        take(b, lock, new Object());
        assertThrows(ExpiredLockException.class, () -> a.verifyLocks(ta), "and keeps failing");
        a.deleteLocks(ta); // must not release b's claim
        lease.close();
        assertEquals(b.rid(), operator.holder(lock).orElseThrow().rid());
    }

    /** The lost signal after a force release: told once, with the reason; afterwards the lease is invalid everywhere. */
    @Test
    default void aForceReleasedLeaseTellsItsListenerOnce() throws Exception {
        Locker a = realTimeProcess("a");
        Locker operator = realTimeProcess("operator");
        KeyColumn lock = lock("x");
        Losses losses = new Losses();
        Lease lease = a.acquire(lock, "job").onLost(losses);
        long token = lease.fencingToken();
        long released = System.nanoTime();
        assertTrue(operator.forceRelease(lock, "stuck since the deploy"));
        assertTrue(losses.await(LEASE_EXPIRY.toMillis() * 3, TimeUnit.MILLISECONDS), "the listener was told");
        long latency = System.nanoTime() - released;
        System.out.printf("[conformance] %s: lost signal %d ms after a force release (expiry %d ms, %.2f expiries)%n",
                getClass().getSimpleName(), latency / 1_000_000, LEASE_EXPIRY.toMillis(),
                latency / (double) LEASE_EXPIRY.toNanos());
        Thread.sleep(LEASE_EXPIRY.toMillis());
        assertEquals(1, losses.told.size(), "exactly once: " + losses.told);
        assertEquals(lock, losses.told.get(0).lock());
        assertEquals(dev.locker.api.LossReason.FORCE_RELEASED, losses.told.get(0).reason(), losses.told.get(0).toString());
        assertTrue(losses.told.get(0).toString().contains("stuck since the deploy"), "names why: " + losses.told.get(0));
        assertTrue(losses.told.get(0).toString().contains(operator.rid()), "names who: " + losses.told.get(0));
        dev.locker.api.ForcedRelease record = a.lastForcedRelease(lock).orElseThrow();
        assertEquals(operator.rid(), record.by().rid());
        assertEquals("stuck since the deploy", record.reason());
        assertEquals(a.rid(), record.released().orElseThrow().rid());
        assertEquals(token, record.releasedToken().orElseThrow(), "the record names the claim taken by its token");
        assertFalse(lease.isValid());
        assertThrows(ExpiredLockException.class, lease::check);
        assertThrows(ExpiredLockException.class, lease::fencingToken);
        List<dev.locker.api.LockLost> late = new CopyOnWriteArrayList<>();
        lease.onLost(late::add); // a listener added after the loss is told at once
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (late.isEmpty() && System.nanoTime() < until) {
            Thread.sleep(5);
        }
        assertEquals(1, late.size());
        lease.close();
    }

    /**
     * A forced release that names the claim it takes (the operator read token t; the lock changed hands to a live
     * holder with token u before the release): the release by t changes nothing and records nothing; the release by u
     * takes the lock from its holder, who learns it, and the record names that holder.
     */
    @Test
    default void aForcedReleaseByTokenTakesOnlyTheClaimThatCarriesIt() throws Exception {
        Locker a = realTimeProcess("a");
        Locker b = realTimeProcess("b");
        Locker operator = realTimeProcess("operator");
        KeyColumn lock = lock("x");
        Lease la = a.acquire(lock, "job");
        long seen = la.fencingToken(); // what 'locker show' printed
        la.close(); // a's claim ends, and b, alive, takes the lock
        Losses losses = new Losses();
        Lease lb = b.acquire(lock, "job").onLost(losses);
        long current = lb.fencingToken();
        assertTrue(current > seen);
        LockInfo shown = operator.holding(lock).orElseThrow(); // the holder with its token, in one read
        assertEquals(b.rid(), shown.holder().rid());
        assertEquals(current, shown.fencingToken());

        assertFalse(operator.forceRelease(lock, "a is dead", seen), "the claim with token " + seen + " is gone");
        assertTrue(lb.isValid());
        assertDoesNotThrow(lb::check, "b's claim is still there");
        assertEquals(b.rid(), operator.holder(lock).orElseThrow().rid());
        assertTrue(operator.lastForcedRelease(lock).isEmpty(), "nothing recorded");
        assertTrue(losses.told.isEmpty(), "b was told nothing: " + losses.told);

        assertTrue(operator.forceRelease(lock, "b is stuck", current));
        assertTrue(losses.await(LEASE_EXPIRY.toMillis() * 3, TimeUnit.MILLISECONDS), "b was told");
        assertEquals(dev.locker.api.LossReason.FORCE_RELEASED, losses.told.get(0).reason(), losses.told.get(0).toString());
        assertFalse(lb.isValid());
        assertThrows(ExpiredLockException.class, lb::check);
        assertTrue(operator.holder(lock).isEmpty());
        assertTrue(operator.holding(lock).isEmpty());
        dev.locker.api.ForcedRelease record = operator.lastForcedRelease(lock).orElseThrow();
        assertEquals(operator.rid(), record.by().rid());
        assertEquals("b is stuck", record.reason());
        assertEquals(b.rid(), record.released().orElseThrow().rid());
        assertEquals(current, record.releasedToken().orElseThrow());
        lb.close();

        // the same token again, now that nobody holds the lock: nothing to do, nothing recorded
        assertFalse(operator.forceRelease(lock, "once more", current));
        assertEquals("b is stuck", operator.lastForcedRelease(lock).orElseThrow().reason());
        // a later holder's token is another one: the old token never takes the lock from it
        try (Lease lc = a.acquire(lock, "job")) {
            assertFalse(operator.forceRelease(lock, "b is stuck", current));
            assertTrue(lc.isValid());
            assertEquals(a.rid(), operator.holder(lock).orElseThrow().rid());
            assertEquals("b is stuck", operator.lastForcedRelease(lock).orElseThrow().reason());
        }
    }

    /** Bad arguments of the conditional forced release are refused before any I/O, like the unconditional form's. */
    @Test
    default void aForcedReleaseByTokenRefusesBadArguments() {
        Locker operator = process("operator");
        KeyColumn lock = lock("x");
        assertThrows(IllegalArgumentException.class, () -> operator.forceRelease(lock, "r", 0));
        assertThrows(IllegalArgumentException.class, () -> operator.forceRelease(lock, "r", -1));
        assertThrows(IllegalArgumentException.class, () -> operator.forceRelease(lock, "r".repeat(1001), 1));
        assertThrows(IllegalArgumentException.class, () -> operator.forceRelease(null, "r", 1));
        assertFalse(operator.forceRelease(lock, "nobody holds it", 1), "an expected token with no holder");
        assertTrue(operator.lastForcedRelease(lock).isEmpty());
    }

    /**
     * The operator read holder A with token t, then stalls before the removal; meanwhile A's claim ends and B, alive,
     * takes the lock. The release by t, resumed, must leave B alone: false, B's claim and token unchanged, B told
     * nothing, and no record (each backend's removal looks again).
     */
    @Test
    default void aForcedReleaseByTokenThatStalledAfterItsReadLeavesTheNewHolderAlone() throws Exception {
        Pause stalled = new Pause("forceRelease between its holder read and its removal");
        Locker a = realTimeProcess("a");
        Locker b = realTimeProcess("b");
        Locker operator = open(config("operator").timeSource(new ForceReleasePause(TimeSource.system(), stalled))
                .expiry(LEASE_EXPIRY).build());
        KeyColumn lock = lock("x");
        Lease la = a.acquire(lock, "job");
        long t = la.fencingToken();
        Future<Boolean> release = stepPool().submit(() -> operator.forceRelease(lock, "a hangs", t));
        stalled.awaitArrival();

        la.close();
        Losses losses = new Losses();
        Lease lb = b.acquire(lock, "job").onLost(losses);
        long u = lb.fencingToken();
        assertTrue(u > t);
        stalled.resume();
        assertFalse(release.get(1, TimeUnit.MINUTES), "the claim with token " + t + " ended before the removal");

        assertDoesNotThrow(lb::check, "b's claim is still there");
        assertTrue(lb.isValid());
        LockInfo now = operator.holding(lock).orElseThrow();
        assertEquals(b.rid(), now.holder().rid());
        assertEquals(u, now.fencingToken());
        assertTrue(losses.told.isEmpty(), "b was told nothing: " + losses.told);
        assertTrue(operator.lastForcedRelease(lock).isEmpty(), "nothing recorded: "
                + operator.lastForcedRelease(lock).orElse(null));
        lb.close();
    }

    /**
     * The operator read holder A with token t and stalls before the removal while A's lease is kept alive (renewals
     * land in between). Resumed, the release removes A's claim: true, A learns FORCE_RELEASED, the lock is free (no
     * renewal puts the claim back), the record names A, and the next holder's token is higher.
     */
    @Test
    default void aForcedReleaseByTokenThatStalledWhileTheHolderRenewedStillTakesTheLock() throws Exception {
        Pause stalled = new Pause("forceRelease between its holder read and its removal");
        Locker a = realTimeProcess("a");
        Locker operator = open(config("operator").timeSource(new ForceReleasePause(TimeSource.system(), stalled))
                .expiry(LEASE_EXPIRY).build());
        KeyColumn lock = lock("x");
        Losses losses = new Losses();
        Lease la = a.acquire(lock, "job").onLost(losses);
        long t = la.fencingToken();
        Future<Boolean> release = stepPool().submit(() -> operator.forceRelease(lock, "a hangs", t));
        stalled.awaitArrival();
        Thread.sleep(LEASE_EXPIRY.toMillis()); // the keep-alive renews A's claim (in place, same token) meanwhile
        assertTrue(la.isValid(), "a's lease was kept alive");
        assertEquals(t, la.fencingToken());
        stalled.resume();
        assertTrue(release.get(1, TimeUnit.MINUTES), "the claim with token " + t + " still held the lock");

        assertTrue(losses.await(LEASE_EXPIRY.toMillis() * 3, TimeUnit.MILLISECONDS), "a was told");
        assertEquals(dev.locker.api.LossReason.FORCE_RELEASED, losses.told.get(0).reason(), losses.told.get(0).toString());
        assertFalse(la.isValid());
        assertTrue(operator.holding(lock).isEmpty(), "free: " + operator.holding(lock).orElse(null));
        assertEquals(a.rid(), operator.lastForcedRelease(lock).orElseThrow().released().orElseThrow().rid());
        try (Lease lb = realTimeProcess("b").acquire(lock, "job")) {
            assertTrue(lb.fencingToken() > t, "the next holder's token is higher");
        }
        la.close();
    }

    /** Tokens at the limits (1, 2^53, 2^53 + 1, Long.MAX_VALUE) and next to the holder's name no holder: nothing happens. */
    @Test
    default void aForcedReleaseByATokenAtTheLimitsNamesNoOtherHolder() {
        Locker a = process("a");
        Locker operator = process("operator");
        KeyColumn lock = lock("x");
        Object tx = new Object();
        take(a, lock, tx);
        long t = a.fencingToken(lock, tx);
        for (long other : new long[] {1, t - 1, t + 1, 1L << 53, (1L << 53) + 1, Long.MAX_VALUE - 1, Long.MAX_VALUE}) {
            if (other != t && other >= 1) {
                assertFalse(operator.forceRelease(lock, "not its token", other), "token " + other + " vs " + t);
            }
        }
        assertTrue(operator.lastForcedRelease(lock).isEmpty());
        assertEquals(t, operator.holding(lock).orElseThrow().fencingToken());
        a.verifyLocks(tx);
        a.deleteLocks(tx);
    }

    /**
     * The record of a forced release names the claim it took by its fencing token, so a later loss of the same
     * locker is not blamed on it: A's first lease is force-released (A is told FORCE_RELEASED), A takes the lock again
     * at once, and the server then loses A's second claim. A is told GONE, not FORCE_RELEASED with the operator's
     * reason: that release took another claim (the record's token), whatever its rid and time say.
     */
    @Test
    default void aLossAfterAnEarlierForcedReleaseOfTheSameLockerIsNotBlamedOnIt() throws Exception {
        Assumptions.assumeTrue(fixture().canLoseClaims(), "backend cannot lose claims on demand");
        Locker a = realTimeProcess("a");
        Locker operator = realTimeProcess("operator");
        KeyColumn lock = lock("x");
        Losses first = new Losses();
        Lease lease = a.acquire(lock, "job").onLost(first);
        long token = lease.fencingToken();
        assertTrue(operator.forceRelease(lock, "stuck since the deploy"));
        assertTrue(first.await(LEASE_EXPIRY.toMillis() * 3, TimeUnit.MILLISECONDS), "the listener was told");
        assertEquals(dev.locker.api.LossReason.FORCE_RELEASED, first.told.get(0).reason(), first.told.get(0).toString());
        assertEquals(token, operator.lastForcedRelease(lock).orElseThrow().releasedToken().orElseThrow(),
                "the record names the claim it took by its token");
        lease.close();

        Losses second = new Losses();
        Lease again = a.acquire(lock, "job").onLost(second);
        assertTrue(again.fencingToken() > token);
        fixture().loseClaims(lock);
        assertTrue(second.await(LEASE_EXPIRY.toMillis() * 3, TimeUnit.MILLISECONDS), "the listener was told");
        assertEquals(dev.locker.api.LossReason.GONE, second.told.get(0).reason(), second.told.get(0).toString());
        assertFalse(second.told.get(0).toString().contains("stuck since the deploy"),
                "not blamed on the earlier release: " + second.told.get(0));
        again.close();
    }

    /** A lease on two locks that loses both to forced releases tells its listener once. */
    @Test
    default void aMultiLockLeaseThatLosesBothLocksTellsItsListenerOnce() throws Exception {
        Locker a = process("a");
        Locker op = process("op");
        KeyColumn x = lock("x");
        KeyColumn y = lock("y");
        Lease both = a.acquireAll(List.of(x, y), "both");
        CopyOnWriteArrayList<LockLost> told = new CopyOnWriteArrayList<>();
        both.onLost(told::add);
        assertTrue(op.forceRelease(x, "go"));
        assertTrue(op.forceRelease(y, "go"));
        assertThrows(ExpiredLockException.class, both::check);
        assertThrows(ExpiredLockException.class, both::check);
        for (int i = 0; i < 200 && told.isEmpty(); i++) {
            Thread.sleep(10);
        }
        Thread.sleep(200); // a second telling, if any, is queued on the same notifier behind the first
        assertEquals(1, told.size(), told.toString());
        both.close();
    }
}
