package dev.locker.hbase;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LeaseOptions;
import dev.locker.api.Locker;
import org.apache.hadoop.hbase.util.EnvironmentEdgeManager;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.parallel.Isolated;

import java.time.Duration;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** After a shorter renewal on a region server clock behind the claim's stamp, later steps of the holder still count. */
// alone: it steps the clock of the shared mini cluster's region server, which every class uses
@Isolated
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class HBaseShorterRenewalOnAClockBehindTest {

    private final SteppedClock serverClock = new SteppedClock();
    private HBaseClockFixture fixture;

    @BeforeAll
    void connect() {
        fixture = new HBaseClockFixture("hbase-shorter-clock/");
    }

    @AfterEach
    void resetClock() {
        EnvironmentEdgeManager.reset();
    }

    @AfterAll
    void close() throws Exception {
        fixture.close();
    }

    /**
     * A's claim is stamped on a clock 2 s ahead; the region then runs 2 s behind, both within serverClockSkew/2. A
     * renews to a shorter expiry, then releases cleanly. The lock must be free for B at once.
     */
    @Test
    void aReleaseAfterAShorterRenewalOnARegionServerClockBehindItsStampFreesTheLock() throws Exception {
        HBaseOptions options = HBaseClockFixture.options("locker_shorter_clock_back", Duration.ofSeconds(10));
        Locker a = fixture.locker(options, "a", Duration.ofSeconds(60));
        Locker b = fixture.locker(options, "b", Duration.ofSeconds(60));
        KeyColumn lock = fixture.lock("renewed-shorter");
        EnvironmentEdgeManager.injectEdge(serverClock);
        serverClock.offsetMillis = 2_000; // the stamping server, 2 s ahead
        Lease lease = a.acquire(lock, "a task that needs less time than it asked for",
                LeaseOptions.DEFAULTS.keepAlive(false));
        serverClock.offsetMillis = -2_000; // the region on a server 2 s behind: 4 s behind the claim's stamp
        lease.renewFor(Duration.ofSeconds(20));
        boolean ours = lease.release();
        Optional<Lease> second = b.tryAcquire(lock, "after A released", Duration.ZERO);
        String holder = String.valueOf(b.holding(lock));
        second.ifPresent(Lease::close);
        assertTrue(ours, "A's release of its live claim says it was ours");
        assertTrue(second.isPresent(), "A released its claim cleanly, yet the lock is still held: " + holder);
    }

    /**
     * The same clocks, 1 s each way (serverClockSkew 2 s). A renews to 1 s, then back to a minute. Once the 1 s
     * cell's TTL has passed on the region server, A's lease is still valid, so B must be refused.
     */
    @Test
    void aLongerRenewalAfterAShorterOneOnARegionServerClockBehindItsStampKeepsTheLock() throws Exception {
        HBaseOptions options = HBaseClockFixture.options("locker_shorter_clock_back", Duration.ofSeconds(2));
        Locker a = fixture.locker(options, "a", Duration.ofSeconds(60));
        Locker b = fixture.locker(options, "b", Duration.ofSeconds(60));
        KeyColumn lock = fixture.lock("renewed-back");
        EnvironmentEdgeManager.injectEdge(serverClock);
        serverClock.offsetMillis = 1_000; // the stamping server, 1 s ahead
        Lease lease = a.acquire(lock, "a task whose work grew again", LeaseOptions.DEFAULTS.keepAlive(false));
        serverClock.offsetMillis = -1_000; // the region on a server 1 s behind: 2 s behind the claim's stamp
        lease.renewFor(Duration.ofSeconds(1)); // a cell TTL of 3 s, stamped above the claim's first cell
        lease.renewFor(Duration.ofSeconds(60));
        Thread.sleep(6_000); // past the 3 s cell's TTL on the region server's clock (a bound, not a timing)
        assertTrue(lease.isValid(), "A's lease, renewed to a minute, is valid by its own clock");
        Optional<Lease> second = b.tryAcquire(lock, "while A holds it", Duration.ZERO);
        String holder = String.valueOf(b.holding(lock));
        second.ifPresent(Lease::close);
        lease.close();
        assertTrue(second.isEmpty(), "A renewed its claim to a minute, yet B was granted the lock: " + holder);
    }
}
