package dev.locker.faults;

import dev.locker.api.LockerConfig;
import dev.locker.hbase.HBaseLocker;
import dev.locker.hbase.HBaseOptions;
import dev.locker.hbase.HBaseTestCluster;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseTestingUtility;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.MiniHBaseCluster;
import org.apache.hadoop.hbase.ServerName;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.RegionInfo;
import org.apache.hadoop.hbase.util.JVMClusterUtil;

import java.time.Duration;
import java.util.List;

/**
 * The real HBase 2.6 mini cluster (master, region servers and ZooKeeper in the harness JVM, data on the local file
 * system), started on first use and kept for every run. The workers reach it as any client does, through ZooKeeper.
 *
 * <p>What does not apply: a frozen connection (a client talks to ZooKeeper and then to each region server directly,
 * at addresses it learns from {@code hbase:meta}, so one proxy cannot stand between a worker and "the server"), and
 * killing, restarting or pausing the server process (it is the harness's own JVM). The HBase server fault is
 * {@link Scenario#REGION_SERVER_ABORT}: the region server hosting the lock table aborts while a lock is held.
 */
public final class HBaseBackend implements Backend {

    /** What a JVM running the HBase client (or the mini cluster) needs on JDK 17. */
    static final List<String> JDK17_OPTIONS = List.of(
            "--add-opens", "java.base/java.lang=ALL-UNNAMED",
            "--add-opens", "java.base/java.lang.reflect=ALL-UNNAMED",
            "--add-opens", "java.base/java.util=ALL-UNNAMED",
            "--add-opens", "java.base/java.util.concurrent=ALL-UNNAMED",
            "--add-opens", "java.base/java.nio=ALL-UNNAMED",
            "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
            "--add-opens", "java.base/jdk.internal.misc=ALL-UNNAMED",
            "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
            "-Dorg.apache.hbase.thirdparty.io.netty.tryReflectionSetAccessible=true",
            "-Djava.net.preferIPv4Stack=true");

    private static final String TABLE = "faults_locks";

    private HBaseTestingUtility util;
    private Duration expiry;

    @Override
    public String name() {
        return "hbase";
    }

    @Override
    public String inapplicable(Scenario s) {
        return switch (s) {
            case FREEZE_CONNECTION -> "a client talks to ZooKeeper and to each region server directly, at addresses "
                    + "from hbase:meta: no single connection to freeze";
            case SERVER_RESTART, SERVER_PAUSE -> "the mini cluster runs in the harness JVM (region server abort instead)";
            case SERVER_RESTART_AOF -> "Redis only (append-only file)";
            case CONTROL_NO_GUARD -> "Redis only (the restart guard)";
            default -> s.onlyOn(name());
        };
    }

    @Override
    public void begin(Scenario s, Duration expiry) {
        this.expiry = expiry;
        if (util == null) {
            start();
        }
    }

    private void start() {
        try {
            util = HBaseTestCluster.startMiniCluster(); // locker-hbase's test harness settings
            // create the lock table now, so that a region server abort can move it first
            try (var locker = HBaseLocker.builder(util.getConnection()).options(HBaseOptions.builder().table(TABLE).build())
                    .config(LockerConfig.defaults()).build()) {
                locker.holder(dev.locker.api.KeyColumn.named("warm-up"));
            }
        } catch (Exception e) {
            throw new IllegalStateException("could not start the HBase mini cluster", e);
        }
    }

    @Override
    public String uri(String hostPort) {
        Configuration conf = util.getConfiguration();
        return "hbase://" + conf.get(HConstants.ZOOKEEPER_QUORUM) + ":" + conf.getInt(HConstants.ZOOKEEPER_CLIENT_PORT, -1)
                + "/" + TABLE + "?expiry=" + expiry.toMillis() + "ms&operationTimeout=3s&rpcTimeout=1s&clientRetries=2"
                // every region server of this mini cluster runs in this JVM, on one clock: no disagreement to allow for
                + "&serverClockSkew=0s";
    }

    @Override
    public String serverAddress() {
        return null;
    }

    @Override
    public List<String> workerJvmOptions() {
        return JDK17_OPTIONS;
    }

    /**
     * Starts a second region server, moves the lock table's region onto it and waits until it is served there; call
     * before the run's workers start, so that {@link #abortRegionServer()} takes the lock table down.
     */
    void prepareRegionServerAbort() {
        try {
            MiniHBaseCluster mini = util.getMiniHBaseCluster();
            JVMClusterUtil.RegionServerThread victim = mini.startRegionServer();
            victim.waitForServerOnline();
            ServerName victimName = victim.getRegionServer().getServerName();
            TableName table = TableName.valueOf(TABLE);
            Connection connection = util.getConnection();
            try (Admin admin = connection.getAdmin()) {
                for (RegionInfo region : admin.getRegions(table)) {
                    admin.move(region.getEncodedNameAsBytes(), victimName);
                }
                util.waitFor(60_000, () -> admin.getRegions(victimName).stream().anyMatch(r -> r.getTable().equals(table)));
            }
            this.victim = victim;
        } catch (Exception e) {
            throw new IllegalStateException("could not move the lock table to a region server of its own", e);
        }
    }

    private JVMClusterUtil.RegionServerThread victim;

    @Override
    public void abortRegionServer() {
        if (victim == null) {
            throw new IllegalStateException("prepareRegionServerAbort() first");
        }
        victim.getRegionServer().abort("faults: the region server hosting the lock table aborts while a lock is held");
        victim = null;
    }

    /** Waits until the lock table is served again (after an abort), at most {@code max}. */
    void awaitTableAvailable(Duration max) {
        try {
            util.waitTableAvailable(TableName.valueOf(TABLE), max.toMillis());
        } catch (Exception e) {
            throw new IllegalStateException("the lock table is not available again within " + max, e);
        }
    }

    @Override
    public void end() {
        // the cluster is shared by the runs (lock names differ per run)
    }

    @Override
    public void close() {
        if (util != null) {
            try {
                util.shutdownMiniCluster();
            } catch (Exception e) {
                // the run is over; a cluster that does not stop cleanly dies with the JVM
            }
            util = null;
        }
    }
}
