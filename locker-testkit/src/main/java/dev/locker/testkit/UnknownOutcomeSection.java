package dev.locker.testkit;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockProbe;
import dev.locker.api.Locker;
import dev.locker.api.TemporaryLockingException;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static dev.locker.testkit.Scenarios.assertContended;
import static dev.locker.testkit.Scenarios.take;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Unknown outcomes: a process paused at a chosen step while others act never holds beside them. */
public interface UnknownOutcomeSection extends ConformanceScenario {

    /** Takes {@code lock} for a new transaction, writes once to the resource with its token, and releases it. */
    private long takeWriteRelease(Locker l, KeyColumn lock, FencedResource resource) {
        Object tx = new Object();
        take(l, lock, tx);
        try {
            long token = l.fencingToken(lock, tx);
            assertTrue(resource.write(l.rid(), token, l.rid()), "a fresh holder's write is accepted");
            return token;
        } finally {
            l.deleteLocks(tx);
        }
    }

    /**
     * A holder paused right after its claim write answered (atomic backends: after the grant) until the claim expired,
     * while another process took the lock: it does not hold when it resumes, and no token is issued twice.
     */
    @Test
    default void aProcessPausedAfterItsClaimWriteDoesNotHoldOnceItExpired() throws Exception {
        StepPauses pauses = new StepPauses();
        Locker a = pausable("a", pauses);
        Locker b = process("b");
        KeyColumn lock = lock("x");
        FencedResource resource = new FencedResource();
        Pause afterWrite = pauses.after(LockProbe.Step.WRITE);
        Object ta = new Object();
        Future<Long> paused = stepPool().submit(() -> {
            take(a, lock, ta);
            return a.fencingToken(lock, ta);
        });
        afterWrite.awaitArrival();
        pass(expiry().plusMillis(300));
        takeWriteRelease(b, lock, resource);
        Object tb = new Object();
        take(b, lock, tb);
        afterWrite.resume();
        assertInstanceOf(TemporaryLockingException.class, Interleavings.failureOf(paused), "the paused process does not hold");
        assertTrue(resource.write(b.rid(), b.fencingToken(lock, tb), "b again"));
        assertEquals(List.of(), resource.violations());
        assertEquals(b.rid(), b.holder(lock).orElseThrow().rid());
        b.checkLocks(tb);
    }

    /**
     * A claimant paused after its read-back (wait-and-read-back backends; atomic ones decide in the write and skip
     * this case) until its claim expired: it does not hold, and its late token write neither repeats nor lowers tokens.
     */
    @Test
    default void aProcessPausedAfterItsReadBackDoesNotHoldOnceItExpired() throws Exception {
        StepPauses pauses = new StepPauses();
        Locker a = pausable("a", pauses);
        Locker b = process("b");
        Locker c = process("c");
        KeyColumn lock = lock("x");
        FencedResource resource = new FencedResource();
        Pause afterCheck = pauses.after(LockProbe.Step.CHECK);
        Object ta = new Object();
        Future<Long> paused = stepPool().submit(() -> {
            take(a, lock, ta);
            return a.fencingToken(lock, ta);
        });
        long waitUntil = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!afterCheck.hasArrived() && !paused.isDone() && System.nanoTime() < waitUntil) {
            Thread.sleep(1);
        }
        if (!afterCheck.hasArrived()) {
            afterCheck.resume();
            paused.get(1, TimeUnit.MINUTES);
            a.deleteLocks(ta);
            Assumptions.abort("this backend decides the holder in its claim write: there is no read-back to pause after");
        }
        pass(expiry().plusMillis(300));
        long tb = takeWriteRelease(b, lock, resource);
        afterCheck.resume();
        assertInstanceOf(TemporaryLockingException.class, Interleavings.failureOf(paused), "the paused process does not hold");
        long tc = takeWriteRelease(c, lock, resource);
        assertTrue(tc > tb, "tokens keep rising: " + tb + " then " + tc);
        assertEquals(List.of(), resource.violations());
    }

    /** A holder paused before its renewal reached the backend, until its claim expired and another took over. */
    @Test
    default void aRenewalPausedBeforeTheBackendCannotRevive() throws Exception {
        StepPauses pauses = new StepPauses();
        Locker a = pausable("a", pauses);
        Locker b = process("b");
        KeyColumn lock = lock("x");
        Object ta = new Object();
        take(a, lock, ta);
        Pause beforeRenew = pauses.before(LockProbe.Step.RENEW);
        Future<Object> renewal = stepPool().submit(() -> {
            a.renewLocks(ta);
            return "renewed";
        });
        beforeRenew.awaitArrival();
        pass(expiry().plusMillis(300));
        Object tb = new Object();
        take(b, lock, tb);
        beforeRenew.resume();
        assertInstanceOf(ExpiredLockException.class, Interleavings.failureOf(renewal), "the late renewal is refused");
        assertThrows(ExpiredLockException.class, () -> a.checkLocks(ta));
        assertEquals(b.rid(), b.holder(lock).orElseThrow().rid());
        b.checkLocks(tb);
        b.renewLocks(tb);
    }

    /** A holder whose renewal answered and who then paused past the renewed expiry: the renewal does not count. */
    @Test
    default void aRenewalPausedAfterItsAnswerPastTheExpiryDoesNotCount() throws Exception {
        StepPauses pauses = new StepPauses();
        Locker a = pausable("a", pauses);
        Locker b = process("b");
        KeyColumn lock = lock("x");
        Object ta = new Object();
        take(a, lock, ta);
        Pause afterRenew = pauses.after(LockProbe.Step.RENEW);
        Future<Object> renewal = stepPool().submit(() -> {
            a.renewLocks(ta);
            return "renewed";
        });
        afterRenew.awaitArrival();
        pass(expiry().plusMillis(300));
        Object tb = new Object();
        take(b, lock, tb);
        afterRenew.resume();
        assertInstanceOf(ExpiredLockException.class, Interleavings.failureOf(renewal), "a renewal that outlived itself does not count");
        assertThrows(ExpiredLockException.class, () -> a.checkLocks(ta));
        a.deleteLocks(ta);
        assertEquals(b.rid(), b.holder(lock).orElseThrow().rid(), "and its withdrawal left b's claim alone");
        b.checkLocks(tb);
    }

    /** A release paused before it reached the backend, past the expiry, while another took over: it removes nothing of theirs. */
    @Test
    default void aReleasePausedPastTheExpiryLeavesTheNewHolderAlone() throws Exception {
        StepPauses pauses = new StepPauses();
        Locker a = pausable("a", pauses);
        Locker b = process("b");
        KeyColumn lock = lock("x");
        Object ta = new Object();
        take(a, lock, ta);
        Pause beforeRelease = pauses.before(LockProbe.Step.RELEASE);
        Future<Object> release = stepPool().submit(() -> {
            a.deleteLocks(ta);
            return "released";
        });
        beforeRelease.awaitArrival();
        pass(expiry().plusMillis(300));
        Object tb = new Object();
        take(b, lock, tb);
        beforeRelease.resume();
        assertEquals("released", release.get(1, TimeUnit.MINUTES));
        assertEquals(b.rid(), b.holder(lock).orElseThrow().rid());
        assertContended(process("c"), lock, new Object());
        b.checkLocks(tb);
        b.renewLocks(tb);
    }

    /** A claim write paused before it reached the backend while another process took and holds the lock. */
    @Test
    default void aClaimWritePausedWhileAnotherTakesTheLockIsRefused() throws Exception {
        StepPauses pauses = new StepPauses();
        Locker a = pausable("a", pauses);
        Locker b = process("b");
        KeyColumn lock = lock("x");
        Pause beforeWrite = pauses.before(LockProbe.Step.WRITE);
        Object ta = new Object();
        Future<Object> paused = stepPool().submit(() -> {
            take(a, lock, ta);
            return "held";
        });
        beforeWrite.awaitArrival();
        Object tb = new Object();
        take(b, lock, tb);
        beforeWrite.resume();
        assertInstanceOf(TemporaryLockingException.class, Interleavings.failureOf(paused));
        assertEquals(b.rid(), b.holder(lock).orElseThrow().rid());
        b.checkLocks(tb);
    }

    /**
     * A worker may call {@code check()} while a heartbeat calls {@code renew()} on the same lease. Here the renewal's
     * step answers, and the worker's check records its answer first. The renewal still succeeds, and the claim stays.
     */
    @Test
    default void aConcurrentCheckNeverMakesARenewalDeleteAHealthyClaim() throws Exception {
        StepPauses pauses = new StepPauses();
        Locker a = pausable("a", pauses);
        Locker b = process("b");
        KeyColumn lock = lock("x");
        Lease lease = a.acquire(lock, "worker");
        lease.check(); // from now on checkLocks verifies with one read

        Pause renewAnswered = pauses.after(LockProbe.Step.RENEW);
        Future<String> heartbeat = stepPool().submit(() -> {
            lease.renew();
            return "renewed";
        });
        renewAnswered.awaitArrival();
        Future<String> worker = stepPool().submit(() -> {
            lease.check(); // the worker thread: "still mine" (waits for the heartbeat's step: steps are serialised)
            return "checked";
        });
        renewAnswered.resume();
        assertEquals("checked", worker.get(1, TimeUnit.MINUTES));

        Throwable renewFailure = null;
        try {
            heartbeat.get(1, TimeUnit.MINUTES);
        } catch (ExecutionException e) {
            renewFailure = e.getCause();
        }
        Optional<Lease> stolen = Optional.empty();
        try {
            stolen = Optional.of(b.acquire(lock, "other process"));
        } catch (TemporaryLockingException expected) {
            // correct behaviour: the lock is still a's
        }
        assertTrue(renewFailure == null && stolen.isEmpty(), "a healthy lease, checked and renewed from two threads, "
                + "lost its lock: renew failed with " + renewFailure + ", and another process "
                + (stolen.isPresent() ? "took the lock (token " + stolen.get().fencingToken() + ")" : "did not get it"));
    }
}
