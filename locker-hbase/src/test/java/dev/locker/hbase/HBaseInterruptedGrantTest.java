package dev.locker.hbase;

import dev.locker.api.Acquisition;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LeaseOptions;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

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
        // the gates hold a chosen call before or after the region applies it, or fail it as a stopping server does
        TableName name = TableName.valueOf(options.table());
        try (Admin admin = HBaseTestCluster.get().connection().getAdmin()) {
            if (!admin.tableExists(name)) {
                admin.createTable(TableDescriptorBuilder.newBuilder(name).setColumnFamilies(LockTable.families(options))
                        .setCoprocessor(CallGate.class.getName()).setCoprocessor(AfterCallGate.class.getName())
                        .build());
            }
        }
        lockers = new HBaseLockers(options, EXPIRY);
    }

    @AfterAll
    void close() throws Exception {
        lockers.close();
    }

    /** What a claimer's thread saw: the acquisition or its failure, and its interrupt flag at the end. */
    private static final class Claimer {
        final AtomicReference<Acquisition> outcome = new AtomicReference<>();
        final AtomicReference<Throwable> failed = new AtomicReference<>();
        final AtomicBoolean flagSet = new AtomicBoolean();
        final Thread thread;

        Claimer(Locker locker, KeyColumn lock) {
            thread = new Thread(() -> {
                try {
                    outcome.set(locker.acquireWithin(lock, "claimer", Duration.ofMinutes(10)));
                } catch (Throwable t) {
                    failed.set(t);
                } finally {
                    flagSet.set(Thread.interrupted());
                }
            }, "hbase-claimer");
            thread.start();
        }

        /** Waits for the claimer's end; a wait that lost the interrupt would go on for its full ten minutes. */
        void awaitEnd() throws InterruptedException {
            thread.join(Duration.ofMinutes(1).toMillis());
            assertFalse(thread.isAlive(), "the interrupted claimer is still waiting");
        }

        @Override
        public String toString() {
            return outcome.get() + " / " + failed.get();
        }
    }

    private static KeyColumn freshLock(String name) {
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
        AfterCallGate.Armed applied;
        try {
            applied = AfterCallGate.arm(AfterCallGate.Kind.TELL_DONE, row);
        } catch (RuntimeException e) {
            held.open();
            throw e;
        }
        Claimer claimer;
        try {
            claimer = new Claimer(b, lock);
            assertTrue(held.awaitEntered(60), "the claimer's grant never reached the region server");
            claimer.thread.interrupt(); // once, while the grant waits on the region server
            claimer.awaitEnd();
        } finally {
            held.open(); // only now: the claimer's look ran while its grant was still on its way
        }
        try {
            assertTrue(applied.awaitEntered(60), "the region never finished the held grant");
        } finally {
            applied.open();
        }
        assertTrue(claimer.flagSet.get(), "the claimer's interrupt is kept: " + claimer);
        assertFalse(claimer.outcome.get() != null && claimer.outcome.get().acquired(),
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
        AfterCallGate.Armed gate = AfterCallGate.arm(AfterCallGate.Kind.HOLD_REPLY, LockTable.row(lock));
        Claimer claimer;
        try {
            claimer = new Claimer(b, lock);
            assertTrue(gate.awaitEntered(60), "the claimer's grant never reached the region server");
            claimer.thread.interrupt(); // once, after the region applied the grant and before its reply
            claimer.awaitEnd();
        } finally {
            gate.open();
        }
        assertNull(claimer.failed.get(), "the claimer's wait ended with an acquisition, not a failure");
        assertTrue(claimer.flagSet.get(), "the claimer's interrupt is kept: " + claimer);
        Acquisition outcome = claimer.outcome.get();
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
        AfterCallGate.Armed reply = AfterCallGate.arm(AfterCallGate.Kind.HOLD_REPLY, row);
        Claimer claimer;
        try {
            claimer = new Claimer(b, lock);
            assertTrue(reply.awaitEntered(60), "the claimer's grant never reached the region server");
            CallGate.Armed look = CallGate.arm(CallGate.Kind.GET, row);
            try {
                claimer.thread.interrupt(); // after the region applied the grant, before its reply
                assertTrue(look.awaitEntered(60), "the claimer never looked at the row after its cut grant");
                claimer.thread.interrupt(); // again, while the look waits on the region server
                claimer.awaitEnd();
            } finally {
                look.open();
            }
        } finally {
            reply.open();
        }
        assertTrue(claimer.flagSet.get(), "the claimer's interrupt is kept: " + claimer);
        Acquisition outcome = claimer.outcome.get();
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
        AfterCallGate.Armed gate = AfterCallGate.arm(AfterCallGate.Kind.FAIL_INTERRUPTED, LockTable.row(lock));
        Claimer claimer;
        try {
            claimer = new Claimer(b, lock);
            claimer.awaitEnd();
            assertTrue(gate.awaitEntered(0), "the claimer's grant never reached the region server");
        } finally {
            gate.open();
        }
        assertFalse(claimer.flagSet.get(), "nobody interrupted the claimer, yet its thread is interrupted: " + claimer);
        assertNull(claimer.failed.get(), "the claimer's wait ended with an acquisition, not a failure");
        assertTrue(claimer.outcome.get().acquired(), "the claimer acquired the free lock: " + claimer);
        claimer.outcome.get().lease().orElseThrow().close();
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
        AfterCallGate.Armed gate = AfterCallGate.arm(AfterCallGate.Kind.FAIL_INTERRUPTED, LockTable.row(lock));
        AtomicBoolean flagSet = new AtomicBoolean();
        AtomicReference<Throwable> failed = new AtomicReference<>();
        Thread releaser = new Thread(() -> {
            try {
                held.close();
            } catch (Throwable t) {
                failed.set(t);
            } finally {
                flagSet.set(Thread.interrupted());
            }
        }, "hbase-releaser");
        try {
            releaser.start();
            releaser.join(Duration.ofMinutes(1).toMillis());
            assertFalse(releaser.isAlive(), "the release never finished");
            assertTrue(gate.awaitEntered(0), "the release never reached the region server");
        } finally {
            gate.open();
        }
        assertNull(failed.get(), "the release failed");
        assertFreeFor(a, lock, "the releaser");
        assertFalse(flagSet.get(), "nobody interrupted the releaser, yet its thread is interrupted");
    }
}
