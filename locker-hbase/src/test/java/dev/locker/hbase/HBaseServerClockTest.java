package dev.locker.hbase;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockProbe;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.Run;
import dev.locker.api.RunRecord;
import dev.locker.api.TemporaryLockingException;
import dev.locker.spi.DeploymentCheck.Finding;
import dev.locker.spi.DeploymentCheck.Level;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.util.EnvironmentEdgeManager;
import org.junit.jupiter.api.parallel.Isolated;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

import static dev.locker.hbase.HBaseClockFixture.finding;
import static dev.locker.hbase.HBaseClockFixture.options;
import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The region server's clock, stepped on the real mini cluster: HBase's {@link EnvironmentEdgeManager} is the clock
 * that stamps cells and judges their TTL on the region server. Client and server share this JVM, so the lockers keep
 * their own timing on Locker's time source (the system clock), which the injected edge does not touch. A step back
 * stands for a region that moved to a region server whose clock is behind (or an NTP step back); a step forward for one
 * whose clock is ahead. HBase lets region servers disagree with the master by up to {@code hbase.master.maxclockskew}
 * (30 s by default). The cell TTL, expiry plus serverClockSkew rounded up, allows for their disagreement; run
 * records are ordered by token, not by any clock.
 */
// alone: it steps the clock of the shared mini cluster's region server, which every class uses
@Isolated
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class HBaseServerClockTest {

    private final SteppedClock serverClock = new SteppedClock();
    private HBaseClockFixture fixture;

    @BeforeAll
    void connect() {
        fixture = new HBaseClockFixture("hbase-clock/");
    }

    @AfterEach
    void resetClock() {
        EnvironmentEdgeManager.reset();
    }

    @AfterAll
    void close() throws Exception {
        fixture.close();
    }

    private void flush(HBaseOptions options) throws Exception {
        try (Admin admin = fixture.connection().getAdmin()) {
            admin.flush(TableName.valueOf(options.table()));
        }
    }

    /**
     * A release writes the free marker at T1, the region server's clock then steps back 20 s, and
     * the next grant checks "holder is free" and writes its claim. HBase stamps a check-and-mutate's Put with
     * max(now, the checked cell's timestamp) (HRegion.checkAndMutateInternal, HBASE-14054), and an Increment with
     * max(now, the counter's timestamp + 1): the claim is not hidden behind the free marker, a second acquirer is
     * refused, renewal and release work, and the fencing counter keeps growing; also across flushes (the free marker
     * in a store file, the claim in the memstore, at one timestamp: the later write wins by sequence id).
     */
    @Test
    void aClaimWrittenAfterTheServerClockSteppedBackIsNotHiddenByTheFreeMarker() throws Exception {
        HBaseOptions options = options("locker_clock_back", Duration.ZERO);
        Locker a = fixture.locker(options, "a", Duration.ofSeconds(60));
        Locker b = fixture.locker(options, "b", Duration.ofSeconds(60));
        Locker c = fixture.locker(options, "c", Duration.ofSeconds(60));
        KeyColumn lock = fixture.lock("back");
        Object ta = new Object();
        a.writeLock(lock, ta);
        long first = a.fencingToken(lock, ta);
        a.deleteLocks(ta); // the free marker at T1
        flush(options);

        EnvironmentEdgeManager.injectEdge(serverClock);
        serverClock.offsetMillis = -20_000; // the region now runs on a clock 20 s behind
        Object tb = new Object();
        b.writeLock(lock, tb);
        b.checkLocks(tb);
        long second = b.fencingToken(lock, tb);
        assertTrue(second > first, "the counter grows across the step: " + second + " after " + first);
        assertEquals("b", c.holder(lock).orElseThrow().rid().substring(0, 1), "the claim is visible, not hidden");
        assertThrows(TemporaryLockingException.class, () -> c.writeLock(lock, new Object()), "one holder at a time");
        flush(options);
        assertEquals("b", c.holder(lock).orElseThrow().rid().substring(0, 1), "still visible after a flush");
        b.renewLocks(tb);
        assertThrows(TemporaryLockingException.class, () -> c.writeLock(lock, new Object()));

        serverClock.offsetMillis = -40_000; // and back once more, with the claim held
        b.renewLocks(tb);
        b.deleteLocks(tb);
        assertFalse(c.holder(lock).isPresent(), "the release is not hidden either");
        Object tc = new Object();
        c.writeLock(lock, tc);
        assertTrue(c.fencingToken(lock, tc) > second);
        c.deleteLocks(tc);
    }

    /**
     * The region moves to a region server whose clock is 2.5 s ahead while a holds a 3 s claim: that server's TTL
     * drops the claim after 0.5 s of real time. a's own clock still gives it most of its validity, so b must not be
     * granted the lock until a's validity has passed.
     */
    @Test
    void aRegionServerClockAheadWithinTheAllowanceDoesNotExpireAClaimBeforeItsHolderStopsTrustingIt() throws Exception {
        HBaseOptions options = options("locker_clock_ahead", Duration.ofSeconds(3));
        Locker a = fixture.locker(options, "a", Duration.ofSeconds(3));
        Locker b = fixture.locker(options, "b", Duration.ofSeconds(3));
        KeyColumn lock = fixture.lock("ahead");
        Object ta = new Object();
        long started = System.nanoTime();
        a.writeLock(lock, ta);
        EnvironmentEdgeManager.injectEdge(serverClock);
        serverClock.offsetMillis = 2_500;
        Thread.sleep(1_000);
        a.checkLocks(ta); // a still trusts its claim: no I/O, its monotonic deadline has not passed
        TemporaryLockingException refused = assertThrows(TemporaryLockingException.class,
                () -> b.writeLock(lock, new Object()), "b is refused while a may still act on its claim");
        assertEquals("a", refused.holder().rid().substring(0, 1));
        assertTrue(System.nanoTime() - started < Duration.ofSeconds(3).toNanos(),
                "the scenario ran within a's validity (a slow machine would make it prove nothing)");
        a.deleteLocks(ta);
    }

    /**
     * The doctor reads each region server's clock from its reports to the master (the clock that stamps cells and
     * judges their TTL): in sync with this client it is fine; 25 s ahead it is named.
     */
    @Test
    void theDoctorReadsTheRegionServersClocksFromTheirReports() throws Exception {
        String uri = fixture.cluster().uri("locker_clock_doctor", "expiry=30s");
        // after an earlier test stepped the clock back, the region server's next report can wait that long: the doctor
        // now judges a lone server behind by more than half the allowance, so wait for a report on the true clock
        awaitReportAhead(Duration.ofMillis(-400));
        Finding clocks = judgedClocks(uri);
        assertEquals(Level.OK, clocks.level(), clocks::toString);

        serverClock.offsetMillis = 25_000;
        EnvironmentEdgeManager.injectEdge(serverClock);
        // a region server reports every msginterval of its own clock: after an earlier test stepped it back, the next
        // report can wait that long; the doctor reads what the master has, so wait for a report on the new clock
        awaitReportAhead(Duration.ofSeconds(20));
        clocks = judgedClocks(uri);
        assertEquals(Level.WARN, clocks.level(), clocks::toString);
        assertTrue(clocks.why().contains("against this client's clock +2"), clocks::toString);
    }

    /**
     * The doctor's clock finding, run again as its advice says while a loaded machine delayed every report past the
     * check: a server that did not report is named, never judged.
     */
    private static Finding judgedClocks(String uri) throws Exception {
        Finding clocks = null;
        for (int attempt = 0; attempt < 5; attempt++) {
            List<Finding> found = new HBaseDoctor().check(uri, s -> { });
            clocks = finding(found, "server-clocks");
            if (!clocks.why().contains("sent the master no report during the check")) {
                return clocks;
            }
        }
        return clocks;
    }

    private void awaitReportAhead(Duration ahead) throws Exception {
        fixture.awaitReports(1, off -> off > ahead.toMillis());
    }

    /**
     * Safety needs every region server within serverClockSkew/2 of true time for a claim's whole life. At that limit a
     * claim stamped 1.5 s behind and judged 1.5 s ahead (skew 3 s) is not granted twice. One region server stands for
     * two: a changed offset stands for the region moving to another server.
     */
    @Test
    void aClaimStampedBehindAndJudgedAheadWithinTheStatedBoundsIsNotGrantedTwice() throws Exception {
        HBaseOptions options = options("locker_clock_excursion", Duration.ofSeconds(3));
        Locker a = fixture.locker(options, "a", Duration.ofSeconds(5));
        Locker b = fixture.locker(options, "b", Duration.ofSeconds(5));
        KeyColumn lock = fixture.lock("excursion");
        EnvironmentEdgeManager.injectEdge(serverClock);
        serverClock.offsetMillis = -1_500; // S1, 1.5 s behind: serverClockSkew/2, the most the condition allows
        Object ta = new Object();
        long started = System.nanoTime();
        a.writeLock(lock, ta); // cell TTL 8 s from a stamp 1.5 s behind true time: A trusts it ~4.95 s
        serverClock.offsetMillis = 1_500; // the region on S2, 1.5 s ahead: 3 s ahead of the stamping clock
        Thread.sleep(2_500); // past grant + 2 s, where a judge 4.5 s ahead would have dropped the cell
        a.checkLocks(ta); // A still trusts its claim (monotonic deadline not reached, no I/O)
        TemporaryLockingException refused = assertThrows(TemporaryLockingException.class,
                () -> b.writeLock(lock, new Object()), "B granted while A still trusts its claim: two holders");
        assertEquals("a", refused.holder().rid().substring(0, 1));
        assertTrue(System.nanoTime() - started < Duration.ofMillis(4_900).toNanos(),
                "the scenario ran within A's validity (a slow machine would make it prove nothing)");
        a.deleteLocks(ta);
    }

    /**
     * The doctor judges each region server's clock against half the allowance, this host's clock standing for true
     * time. With serverClockSkew=3s a region server 2.5 s behind fails: its correction would expire claims 2.5 s
     * early. A region server 2.5 s ahead is a warning.
     */
    @Test
    void theDoctorJudgesEachRegionServerClockAgainstHalfTheAllowance() throws Exception {
        String uri = fixture.cluster().uri("locker_clock_doctor", "expiry=30s&serverClockSkew=3s");
        EnvironmentEdgeManager.injectEdge(serverClock);
        serverClock.offsetMillis = -2_500;
        awaitReports(-2_500);
        Finding behind = serverClocks(new HBaseDoctor().check(uri, s -> { }));
        assertEquals(Level.FAIL, behind.level(), behind::toString);
        // from here the clock only steps forward: after a step back, the next report waits as long as the step
        serverClock.offsetMillis = 0;
        awaitReports(0);
        Finding inSync = serverClocks(new HBaseDoctor().check(uri, s -> { }));
        assertEquals(Level.OK, inSync.level(), inSync::toString);
        serverClock.offsetMillis = 2_500;
        awaitReports(2_500);
        Finding ahead = serverClocks(new HBaseDoctor().check(uri, s -> { }));
        assertEquals(Level.WARN, ahead.level(), ahead::toString);
    }

    /**
     * A runs the job and records; the region moves to a server 8 s behind, and A's lease releases there. B's later
     * record, under a higher token, is the one read: a record's timestamp comes from its token, not a clock.
     */
    @Test
    void aRunRecordWrittenAfterAnOrderlyReleaseOnAClockBehindIsTheOneRead() throws Exception {
        HBaseOptions options = options("locker_clock_records", Duration.ofSeconds(10));
        AtomicBoolean taskDone = new AtomicBoolean();
        LockProbe stepBackAfterRecording = new LockProbe() {
            @Override
            public void after(Step step, KeyColumn l, String rid, RuntimeException failure) {
                if (step == Step.VERIFY && taskDone.get()) {
                    serverClock.offsetMillis = -8_000; // R1 written; the region moves to a server 8 s behind
                }
            }
        };
        Locker a = fixture.locker(options, LockerConfig.builder().rid("a").expiry(Duration.ofSeconds(30))
                .probe(stepBackAfterRecording).build());
        Locker b = fixture.locker(options, "b", Duration.ofSeconds(30));
        Locker c = fixture.locker(options, "c", Duration.ofSeconds(30));
        KeyColumn job = fixture.lock("job");
        Duration period = Duration.ofSeconds(2);
        EnvironmentEdgeManager.injectEdge(serverClock);

        Run ranA = a.runAtMostOncePer(job, period, "job", lease -> {
            sleep(300); // the job takes a while: the record is stamped after the grant
            taskDone.set(true);
        });
        assertEquals(Run.Outcome.RAN, ranA.outcome(), ranA::toString);
        sleep(period.toMillis() + 200);

        Run ranB = b.runAtMostOncePer(job, period, "job", lease -> { });
        assertEquals(Run.Outcome.RAN, ranB.outcome(), "due again after a period: " + ranB);
        long tokenB = ranB.record().orElseThrow().token();
        RunRecord last = b.lastRun(job).orElseThrow();
        Run ranC = c.runAtMostOncePer(job, period, "job", lease -> { });
        assertAll(() -> assertEquals(tokenB, last.token(), "lastRun() is B's run, not the older " + last),
                () -> assertEquals(Run.Outcome.NOT_DUE, ranC.outcome(), "B just ran: C must not run it again within "
                        + "the period, but " + ranC));
    }

    /**
     * A run record of the previous layout (stamped by the region server's clock, here one a day ahead) is read as
     * before, and the first record written since replaces it.
     */
    @Test
    void aRecordOfThePreviousLayoutIsReadAndTheNextRunReplacesIt() throws Exception {
        HBaseOptions options = options("locker_clock_records_layout", Duration.ofSeconds(10));
        Locker a = fixture.locker(options, "a", Duration.ofSeconds(30));
        KeyColumn job = fixture.lock("layout");
        Object warmUp = new Object();
        a.writeLock(job, warmUp); // creates the table and the job's fencing counter (token 1)
        a.deleteLocks(warmUp);
        java.time.Instant anHourAgo = java.time.Instant.now().minus(Duration.ofHours(1));
        RunRecord old = new RunRecord(1, anHourAgo, anHourAgo.plusSeconds(1),
                new dev.locker.api.LockOwner("old-layout", "h", 1, "main", "job", anHourAgo));
        EnvironmentEdgeManager.injectEdge(serverClock);
        serverClock.offsetMillis = Duration.ofDays(1).toMillis();
        try (org.apache.hadoop.hbase.client.Table t = fixture.connection()
                .getTable(TableName.valueOf(options.table()))) {
            t.put(new org.apache.hadoop.hbase.client.Put(LockTable.row(job))
                    .addColumn(options.tokenFamilyBytes(), "rdone".getBytes(), old.toBytes())); // the old layout's Put
        }
        serverClock.offsetMillis = 0;
        assertEquals(1, a.lastRun(job).orElseThrow().token(), "the old layout's record is read");
        Run ran = a.runAtMostOncePer(job, Duration.ofMinutes(1), "job", lease -> { });
        assertEquals(Run.Outcome.RAN, ran.outcome(), "due: the old record is an hour old: " + ran);
        assertEquals(ran.record().orElseThrow().token(), a.lastRun(job).orElseThrow().token(),
                "the new record replaced the old one stamped a day ahead");
        assertEquals(Run.Outcome.NOT_DUE, a.runAtMostOncePer(job, Duration.ofMinutes(1), "job", lease -> { })
                .outcome());
    }

    /** The cell TTL is expiry plus serverClockSkew rounded up to the millisecond, never floored below the expiry. */
    @Test
    void theCellTtlIsNeverShorterThanTheExpiry() {
        Duration expiry = Duration.ofNanos(10_900_000);
        Duration ttl = LockTable.cellTtl(expiry, Duration.ZERO);
        assertTrue(ttl.compareTo(expiry) >= 0, "cell TTL " + ttl + " shorter than the expiry " + expiry);
        assertEquals(Duration.ofMillis(11), ttl, "rounded up to the next millisecond, no further");
        assertEquals(Duration.ofMillis(10), LockTable.cellTtl(Duration.ofMillis(10), Duration.ZERO), "whole ms kept");
        assertEquals(Duration.ofMillis(3_002), LockTable.cellTtl(Duration.ofNanos(1_000_000_001),
                Duration.ofMillis(2_001)), "the sum is rounded, not each part");
    }

    /**
     * An expiry near the longest a Duration holds in nanoseconds never ends in a raw ArithmeticException. Either the
     * builder refuses it clearly before any I/O, or every lock operation works.
     */
    @Test
    void aVeryLongExpiryIsEitherRefusedClearlyAtBuildOrWorks() throws Exception {
        String table = "locker_clock_forever";
        try (Admin admin = fixture.connection().getAdmin()) {
            TableName name = TableName.valueOf(table);
            if (!admin.tableExists(name)) {
                admin.createTable(TableDescriptorBuilder.newBuilder(name)
                        .setValue(TableLayout.KEY, TableLayout.CREATED.value) // as a locker creates it
                        .setColumnFamily(ColumnFamilyDescriptorBuilder.newBuilder("l".getBytes()).setMaxVersions(1).build())
                        .setColumnFamily(ColumnFamilyDescriptorBuilder.newBuilder("t".getBytes()).setMaxVersions(1).build())
                        .build());
            }
        }
        HBaseOptions options = HBaseOptions.builder().table(table).createTable(false).build();
        Duration expiry = Duration.ofDays(365L * 300);
        Locker a;
        try {
            a = fixture.locker(options, "a", expiry);
        } catch (IllegalArgumentException clearRefusal) {
            return; // refused at build, naming the expiry: fine
        }
        KeyColumn lock = fixture.lock("forever");
        Object ta = new Object();
        assertDoesNotThrow(() -> a.writeLock(lock, ta), "a locker that opened takes an uncontended lock");
        a.checkLocks(ta);
        a.deleteLocks(ta);
    }

    /**
     * An expiry whose cell TTL would overflow HBase's {@code ts + ttl < now} is refused, naming it, before any I/O:
     * by LockerConfig now (at most 100 years on every backend), and cellTtl still refuses a sum beyond the longest cell
     * TTL, should a longer expiry ever reach it.
     */
    @Test
    void anExpiryBeyondTheLongestCellTtlIsRefusedBeforeAnyIo() throws Exception {
        String table = "locker_clock_never_created";
        Duration absurd = Duration.ofSeconds(Long.MAX_VALUE / 2);
        IllegalArgumentException refused = assertThrows(IllegalArgumentException.class, () -> HBaseLocker
                .builder(fixture.connection()).options(options(table, Duration.ofSeconds(10)))
                .config(LockerConfig.builder().rid("a").expiry(absurd).build()).build());
        assertTrue(refused.getMessage().contains("expiry"), refused::getMessage);
        try (Admin admin = fixture.connection().getAdmin()) {
            assertTrue(!admin.tableExists(TableName.valueOf(table)), "refused before creating the table");
        }
        IllegalArgumentException cell = assertThrows(IllegalArgumentException.class,
                () -> LockTable.cellTtl(absurd, Duration.ofSeconds(10)));
        assertTrue(cell.getMessage().contains("too long for an HBase cell TTL"), cell::getMessage);
    }

    private void awaitReports(long offsetMillis) throws Exception {
        // three readings in a row, so that no report of the old clock is left
        fixture.awaitReports(3, off -> Math.abs(off - offsetMillis) < 400);
    }

    private static Finding serverClocks(List<Finding> findings) {
        return finding(findings, "server-clocks");
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
