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

/** A claim left for its hold-at-least keeps its lock when the region server's clock is behind the claim's stamp. */
// alone: it steps the clock of the shared mini cluster's region server, which every class uses
@Isolated
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class HBaseLeaveOnAClockBehindTest {

    private final SteppedClock serverClock = new SteppedClock();
    private HBaseClockFixture fixture;

    @BeforeAll
    void connect() {
        fixture = new HBaseClockFixture("hbase-leave-clock/");
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
     * A holds a lease with a 30 s hold-at-least; the region then runs on a clock 4 s behind the one that stamped the
     * claim (a move to another region server, both within serverClockSkew/2 of true time). A releases at once. Its
     * claim must stay until the hold-at-least ends, so B is refused.
     */
    @Test
    void aClaimLeftOnARegionServerClockBehindItsStampStillHoldsTheLockForItsHoldAtLeast() throws Exception {
        HBaseOptions options = HBaseClockFixture.options("locker_leave_clock_back", Duration.ofSeconds(10));
        Locker a = fixture.locker(options, "a", Duration.ofSeconds(60));
        Locker b = fixture.locker(options, "b", Duration.ofSeconds(60));
        KeyColumn lock = fixture.lock("left");
        EnvironmentEdgeManager.injectEdge(serverClock);
        serverClock.offsetMillis = 2_000; // the stamping server, 2 s ahead: within serverClockSkew/2
        Lease lease = a.acquire(lock, "a job that must hold its lock 30 s",
                LeaseOptions.DEFAULTS.keepAlive(false).holdAtLeast(Duration.ofSeconds(30)));
        serverClock.offsetMillis = -2_000; // the region on a server 2 s behind: 4 s behind the claim's stamp
        lease.close(); // inside the hold-at-least: the claim is left on the backend until then
        Optional<Lease> second = b.tryAcquire(lock, "a second holder", Duration.ZERO);
        second.ifPresent(Lease::close);
        assertTrue(second.isEmpty(), "the claim left for its hold-at-least still holds the lock, but B was granted "
                + "it at once (holder now: " + b.holding(lock) + ")");
    }

    /** The same release with the region server's clock where it stamped the claim: the claim is left, B refused. */
    @Test
    void aClaimLeftOnTheClockThatStampedItHoldsTheLockForItsHoldAtLeast() throws Exception {
        HBaseOptions options = HBaseClockFixture.options("locker_leave_clock_back", Duration.ofSeconds(10));
        Locker a = fixture.locker(options, "a", Duration.ofSeconds(60));
        Locker b = fixture.locker(options, "b", Duration.ofSeconds(60));
        KeyColumn lock = fixture.lock("left-same-clock");
        EnvironmentEdgeManager.injectEdge(serverClock);
        serverClock.offsetMillis = 2_000;
        Lease lease = a.acquire(lock, "a job that must hold its lock 30 s",
                LeaseOptions.DEFAULTS.keepAlive(false).holdAtLeast(Duration.ofSeconds(30)));
        lease.close();
        Optional<Lease> second = b.tryAcquire(lock, "a second holder", Duration.ZERO);
        second.ifPresent(Lease::close);
        assertTrue(second.isEmpty(), "the claim left for its hold-at-least still holds the lock (holder now: "
                + b.holding(lock) + ")");
        assertTrue(b.holding(lock).isPresent(), "A's left claim is the holder");
    }
}
