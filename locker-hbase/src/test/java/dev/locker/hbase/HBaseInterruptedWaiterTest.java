package dev.locker.hbase;

import dev.locker.api.Acquisition;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LeaseOptions;
import dev.locker.api.LockInfo;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.parallel.Isolated;

import java.io.IOException;
import java.time.Duration;
import java.time.Instant;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * One interrupt that lands while a waiter's HBase call is on the region server ends the wait, flag kept; a release
 * interrupted there still frees the lock.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
// thousands of interrupted batch calls, each resent and logged: other classes' 1.5 s keep-alive renewals would
// stall
@Isolated
class HBaseInterruptedWaiterTest {

    private static final Duration EXPIRY = Duration.ofSeconds(60);

    private final HBaseOptions options = HBaseOptions.builder().table("locker_interrupt_gate")
            .serverClockSkew(Duration.ZERO).build();
    private HBaseLockers lockers;

    @BeforeAll
    void connect() throws IOException {
        // the table carries the gate that holds a chosen call on the region server while the test interrupts
        TableName name = TableName.valueOf(options.table());
        try (Admin admin = HBaseTestCluster.get().connection().getAdmin()) {
            if (!admin.tableExists(name)) {
                admin.createTable(TableDescriptorBuilder.newBuilder(name).setColumnFamilies(LockTable.families(options))
                        .setCoprocessor(CallGate.class.getName()).build());
            }
        }
        lockers = new HBaseLockers(options, EXPIRY);
    }

    @AfterAll
    void close() throws Exception {
        lockers.close();
    }

    /**
     * Given a lock held by another locker, a waiter's grant (a check-and-mutate of two mutations, which HBase sends
     * through its batch path) held on the region server, one interrupt ends the wait unacquired, flag kept.
     */
    @Test
    void oneInterruptDuringAWaitersGrantEndsTheWait() throws Exception {
        oneInterruptEndsTheWait(CallGate.Kind.CHECK_AND_MUTATE);
    }

    /** Given a lock held by another locker, one interrupt during a waiter's read of the lock row ends the wait. */
    @Test
    void oneInterruptDuringAWaitersReadEndsTheWait() throws Exception {
        oneInterruptEndsTheWait(CallGate.Kind.GET);
    }

    private void oneInterruptEndsTheWait(CallGate.Kind kind) throws Exception {
        Locker a = lockers.open("a");
        Locker b = lockers.open("b");
        KeyColumn lock = KeyColumn.of("interrupt-once/" + LockerConfig.randomRid().substring(0, 8), "c");
        try (Lease held = a.acquire(lock, "holder", LeaseOptions.DEFAULTS.keepAlive(false))) {
            CallGate.Armed gate = CallGate.arm(kind, LockTable.row(lock));
            CallOnThread<Acquisition> waiter = CallOnThread.start("hbase-waiter",
                    () -> b.acquireWithin(lock, "waiter", Duration.ofMinutes(10)));
            try {
                assertTrue(gate.awaitEntered(60), "the waiter's " + kind + " never reached the region server");
                waiter.thread.interrupt(); // once, while the call is held on the region server
            } finally {
                gate.open();
            }
            waiter.awaitEnd("one interrupt during the waiter's " + kind + " did not end its wait");
            assertTrue(waiter.flagSet.get(), "the waiter's interrupt is kept: " + waiter);
            if (waiter.failed.get() == null) {
                assertNotNull(waiter.answer.get());
                assertFalse(waiter.answer.get().lease().isPresent(), "the lock is held by another: " + waiter);
            }
            assertTrue(held.isValid(), "the holder's lease is untouched");
        }
        Acquisition next = b.acquireWithin(lock, "after", Duration.ofSeconds(30));
        assertTrue(next.lease().isPresent(), "the interrupted waiter left no claim behind: " + next);
        next.lease().get().close();
    }

    /** Given a held lock, a release interrupted while on the region server still frees the lock, flag kept. */
    @Test
    void aReleaseInterruptedOnTheRegionServerStillFreesTheLock() throws Exception {
        Locker a = lockers.open("a");
        Locker b = lockers.open("b");
        KeyColumn lock = KeyColumn.of("interrupted-release/" + LockerConfig.randomRid().substring(0, 8), "c");
        Lease held = a.acquire(lock, "holder", LeaseOptions.DEFAULTS.keepAlive(false));
        CallGate.Armed gate = CallGate.arm(CallGate.Kind.CHECK_AND_MUTATE, LockTable.row(lock));
        CallOnThread<Void> releaser = CallOnThread.run("hbase-releaser", held::close);
        try {
            assertTrue(gate.awaitEntered(60), "the release never reached the region server");
            releaser.thread.interrupt();
        } finally {
            gate.open();
        }
        releaser.awaitEnd("the interrupted release never finished");
        assertNull(releaser.failed.get(), "the release failed");
        assertTrue(releaser.flagSet.get(), "the releaser's interrupt is kept");
        assertTrue(a.holder(lock).isEmpty(), "the interrupted release freed the lock");
        Acquisition next = b.acquireWithin(lock, "after", Duration.ZERO);
        assertTrue(next.lease().isPresent(), "the lock is free for another: " + next);
        next.lease().get().close();
    }

    /**
     * Given a lease with a hold-at-least, a close whose leave (two mutations, HBase's batch path) is interrupted on the
     * region server still leaves the claim with the shorter lifetime, flag kept.
     */
    @Test
    void aLeaveInterruptedOnTheRegionServerStillShortensTheClaim() throws Exception {
        Locker a = lockers.open("a");
        KeyColumn lock = KeyColumn.of("interrupted-leave/" + LockerConfig.randomRid().substring(0, 8), "c");
        Instant before = Instant.now();
        Lease held = a.acquire(lock, "holder", LeaseOptions.DEFAULTS.keepAlive(false)
                .holdAtLeast(Duration.ofSeconds(20)));
        CallGate.Armed gate = CallGate.arm(CallGate.Kind.CHECK_AND_MUTATE, LockTable.row(lock));
        CallOnThread<Void> closer = CallOnThread.run("hbase-closer", held::close);
        try {
            assertTrue(gate.awaitEntered(60), "the leave never reached the region server");
            closer.thread.interrupt();
        } finally {
            gate.open();
        }
        closer.awaitEnd("the interrupted close never finished");
        assertNull(closer.failed.get(), "the close failed");
        assertTrue(closer.flagSet.get(), "the closer's interrupt is kept");
        LockInfo left = a.holding(lock).orElseThrow(() -> new AssertionError("the claim was not left in place"));
        // the claim as granted expires an expiry after the acquire at the earliest; the left one about 20 s after
        assertTrue(left.expiresAt().isBefore(before.plus(EXPIRY)), "the leave shortened the claim: " + left);
    }

    /**
     * Given a lock held by another locker and a waiter that keeps asking HBase, interrupts sent while it waits (some
     * land inside a call, some in a pause) end the wait unacquired, and the waiter's flag is still set after.
     */
    @Test
    void aWaiterInterruptedDuringItsHBaseCallsStopsWaitingAndKeepsItsFlag() throws Exception {
        Locker a = lockers.open("a");
        Locker b = lockers.open("b");
        KeyColumn lock = KeyColumn.of("interrupted-waiter/" + LockerConfig.randomRid().substring(0, 8), "c");
        try (Lease held = a.acquire(lock, "holder", LeaseOptions.DEFAULTS.keepAlive(false))) {
            CallOnThread<Acquisition> waiter = CallOnThread.start("hbase-waiter",
                    () -> b.acquireWithin(lock, "waiter", Duration.ofMinutes(10)));
            // interrupts until the wait ends: a wait that loses them all goes on for its full ten minutes
            for (int i = 0; i < 6_000 && waiter.thread.isAlive(); i++) {
                waiter.thread.interrupt();
                waiter.thread.join(10);
            }
            waiter.awaitEnd("the interrupted waiter is still waiting");
            assertTrue(waiter.flagSet.get(), "the waiter's interrupt is kept: " + waiter);
            if (waiter.failed.get() == null) {
                assertNotNull(waiter.answer.get());
                assertFalse(waiter.answer.get().lease().isPresent(), "the lock is held by another: " + waiter);
            }
            assertTrue(held.isValid(), "the holder's lease is untouched");
        }
        Acquisition next = b.acquireWithin(lock, "after", Duration.ofSeconds(30));
        assertTrue(next.lease().isPresent(), "the interrupted waiter left no claim behind: " + next);
        next.lease().get().close();
    }
}
