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
import org.junit.jupiter.api.TestInstance;

import java.io.IOException;
import java.time.Duration;
import java.util.Arrays;
import java.util.function.Predicate;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The fixture and the scenario of the tests of a grant its claimer gave up on (interrupted, or timed out), one table
 * per test class: the classes run side by side, each waiting out RPC timeouts on its own rows.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class GivenUpGrantCases {

    /** Long enough that a claim left behind still holds the lock when the test looks. */
    static final Duration EXPIRY = Duration.ofSeconds(60);
    /** Long enough that the claim expires while the test waits, and outlives the claimer's settling of its grant. */
    static final Duration SHORT_EXPIRY = Duration.ofSeconds(3);
    /** The patient connection's operation timeout: its RPC timeout is half that. */
    static final Duration PATIENT_OPERATION = Duration.ofSeconds(14);

    final HBaseOptions options;
    private final TableLayout layout;
    HBaseLockers lockers;
    HBaseLockers shortLockers;
    /**
     * A connection whose RPC deadline (7 s) outlasts a short claim. The region server refuses a call held past its
     * deadline at the row lock, so a held grant must be sent with a deadline beyond that claim's expiry. Its
     * lockers try to give back a claim such a grant may write every twice that, well within the claim's own expiry.
     */
    private Connection patient;

    GivenUpGrantCases(String table, TableLayout layout) {
        this.options = HBaseOptions.builder().table(table).serverClockSkew(Duration.ZERO).build();
        this.layout = layout;
    }

    @BeforeAll
    void connect() throws IOException {
        // the gate holds a chosen call before, while or after the region applies it
        CallGate.createTable(options, layout);
        lockers = new HBaseLockers(options, EXPIRY);
        shortLockers = new HBaseLockers(options, SHORT_EXPIRY);
        patient = HBaseTestCluster.get().newConnection(PATIENT_OPERATION);
    }

    @AfterAll
    void close() throws Exception {
        lockers.close();
        shortLockers.close();
        patient.close();
    }

    /**
     * A claimer's grant after its own release held on the region server; B granted meanwhile, then the claimer
     * interrupted, B's claim left to expire, and the held grant let go: the lock is free for a third locker. With
     * {@code closeClaimer}, the claimer's locker is closed once the claimer gave up, before the held grant lands. With
     * {@code offlineAtDeadline}, the lock's region is offline from the grant's landing until its first give-back failed.
     */
    void grantGivenUpOnWhileAnotherClaimHeldTheLock(boolean closeClaimer, boolean offlineAtDeadline) throws Exception {
        TableName table = TableName.valueOf(options.table());
        Locker a = patientLocker();
        try {
            Locker b = shortLockers.open("b");
            Locker c = lockers.open("c");
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

    /** The claimer's locker, on the patient connection: a grant it sends may be held past a short claim's expiry. */
    Locker patientLocker() {
        return HBaseLocker.builder(patient).options(options).config(LockerConfig.builder()
                .rid("a-" + LockerConfig.randomRid().substring(0, 8)).expiry(EXPIRY).timeSource(TimeSource.system())
                .build()).build();
    }

    /** Lets the grant {@code held} on the region server go on, and waits until the region finished it. */
    static void letLand(CallGate.Armed held, byte[] row, String what) throws InterruptedException {
        CallGate.Armed applied = CallGate.arm(CallGate.Kind.TELL_DONE, row);
        held.open();
        try {
            assertTrue(applied.awaitEntered(60), "the region never finished the " + what);
        } finally {
            applied.open();
        }
    }

    /** Sleeps until {@code nanoTime} reads {@code deadline}: lets a give-back come while the test holds a fault. */
    static void sleepUntil(long deadline) throws InterruptedException {
        for (long left = deadline - System.nanoTime(); left > 0; left = deadline - System.nanoTime()) {
            Thread.sleep(Math.max(1, left / 1_000_000));
        }
    }

    /** The holder cell's value as the region server shows it now, null when absent. */
    byte[] holderCell(TableName table, byte[] row) throws IOException {
        try (Table t = HBaseTestCluster.get().connection().getTable(table)) {
            return t.get(new Get(row).addColumn(options.familyBytes(), LockTable.HOLDER))
                    .getValue(options.familyBytes(), LockTable.HOLDER);
        }
    }

    long counter(TableName table, byte[] row) throws IOException {
        try (Table t = HBaseTestCluster.get().connection().getTable(table)) {
            byte[] v = t.get(new Get(row).addColumn(options.tokenFamilyBytes(), LockTable.COUNTER))
                    .getValue(options.tokenFamilyBytes(), LockTable.COUNTER);
            return v == null ? 0L : Bytes.toLong(v);
        }
    }

    /** Waits until the holder cell's value passes {@code shown}; false after 30 s. */
    boolean awaitHolderCell(TableName table, byte[] row, Predicate<byte[]> shown) throws Exception {
        for (int i = 0; i < 1500; i++) {
            if (shown.test(holderCell(table, row))) {
                return true;
            }
            Thread.sleep(20); // waits for a cell TTL on the region server; nothing is timed
        }
        return false;
    }

    static String describe(byte[] value) {
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
