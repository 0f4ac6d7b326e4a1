package dev.locker.hbase;

import dev.locker.api.KeyColumn;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.spi.DeploymentCheck.Finding;
import org.apache.hadoop.hbase.ClusterMetrics;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.util.EnvironmentEdgeManager;

import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.function.LongPredicate;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What the tests that step the region server's clock ({@link SteppedClock}) share: a connection to the mini cluster,
 * lockers on it closed at the end, lock names of the test class's own, and the wait for the region servers to report
 * to the master on the clock they now have (the doctor reads the clocks from those reports). Made in a test class's
 * {@code @BeforeAll}, closed in its {@code @AfterAll}, which also resets HBase's clock.
 */
final class HBaseClockFixture {

    private final HBaseTestCluster cluster = HBaseTestCluster.get();
    private final Connection connection = cluster.newConnection(Duration.ofSeconds(5));
    private final List<Locker> opened = new ArrayList<>();
    private final String lockPrefix;

    /** Locks named {@code lockPrefix + name + "-" + random}. */
    HBaseClockFixture(String lockPrefix) {
        this.lockPrefix = lockPrefix;
    }

    HBaseTestCluster cluster() {
        return cluster;
    }

    Connection connection() {
        return connection;
    }

    /** Options on {@code table}: a TTL of an hour, and this allowance for the region servers' clocks. */
    static HBaseOptions options(String table, Duration serverClockSkew) {
        return HBaseOptions.builder().table(table).ttl(Duration.ofHours(1)).serverClockSkew(serverClockSkew).build();
    }

    /** A locker, closed with the fixture. */
    Locker locker(HBaseOptions options, LockerConfig config) {
        Locker l = HBaseLocker.builder(connection).options(options).config(config).build();
        opened.add(l);
        return l;
    }

    Locker locker(HBaseOptions options, String rid, Duration expiry) {
        return locker(options, LockerConfig.builder().rid(rid).expiry(expiry).build());
    }

    KeyColumn lock(String name) {
        return KeyColumn.of(lockPrefix + name + "-" + LockerConfig.randomRid().substring(0, 8), "c");
    }

    /**
     * Waits (60 s at most, looking every 100 ms) until, in {@code inARow} readings in a row, the last report of every
     * live region server to the master was made on a clock whose offset from this host's ({@code report - now}, in
     * ms) passes {@code offset}. A region server reports every msginterval of its own clock, so after a step back its
     * next report can be late.
     */
    void awaitReports(int inARow, LongPredicate offset) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        int fresh = 0;
        try (Admin admin = connection.getAdmin()) {
            while (true) {
                long now = System.currentTimeMillis();
                boolean seen = admin.getClusterMetrics(EnumSet.of(ClusterMetrics.Option.LIVE_SERVERS))
                        .getLiveServerMetrics().values().stream()
                        .allMatch(m -> offset.test(m.getReportTimestamp() - now));
                fresh = seen ? fresh + 1 : 0;
                if (fresh >= inARow) {
                    return;
                }
                assertTrue(System.nanoTime() - deadline < 0, "the region server never reported on its new clock");
                Thread.sleep(100);
            }
        }
    }

    /** The finding of the doctor's {@code check}. */
    static Finding finding(List<Finding> findings, String check) {
        return findings.stream().filter(f -> f.check().equals(check)).findFirst()
                .orElseThrow(() -> new AssertionError("no " + check + " in " + findings));
    }

    /** Resets HBase's clock, closes the lockers (the first failure is thrown as it comes), then the connection. */
    void close() throws Exception {
        EnvironmentEdgeManager.reset();
        for (Locker l : opened) {
            l.close();
        }
        connection.close();
    }

    /** As {@link #close()}, but a locker that fails to close is passed over. */
    void closeQuietly() throws Exception {
        EnvironmentEdgeManager.reset();
        for (Locker l : opened) {
            try {
                l.close();
            } catch (RuntimeException ignored) {
                // best effort
            }
        }
        connection.close();
    }
}
