package dev.locker.hbase;

import dev.locker.api.Acquisition;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LeaseOptions;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A claimer interrupted at any point of a grant on a free lock leaves no claim behind; only its own interrupt sets
 * its flag.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class HBaseInterruptedGrantTest {

    /** Long enough that a claim left behind still holds the lock when the test looks. */
    private static final Duration EXPIRY = Duration.ofSeconds(60);

    private final HBaseOptions options = HBaseOptions.builder().table("locker_interrupted_grant")
            .serverClockSkew(Duration.ZERO).build();
    private HBaseLockers lockers;

    @BeforeAll
    void connect() throws IOException {
        // the gate holds a chosen call before or after the region applies it, or fails it as a stopping server does
        CallGate.createTable(options, TableLayout.EMPTY_ON_RELEASE);
        lockers = new HBaseLockers(options, EXPIRY);
    }

    @AfterAll
    void close() throws Exception {
        lockers.close();
    }

    /** A claimer's acquire on a thread of its own; an acquire that lost its interrupt waits ten minutes. */
    static CallOnThread<Acquisition> claimer(Locker locker, KeyColumn lock) {
        return CallOnThread.start("hbase-claimer", () -> locker.acquireWithin(lock, "claimer", Duration.ofMinutes(10)));
    }

    static KeyColumn freshLock(String name) {
        return KeyColumn.of(name + "/" + LockerConfig.randomRid().substring(0, 8), "c");
    }

    /** The lock is free for another locker at once: nothing of the interrupted claimer holds it. */
    private void assertFreeFor(Locker other, KeyColumn lock, Object claimer) {
        Acquisition next = other.acquireWithin(lock, "after", Duration.ZERO);
        assertTrue(next.lease().isPresent(), "the interrupted claimer left no claim behind (" + claimer + "): " + next);
        next.lease().get().close();
    }

    /**
     * Given a free lock and a claimer's grant held on the region server before the region applies it, one interrupt
     * ends the claimer's wait, and once the region applies the grant the lock is still free for another.
     */
    @Test
    void aClaimerInterruptedWhileItsGrantWaitsOnTheRegionServerLeavesNoClaimBehind() throws Exception {
        Locker a = lockers.open("a");
        Locker b = lockers.open("b");
        KeyColumn lock = freshLock("interrupted-before-apply");
        byte[] row = LockTable.row(lock);
        CallGate.Armed held = CallGate.arm(CallGate.Kind.CHECK_AND_MUTATE, row);
        CallGate.Armed applied;
        try {
            applied = CallGate.arm(CallGate.Kind.TELL_DONE, row);
        } catch (RuntimeException e) {
            held.open();
            throw e;
        }
        CallOnThread<Acquisition> claimer;
        try {
            claimer = claimer(b, lock);
            assertTrue(held.awaitEntered(60), "the claimer's grant never reached the region server");
            claimer.thread.interrupt(); // once, while the grant waits on the region server
            claimer.awaitEnd("the interrupted claimer is still waiting");
        } finally {
            held.open(); // only now: the claimer's look ran while its grant was still on its way
        }
        try {
            assertTrue(applied.awaitEntered(60), "the region never finished the held grant");
        } finally {
            applied.open();
        }
        assertTrue(claimer.flagSet.get(), "the claimer's interrupt is kept: " + claimer);
        assertFalse(claimer.answer.get() != null && claimer.answer.get().acquired(),
                "the claimer cannot have acquired a lock whose grant it never saw applied: " + claimer);
        assertFreeFor(a, lock, claimer);
    }

    /**
     * Given a free lock and a claimer's grant applied by the region but its reply held, one interrupt ends the wait:
     * the claimer either holds the lock (its look found the claim) or gave the claim back. Its flag is kept.
     */
    @Test
    void aClaimerInterruptedAfterTheRegionAppliedItsGrantHoldsTheLockOrGivesItBack() throws Exception {
        Locker a = lockers.open("a");
        Locker b = lockers.open("b");
        KeyColumn lock = freshLock("interrupted-after-apply");
        CallGate.Armed gate = CallGate.arm(CallGate.Kind.HOLD_REPLY, LockTable.row(lock));
        CallOnThread<Acquisition> claimer;
        try {
            claimer = claimer(b, lock);
            assertTrue(gate.awaitEntered(60), "the claimer's grant never reached the region server");
            claimer.thread.interrupt(); // once, after the region applied the grant and before its reply
            claimer.awaitEnd("the interrupted claimer is still waiting");
        } finally {
            gate.open();
        }
        assertNull(claimer.failed.get(), "the claimer's wait ended with an acquisition, not a failure");
        assertTrue(claimer.flagSet.get(), "the claimer's interrupt is kept: " + claimer);
        Acquisition outcome = claimer.answer.get();
        if (outcome.acquired()) {
            Lease lease = outcome.lease().orElseThrow();
            assertTrue(lease.isValid(), "a lease kept as granted is valid: " + outcome);
            assertFalse(a.acquireWithin(lock, "other", Duration.ZERO).acquired(), "the claimer holds the lock alone");
            lease.close();
        }
        assertFreeFor(a, lock, claimer);
    }

    /**
     * Given a free lock and a claimer's grant applied by the region but its reply held, a second interrupt during the
     * claimer's look at the row still leaves no claim behind: the claim is given back.
     */
    @Test
    void aClaimerInterruptedAgainDuringItsLookGivesItsAppliedClaimBack() throws Exception {
        Locker a = lockers.open("a");
        Locker b = lockers.open("b");
        KeyColumn lock = freshLock("interrupted-look");
        byte[] row = LockTable.row(lock);
        b.holder(lock); // the claimer's grant then goes without a get of its own: the next get is its look
        CallGate.Armed reply = CallGate.arm(CallGate.Kind.HOLD_REPLY, row);
        CallOnThread<Acquisition> claimer;
        try {
            claimer = claimer(b, lock);
            assertTrue(reply.awaitEntered(60), "the claimer's grant never reached the region server");
            CallGate.Armed look = CallGate.arm(CallGate.Kind.GET, row);
            try {
                claimer.thread.interrupt(); // after the region applied the grant, before its reply
                assertTrue(look.awaitEntered(60), "the claimer never looked at the row after its cut grant");
                claimer.thread.interrupt(); // again, while the look waits on the region server
                claimer.awaitEnd("the interrupted claimer is still waiting");
            } finally {
                look.open();
            }
        } finally {
            reply.open();
        }
        assertTrue(claimer.flagSet.get(), "the claimer's interrupt is kept: " + claimer);
        Acquisition outcome = claimer.answer.get();
        if (outcome != null && outcome.acquired()) {
            outcome.lease().orElseThrow().close();
        }
        assertFreeFor(a, lock, claimer);
    }

    /**
     * Given a free lock, a grant that the region server fails with its own InterruptedIOException (its handler was
     * interrupted) is retried: the caller, whom nobody interrupted, acquires the lock, its thread not interrupted.
     */
    @Test
    void aRegionServersInterruptedIOExceptionIsNotTakenForTheCallersInterrupt() throws Exception {
        Locker b = lockers.open("b");
        KeyColumn lock = freshLock("server-interrupted");
        CallGate.Armed gate = CallGate.arm(CallGate.Kind.FAIL_INTERRUPTED, LockTable.row(lock));
        CallOnThread<Acquisition> claimer;
        try {
            claimer = claimer(b, lock);
            claimer.awaitEnd("the interrupted claimer is still waiting");
            assertTrue(gate.awaitEntered(0), "the claimer's grant never reached the region server");
        } finally {
            gate.open();
        }
        assertFalse(claimer.flagSet.get(), "nobody interrupted the claimer, yet its thread is interrupted: " + claimer);
        assertNull(claimer.failed.get(), "the claimer's wait ended with an acquisition, not a failure");
        assertTrue(claimer.answer.get().acquired(), "the claimer acquired the free lock: " + claimer);
        claimer.answer.get().lease().orElseThrow().close();
    }

    /**
     * Given a held lock, a release that the region server fails once with its own InterruptedIOException still frees
     * the lock, and the releasing thread, whom nobody interrupted, is not interrupted after it.
     */
    @Test
    void aReleaseThatMeetsARegionServersInterruptedIOExceptionLeavesTheReleaserUninterrupted() throws Exception {
        Locker a = lockers.open("a");
        Locker b = lockers.open("b");
        KeyColumn lock = freshLock("server-interrupted-release");
        Lease held = b.acquire(lock, "holder", LeaseOptions.DEFAULTS.keepAlive(false));
        CallGate.Armed gate = CallGate.arm(CallGate.Kind.FAIL_INTERRUPTED, LockTable.row(lock));
        CallOnThread<Void> releaser;
        try {
            releaser = CallOnThread.run("hbase-releaser", held::close);
            releaser.awaitEnd("the release never finished");
            assertTrue(gate.awaitEntered(0), "the release never reached the region server");
        } finally {
            gate.open();
        }
        assertNull(releaser.failed.get(), "the release failed");
        assertFreeFor(a, lock, "the releaser");
        assertFalse(releaser.flagSet.get(), "nobody interrupted the releaser, yet its thread is interrupted");
    }

    /**
     * Given a free lock and a claimer's grant applied by the region but its reply held, the claimer interrupted once
     * per call while it settles the cut grant still leaves no claim behind once its calls reach the region.
     */
    @Test
    void aClaimerInterruptedDuringEachSettlingCallOfItsCutGrantLeavesNoClaimBehind() throws Exception {
        Locker a = lockers.open("a");
        Locker b = lockers.open("b");
        KeyColumn lock = freshLock("interrupted-settling");
        byte[] row = LockTable.row(lock);
        CallGate.Armed reply = CallGate.arm(CallGate.Kind.HOLD_REPLY, row);
        List<CallGate.Armed> settling = new ArrayList<>();
        CallOnThread<Acquisition> claimer;
        try {
            claimer = claimer(b, lock);
            assertTrue(reply.awaitEntered(60), "the claimer's grant never reached the region server");
            for (int call = 1; call <= 3 && claimer.thread.isAlive(); call++) {
                CallGate.Armed held = CallGate.arm(CallGate.Kind.CHECK_AND_MUTATE, row);
                settling.add(held);
                claimer.thread.interrupt(); // cuts the grant, then each settling call held on the region server
                if (!held.awaitEntered(10)) {
                    break; // the claimer made no further call: it gave up settling
                }
            }
            claimer.thread.interrupt();
            claimer.awaitEnd("the interrupted claimer is still waiting");
        } finally {
            settling.forEach(CallGate.Armed::open);
            reply.open();
        }
        assertTrue(claimer.flagSet.get(), "the claimer's interrupt is kept: " + claimer);
        Acquisition outcome = claimer.answer.get();
        if (outcome != null && outcome.acquired()) {
            outcome.lease().orElseThrow().close();
        }
        assertFreeFor(a, lock, claimer + " after " + settling.size() + " settling calls were held and cut");
    }
}
