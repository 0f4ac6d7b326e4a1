package dev.locker.hbase;

import dev.locker.api.Acquisition;
import dev.locker.api.KeyColumn;
import dev.locker.api.Locker;
import org.apache.hadoop.hbase.TableName;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.parallel.ResourceLock;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A grant its claimer gave up on leaves no claim behind for long, on a table whose releases leave the empty value:
 * either it can never land, or the claim it writes is given back, whenever it lands within that claim's lifetime.
 */
@Order(2) // among the longest classes: started early
// one given-up-grant class at a time: each holds region server handlers at its gates for seconds, and two at once
// starve the real-time lease cases of the classes beside them
@ResourceLock("given-up-grants")
class HBaseGivenUpGrantOnEmptyReleaseTest extends GivenUpGrantCases {

    HBaseGivenUpGrantOnEmptyReleaseTest() {
        super("locker_given_up_grant", TableLayout.EMPTY_ON_RELEASE);
    }

    /**
     * The same on a table whose releases leave the empty value: the held grant checks the counter too, which the other
     * locker's grant moved past, so it can never land, and the lock is free once that claim expires.
     */
    @Test
    void aTwoCellGrantGivenUpOnWhileAnotherClaimHeldTheLockLeavesNoClaimBehindOnceThatClaimExpires() throws Exception {
        grantGivenUpOnWhileAnotherClaimHeldTheLock(false, false);
    }

    /**
     * Given a lock held by B on a table whose releases leave the empty value, a waiter's next grant expects what B's
     * release leaves (the counter at B's token) and is held on the region server; the waiter is interrupted while B
     * still holds, so its settling changes nothing. B then releases, and the held grant lands on the row it expected.
     * Its claim is given back within a few RPC timeouts, long before the claim's own expiry.
     */
    @Test
    void aGrantGivenUpOnWhileItsExpectedHolderStillHeldLandsOnThatReleaseAndIsGivenBack() throws Exception {
        TableName table = TableName.valueOf(options.table());
        Locker a = patientLocker();
        try {
            Locker b = lockers.open("b");
            Locker c = lockers.open("c");
            KeyColumn lock = HBaseInterruptedGrantTest.freshLock("given-up-on-a-holder");
            byte[] row = LockTable.row(lock);
            Object tb = new Object();
            b.writeLock(lock, tb);
            b.checkLocks(tb);
            long tokenB = b.fencingToken(lock, tb);
            CallGate.Armed held = CallGate.arm(CallGate.Kind.CHECK_AND_MUTATE, row);
            CallOnThread<Acquisition> claimer;
            try {
                // its first look finds B; its next grant expects B's release, with no get before it
                claimer = HBaseInterruptedGrantTest.claimer(a, lock);
                assertTrue(held.awaitEntered(60), "the waiter's grant never reached the region server");
                claimer.thread.interrupt(); // its settling meets B's claim: nothing changes
                claimer.awaitEnd("the interrupted waiter is still waiting");
                assertEquals(tokenB, counter(table, row), "the waiter's settling met B's live claim, changing nothing");
                b.deleteLocks(tb); // the empty value, the counter still at B's token: what the held grant expects
            } catch (Throwable e) {
                held.open();
                throw e;
            }
            letLand(held, row, "held grant");
            assertEquals(tokenB + 1, counter(table, row), "the held grant landed on B's release");
            assertTrue(claimer.flagSet.get(), "the waiter's interrupt is kept: " + claimer);
            assertFalse(claimer.answer.get() != null && claimer.answer.get().acquired(),
                    "the waiter cannot have acquired a lock whose grant it never saw applied: " + claimer);
            Acquisition next = c.acquireWithin(lock, "after", EXPIRY.minus(PATIENT_OPERATION));
            assertTrue(next.acquired(), "the grant the waiter gave up on left its claim for its whole expiry ("
                    + claimer + "); the holder cell holds " + describe(holderCell(table, row)) + ": " + next);
            next.lease().orElseThrow().close();
        } finally {
            a.close();
        }
    }

    /**
     * Given a free lock and a claimer's grant held on the region server after it took the row lock and passed its
     * check, the claimer's settling and give-backs time out on that row lock. Once the grant lands after all of them,
     * its claim is still given back before the claim's own expiry.
     */
    @Test
    void aGrantStalledAfterItsRowLockThatLandsAfterEveryGiveBackIsStillGivenBack() throws Exception {
        Locker a = lockers.open("a");
        Locker b = lockers.open("b");
        KeyColumn lock = HBaseInterruptedGrantTest.freshLock("stalled-after-row-lock");
        byte[] row = LockTable.row(lock);
        TableName table = TableName.valueOf(options.table());
        CallGate.Armed held = CallGate.arm(CallGate.Kind.BATCH_MUTATE, row);
        AtomicReference<Acquisition> outcome = new AtomicReference<>();
        Thread claimer = new Thread(() -> outcome.set(b.acquireWithin(lock, "claimer", Duration.ZERO)), "hbase-claimer");
        long stamped;
        try {
            claimer.start();
            assertTrue(held.awaitEntered(60), "the claimer's grant never reached the region server");
            stamped = System.nanoTime(); // the region stamped the claim's cell before the stall: its TTL runs from then
            claimer.join(Duration.ofMinutes(1).toMillis());
            assertFalse(claimer.isAlive(), "the claimer never gave up its stalled grant");
            // the settling and the first give-back (its RPC timeout 2.5 s, its operation 5 s) time out on the row lock
            sleepUntil(System.nanoTime() + Duration.ofSeconds(12).toNanos());
        } catch (Throwable e) {
            held.open();
            throw e;
        }
        // the stalled grant goes on only after the claimer's settling and first give-back timed out on its row lock
        letLand(held, row, "stalled grant");
        assertFalse(outcome.get().acquired(), "the claimer cannot have acquired a lock it never saw granted: " + outcome);
        assertEquals(1, counter(table, row), "the stalled grant landed: " + describe(holderCell(table, row)));
        // the look ends well before the claim's own expiry: only a give-back can free the lock by then
        Duration wait = EXPIRY.minus(Duration.ofNanos(System.nanoTime() - stamped)).minus(Duration.ofSeconds(10));
        Acquisition next = a.acquireWithin(lock, "after", wait);
        assertTrue(next.acquired(), "the stalled grant the claimer gave up on left a claim (" + outcome
                + "); the holder cell holds " + describe(holderCell(table, row)) + ": " + next);
        next.lease().orElseThrow().close();
    }
}
