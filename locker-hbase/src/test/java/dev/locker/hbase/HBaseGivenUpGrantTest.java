package dev.locker.hbase;

import dev.locker.api.Acquisition;
import dev.locker.api.KeyColumn;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.TimeSource;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.util.Bytes;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.io.IOException;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A grant its claimer gave up on (interrupted, or timed out) leaves no claim behind for long: either it can never
 * land, or the claim it writes is given back, whenever it lands within that claim's lifetime.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Order(2) // among the longest classes: started first
class HBaseGivenUpGrantTest {

    /** Long enough that a claim left behind still holds the lock when the test looks. */
    private static final Duration EXPIRY = Duration.ofSeconds(60);

    private final HBaseOptions options = HBaseOptions.builder().table("locker_given_up_grant")
            .serverClockSkew(Duration.ZERO).build();
    /** A table whose releases leave "free@token", so a grant after a release checks that one cell. */
    private final HBaseOptions tokenOptions = HBaseOptions.builder().table("locker_given_up_grant_token")
            .serverClockSkew(Duration.ZERO).build();
    /** Long enough that the claim expires while the test waits, and outlives the claimer's settling of its grant. */
    private static final Duration SHORT_EXPIRY = Duration.ofSeconds(3);
    /** The patient connection's operation timeout: its RPC timeout is half that. */
    private static final Duration PATIENT_OPERATION = Duration.ofSeconds(14);
    private HBaseLockers lockers;
    private HBaseLockers tokenLockers;
    private HBaseLockers shortTokenLockers;
    private HBaseLockers shortLockers;
    /**
     * A connection whose RPC deadline (7 s) outlasts a short claim. The region server refuses a call held past its
     * deadline at the row lock, so a held grant must be sent with a deadline beyond that claim's expiry. Its
     * lockers try to give back a claim such a grant may write every twice that, well within the claim's own expiry.
     */
    private Connection patient;

    @BeforeAll
    void connect() throws IOException {
        // the gate holds a chosen call before, while or after the region applies it
        CallGate.createTable(options, TableLayout.EMPTY_ON_RELEASE);
        CallGate.createTable(tokenOptions, TableLayout.TOKEN_ON_RELEASE);
        lockers = new HBaseLockers(options, EXPIRY);
        tokenLockers = new HBaseLockers(tokenOptions, EXPIRY);
        shortTokenLockers = new HBaseLockers(tokenOptions, SHORT_EXPIRY);
        shortLockers = new HBaseLockers(options, SHORT_EXPIRY);
        patient = HBaseTestCluster.get().newConnection(PATIENT_OPERATION);
    }

    @AfterAll
    void close() throws Exception {
        lockers.close();
        tokenLockers.close();
        shortTokenLockers.close();
        shortLockers.close();
        patient.close();
    }

    /**
     * Given a lock released at t ("free@t"), a claimer's one-cell grant held on the region server, and another
     * locker's claim taken over "free@t" before the claimer is interrupted: that claim expires and shows "free@t"
     * again, and the held grant the claimer gave up on lands on it. Its claim is given back once the grant's RPC
     * deadline passed, long before the claim's own expiry.
     */
    @Test
    void aGrantGivenUpOnThatLandsOnAFreeValueShownAgainIsGivenBackOnceItsDeadlinePassed() throws Exception {
        grantGivenUpOnWhileAnotherClaimHeldTheLock(tokenOptions, tokenLockers, shortTokenLockers,
                TableLayout.TOKEN_ON_RELEASE, false, false);
    }

    /**
     * The same, with the claimer's locker closed once the claimer gave up, its connection kept open by its owner: the
     * claim the held grant writes is still given back once its deadline passed, long before the claim's own expiry.
     */
    @Test
    void aGrantGivenUpOnThatLandsAfterItsLockerClosedIsGivenBackOnceItsDeadlinePassed() throws Exception {
        grantGivenUpOnWhileAnotherClaimHeldTheLock(tokenOptions, tokenLockers, shortTokenLockers,
                TableLayout.TOKEN_ON_RELEASE, true, false);
    }

    /**
     * The same, with the lock's region offline from before the grant's deadline until after the claimer's give-back
     * failed: the claim is still given back once the region is back, before the claim's own expiry.
     */
    @Test
    void aGrantGivenUpOnThatLandsIsGivenBackOnceItsRegionIsBackThoughItWasOfflineAtTheDeadline() throws Exception {
        grantGivenUpOnWhileAnotherClaimHeldTheLock(tokenOptions, tokenLockers, shortTokenLockers,
                TableLayout.TOKEN_ON_RELEASE, false, true);
    }

    /**
     * The same on a table whose releases leave the empty value: the held grant checks the counter too, which the other
     * locker's grant moved past, so it can never land, and the lock is free once that claim expires.
     */
    @Test
    void aTwoCellGrantGivenUpOnWhileAnotherClaimHeldTheLockLeavesNoClaimBehindOnceThatClaimExpires() throws Exception {
        grantGivenUpOnWhileAnotherClaimHeldTheLock(options, lockers, shortLockers, TableLayout.EMPTY_ON_RELEASE,
                false, false);
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
        Locker a = patientLocker(options);
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
     * A claimer's grant after its own release held on the region server; B granted meanwhile, then the claimer
     * interrupted, B's claim left to expire, and the held grant let go: the lock is free for a third locker. With
     * {@code closeClaimer}, the claimer's locker is closed once the claimer gave up, before the held grant lands. With
     * {@code offlineAtDeadline}, the lock's region is offline from the grant's landing until its first give-back failed.
     */
    private void grantGivenUpOnWhileAnotherClaimHeldTheLock(HBaseOptions opts, HBaseLockers longLived,
                                                            HBaseLockers shortLived, TableLayout layout,
                                                            boolean closeClaimer, boolean offlineAtDeadline)
            throws Exception {
        TableName table = TableName.valueOf(opts.table());
        Locker a = patientLocker(opts);
        try {
            Locker b = shortLived.open("b");
            Locker c = longLived.open("c");
            KeyColumn lock = HBaseInterruptedGrantTest.freshLock("given-up");
            byte[] row = LockTable.row(lock);
            Object first = new Object();
            a.writeLock(lock, first);
            a.checkLocks(first);
            long t = a.fencingToken(lock, first);
            a.deleteLocks(first); // the claimer's next grant expects what its release left, with no get before it
            byte[] released = layout.releaseValue(t);
            assertArrayEquals(released, holderCell(table, row), "the release left " + describe(released));
            CallGate.Armed held = CallGate.arm(CallGate.Kind.CHECK_AND_MUTATE, row);
            CallOnThread<Acquisition> claimer;
            long gaveUp;
            Object tb = new Object();
            try {
                claimer = HBaseInterruptedGrantTest.claimer(a, lock);
                assertTrue(held.awaitEntered(60), "the claimer's grant never reached the region server");
                b.writeLock(lock, tb); // granted over the released value while the claimer's grant waits
                b.checkLocks(tb);
                long tokenB = b.fencingToken(lock, tb);
                claimer.thread.interrupt(); // its settling meets B's claim: the row moved on
                claimer.awaitEnd("the interrupted claimer is still waiting");
                gaveUp = System.nanoTime(); // its first give-back comes twice the RPC timeout after about now
                if (closeClaimer) {
                    a.close(); // the application shuts the claimer's locker down while its grant is still held
                }
                assertEquals(t + 1, tokenB, "B granted on the released value");
                assertEquals(t + 1, counter(table, row), "the claimer's settling met B's live claim, changing nothing");
                assertTrue(awaitHolderCell(table, row, v -> Arrays.equals(released, v)),
                        "B's expired claim shows " + describe(released) + " again");
            } catch (Throwable e) {
                held.open();
                throw e;
            }
            letLand(held, row, "held grant"); // the grant the claimer gave up on reaches the region only now
            long landed = System.nanoTime(); // the claim the grant wrote expires EXPIRY after about now
            b.deleteLocks(tb);
            // a counter past B's token proves the held grant wrote a claim: the give-back has something to do
            long grants = layout == TableLayout.TOKEN_ON_RELEASE ? t + 2 : t + 1;
            assertEquals(grants, counter(table, row), "the held grant " + (grants == t + 2 ? "landed" : "never landed")
                    + " on " + describe(released) + " shown again");
            assertTrue(claimer.flagSet.get(), "the claimer's interrupt is kept: " + claimer);
            assertFalse(claimer.answer.get() != null && claimer.answer.get().acquired(),
                    "the claimer cannot have acquired a lock whose grant it never saw applied: " + claimer);
            Duration wait = EXPIRY.minus(PATIENT_OPERATION);
            if (offlineAtDeadline) {
                HBaseTestCluster.get().setRegionsOnline(table, false);
                try {
                    // offline until the first give-back has failed; the next one comes two RPC timeouts later
                    sleepUntil(gaveUp + PATIENT_OPERATION.plusSeconds(5).toNanos());
                } finally {
                    HBaseTestCluster.get().setRegionsOnline(table, true);
                }
                // the look ends well before the claim's own expiry: only a give-back can free the lock by then
                wait = EXPIRY.minus(Duration.ofNanos(System.nanoTime() - landed)).minus(Duration.ofSeconds(10));
            }
            // the held grant may have written a claim of the claimer's: given back after twice the RPC timeout
            Acquisition next = c.acquireWithin(lock, "after", wait);
            assertTrue(next.acquired(), "the grant the claimer gave up on left no claim for its whole expiry ("
                    + claimer + "); the holder cell holds " + describe(holderCell(table, row)) + ", the counter "
                    + counter(table, row) + ": " + next);
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

    /** The claimer's locker, on the patient connection: a grant it sends may be held past a short claim's expiry. */
    private Locker patientLocker(HBaseOptions opts) {
        return HBaseLocker.builder(patient).options(opts).config(LockerConfig.builder()
                .rid("a-" + LockerConfig.randomRid().substring(0, 8)).expiry(EXPIRY).timeSource(TimeSource.system())
                .build()).build();
    }

    /** Lets the grant {@code held} on the region server go on, and waits until the region finished it. */
    private static void letLand(CallGate.Armed held, byte[] row, String what) throws InterruptedException {
        CallGate.Armed applied = CallGate.arm(CallGate.Kind.TELL_DONE, row);
        held.open();
        try {
            assertTrue(applied.awaitEntered(60), "the region never finished the " + what);
        } finally {
            applied.open();
        }
    }

    /** Sleeps until {@code nanoTime} reads {@code deadline}: lets a give-back come while the test holds a fault. */
    private static void sleepUntil(long deadline) throws InterruptedException {
        for (long left = deadline - System.nanoTime(); left > 0; left = deadline - System.nanoTime()) {
            Thread.sleep(Math.max(1, left / 1_000_000));
        }
    }

    /** The holder cell's value as the region server shows it now, null when absent. */
    private byte[] holderCell(TableName table, byte[] row) throws IOException {
        try (Table t = HBaseTestCluster.get().connection().getTable(table)) {
            return t.get(new Get(row).addColumn(options.familyBytes(), LockTable.HOLDER))
                    .getValue(options.familyBytes(), LockTable.HOLDER);
        }
    }

    private long counter(TableName table, byte[] row) throws IOException {
        try (Table t = HBaseTestCluster.get().connection().getTable(table)) {
            byte[] v = t.get(new Get(row).addColumn(options.tokenFamilyBytes(), LockTable.COUNTER))
                    .getValue(options.tokenFamilyBytes(), LockTable.COUNTER);
            return v == null ? 0L : Bytes.toLong(v);
        }
    }

    /** Waits until the holder cell's value passes {@code shown}; false after 30 s. */
    private boolean awaitHolderCell(TableName table, byte[] row, Predicate<byte[]> shown) throws Exception {
        for (int i = 0; i < 1500; i++) {
            if (shown.test(holderCell(table, row))) {
                return true;
            }
            Thread.sleep(20); // waits for a cell TTL on the region server; nothing is timed
        }
        return false;
    }

    private static String describe(byte[] value) {
        if (value == null) {
            return "nothing";
        }
        if (value.length == 0) {
            return "the empty free value";
        }
        HolderClaim claim = HolderClaim.decode(value);
        return claim == null ? Bytes.toStringBinary(value) : "a claim of " + claim.owner.rid();
    }
}
