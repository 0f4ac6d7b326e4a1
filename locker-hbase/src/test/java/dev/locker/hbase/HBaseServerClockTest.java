package dev.locker.hbase;

import dev.locker.api.KeyColumn;
import dev.locker.api.Locker;
import dev.locker.api.TemporaryLockingException;
import dev.locker.spi.DeploymentCheck.Finding;
import dev.locker.spi.DeploymentCheck.Level;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.util.EnvironmentEdgeManager;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.time.Duration;
import java.util.List;

import static dev.locker.hbase.HBaseClockFixture.finding;
import static dev.locker.hbase.HBaseClockFixture.options;
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
 * (30 s by default).
 */
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
     * The reviewer's case: a release writes the free marker at T1, the region server's clock then steps back 20 s, and
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
}
