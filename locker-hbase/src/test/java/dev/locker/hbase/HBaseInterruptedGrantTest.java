package dev.locker.hbase;

import dev.locker.api.Acquisition;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LeaseOptions;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.TimeSource;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.util.Bytes;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
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
    /** A table whose releases leave "free@token", so a grant after a release checks that one cell. */
    private final HBaseOptions tokenOptions = HBaseOptions.builder().table("locker_interrupted_grant_token")
            .serverClockSkew(Duration.ZERO).build();
    /** Long enough that the claim expires while the test waits, and outlives the claimer's settling of its grant. */
    private static final Duration SHORT_EXPIRY = Duration.ofSeconds(5);
    /** The patient connection's operation timeout: its RPC timeout is half that. */
    private static final Duration PATIENT_OPERATION = Duration.ofSeconds(20);
    private HBaseLockers lockers;
    private HBaseLockers tokenLockers;
    private HBaseLockers shortTokenLockers;
    private HBaseLockers shortLockers;
    /**
     * A connection whose RPC deadline (10 s) outlasts a short claim. The region server refuses a call held past its
     * deadline at the row lock, so a held grant must be sent with a deadline beyond that claim's expiry. Its
     * lockers give a claim such a grant may write back after twice that, well before the claim's own expiry.
     */
    private Connection patient;

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
            TableName tokenName = TableName.valueOf(tokenOptions.table());
            if (!admin.tableExists(tokenName)) {
                admin.createTable(TableDescriptorBuilder.newBuilder(tokenName)
                        .setColumnFamilies(LockTable.families(tokenOptions))
                        .setValue(TableLayout.KEY, TableLayout.TOKEN_ON_RELEASE.value)
                        .setCoprocessor(CallGate.class.getName()).setCoprocessor(AfterCallGate.class.getName())
                        .build());
            }
        }
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
    @Disabled("the give-back after the deadline is tried once: a region offline then leaves the claim until it expires")
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
     * A claimer's grant after its own release held on the region server; B granted meanwhile, then the claimer
     * interrupted, B's claim left to expire, and the held grant let go: the lock is free for a third locker. With
     * {@code closeClaimer}, the claimer's locker is closed once the claimer gave up, before the held grant lands. With
     * {@code offlineAtDeadline}, the lock's region is offline from the grant's landing until the give-back ended.
     */
    private void grantGivenUpOnWhileAnotherClaimHeldTheLock(HBaseOptions opts, HBaseLockers longLived,
                                                            HBaseLockers shortLived, TableLayout layout,
                                                            boolean closeClaimer, boolean offlineAtDeadline)
            throws Exception {
        TableName table = TableName.valueOf(opts.table());
        Locker a = HBaseLocker.builder(patient).options(opts).config(LockerConfig.builder()
                .rid("a-" + LockerConfig.randomRid().substring(0, 8)).expiry(EXPIRY).timeSource(TimeSource.system())
                .build()).build();
        try {
            Locker b = shortLived.open("b");
            Locker c = longLived.open("c");
            KeyColumn lock = freshLock("given-up");
            byte[] row = LockTable.row(lock);
            Object first = new Object();
            a.writeLock(lock, first);
            a.checkLocks(first);
            long t = a.fencingToken(lock, first);
            a.deleteLocks(first); // the claimer's next grant expects what its release left, with no get before it
            byte[] released = layout.releaseValue(t);
            assertArrayEquals(released, holderCell(table, row), "the release left " + describe(released));
            CallGate.Armed held = CallGate.arm(CallGate.Kind.CHECK_AND_MUTATE, row);
            Claimer claimer;
            Object tb = new Object();
            try {
                claimer = new Claimer(a, lock);
                assertTrue(held.awaitEntered(60), "the claimer's grant never reached the region server");
                b.writeLock(lock, tb); // granted over the released value while the claimer's grant waits
                b.checkLocks(tb);
                long tokenB = b.fencingToken(lock, tb);
                claimer.thread.interrupt(); // its settling meets B's claim: the row moved on
                claimer.awaitEnd();
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
            AfterCallGate.Armed applied = AfterCallGate.arm(AfterCallGate.Kind.TELL_DONE, row);
            held.open(); // the grant the claimer gave up on reaches the region only now
            try {
                assertTrue(applied.awaitEntered(60), "the region never finished the held grant");
            } finally {
                applied.open();
            }
            long landed = System.nanoTime(); // the claim the grant wrote expires EXPIRY after about now
            b.deleteLocks(tb);
            // a counter past B's token proves the held grant wrote a claim: the give-back has something to do
            long grants = layout == TableLayout.TOKEN_ON_RELEASE ? t + 2 : t + 1;
            assertEquals(grants, counter(table, row), "the held grant " + (grants == t + 2 ? "landed" : "never landed")
                    + " on " + describe(released) + " shown again");
            assertTrue(claimer.flagSet.get(), "the claimer's interrupt is kept: " + claimer);
            assertFalse(claimer.outcome.get() != null && claimer.outcome.get().acquired(),
                    "the claimer cannot have acquired a lock whose grant it never saw applied: " + claimer);
            Duration wait = EXPIRY.minus(PATIENT_OPERATION);
            if (offlineAtDeadline) {
                HBaseTestCluster.get().setRegionsOnline(table, false);
                try {
                    assertTrue(awaitNoGiveBackThread(), "the claimer's give-back never ended");
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
    @Disabled("a grant stalled past its row lock lands after every give-back timed out: the claim holds until it expires")
    void aGrantStalledAfterItsRowLockThatLandsAfterEveryGiveBackIsStillGivenBack() throws Exception {
        Locker a = lockers.open("a");
        Locker b = lockers.open("b");
        KeyColumn lock = freshLock("stalled-after-row-lock");
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
            assertTrue(awaitNoGiveBackThread(), "the claimer's give-back never ended");
        } catch (Throwable e) {
            held.open();
            throw e;
        }
        AfterCallGate.Armed applied = AfterCallGate.arm(AfterCallGate.Kind.TELL_DONE, row);
        held.open(); // the stalled grant goes on only after the claimer's settling and give-backs ended
        try {
            assertTrue(applied.awaitEntered(60), "the region never finished the stalled grant");
        } finally {
            applied.open();
        }
        assertFalse(outcome.get().acquired(), "the claimer cannot have acquired a lock it never saw granted: " + outcome);
        assertEquals(1, counter(table, row), "the stalled grant landed: " + describe(holderCell(table, row)));
        // the look ends well before the claim's own expiry: only a give-back can free the lock by then
        Duration wait = EXPIRY.minus(Duration.ofNanos(System.nanoTime() - stamped)).minus(Duration.ofSeconds(10));
        Acquisition next = a.acquireWithin(lock, "after", wait);
        assertTrue(next.acquired(), "the stalled grant the claimer gave up on left a claim (" + outcome
                + "); the holder cell holds " + describe(holderCell(table, row)) + ": " + next);
        next.lease().orElseThrow().close();
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
        AfterCallGate.Armed reply = AfterCallGate.arm(AfterCallGate.Kind.HOLD_REPLY, row);
        List<CallGate.Armed> settling = new ArrayList<>();
        Claimer claimer;
        try {
            claimer = new Claimer(b, lock);
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
            claimer.awaitEnd();
        } finally {
            settling.forEach(CallGate.Armed::open);
            reply.open();
        }
        assertTrue(claimer.flagSet.get(), "the claimer's interrupt is kept: " + claimer);
        Acquisition outcome = claimer.outcome.get();
        if (outcome != null && outcome.acquired()) {
            outcome.lease().orElseThrow().close();
        }
        assertFreeFor(a, lock, claimer + " after " + settling.size() + " settling calls were held and cut");
    }

    /** Waits until no thread gives a claim back after its grant's deadline; false after two minutes. */
    private static boolean awaitNoGiveBackThread() throws InterruptedException {
        for (int i = 0; i < 1200; i++) {
            if (Thread.getAllStackTraces().keySet().stream()
                    .noneMatch(t -> t.isAlive() && t.getName().equals("locker-hbase-give-back"))) {
                return true;
            }
            Thread.sleep(100); // waits for the give-back's own wait and call; nothing is timed
        }
        return false;
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
