package dev.locker.hbase;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseTestingUtility;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.StartMiniClusterOption;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.RegionInfo;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.time.Duration;

/**
 * The real HBase 2.6 mini cluster (master, region server and ZooKeeper in this JVM, data on the local file system, no
 * HDFS), started once per test JVM on first use and shared by every test class of the module; a shutdown hook stops
 * it when the JVM exits. Test classes use fresh table or lock names, so nothing needs cleaning between them.
 */
public final class HBaseTestCluster {

    private static final Logger log = LoggerFactory.getLogger(HBaseTestCluster.class);

    private static HBaseTestCluster instance;

    private final HBaseTestingUtility util;
    private final Connection connection;
    private final Duration startTime;

    private HBaseTestCluster() throws Exception {
        long t0 = System.nanoTime();
        util = startMiniCluster();
        connection = ConnectionFactory.createConnection(util.getConfiguration());
        startTime = Duration.ofNanos(System.nanoTime() - t0);
        log.info("HBase mini cluster up in {} ms (ZooKeeper {}:{})", startTime.toMillis(), zkQuorum(), zkPort());
        System.out.println("[locker-hbase] HBase mini cluster started in " + startTime.toMillis() + " ms");
        Runtime.getRuntime().addShutdownHook(new Thread(this::stop, "hbase-mini-cluster-stop"));
    }

    /**
     * Starts a mini cluster (ZooKeeper, one master, one region server) with the settings of every harness of this
     * project (this shared one, locker-faults' and locker-bench's, which need clusters of their own): the local file
     * system instead of HDFS (which has no hflush/hsync, so HBase must be told to accept it), no web UIs, and region
     * servers that report at once, so the cluster is up in seconds instead of ~17 s. The master gets 200 s to become
     * active instead of 30 s: two loaded cores can take longer, and a start that gives up costs every class that waited.
     */
    public static HBaseTestingUtility startMiniCluster() throws Exception {
        HBaseTestingUtility util = new HBaseTestingUtility();
        Configuration conf = util.getConfiguration();
        conf.setBoolean("hbase.unsafe.stream.capability.enforce", false);
        conf.set("hbase.wal.provider", "filesystem");
        conf.setInt(HConstants.MASTER_INFO_PORT, -1);
        conf.setInt(HConstants.REGIONSERVER_INFO_PORT, -1);
        conf.setInt("hbase.regionserver.msginterval", 100);
        conf.setInt(HConstants.REGION_SERVER_HANDLER_COUNT, 10);
        conf.setInt("hbase.master.start.timeout.localHBaseCluster", 200_000);
        util.startMiniZKCluster();
        util.startMiniHBaseCluster(StartMiniClusterOption.builder().numMasters(1).numRegionServers(1).build());
        return util;
    }

    /** The cluster, started on first call. */
    public static synchronized HBaseTestCluster get() {
        if (instance == null) {
            try {
                instance = new HBaseTestCluster();
            } catch (Exception e) {
                throw new IllegalStateException("could not start the HBase mini cluster", e);
            }
        }
        return instance;
    }

    HBaseTestingUtility util() {
        return util;
    }

    /** A connection shared by tests (never close it). */
    Connection connection() {
        return connection;
    }

    String zkQuorum() {
        return util.getConfiguration().get(HConstants.ZOOKEEPER_QUORUM);
    }

    int zkPort() {
        return util.getConfiguration().getInt(HConstants.ZOOKEEPER_CLIENT_PORT, -1);
    }

    /** An {@code hbase://} URI of this cluster for {@code table}, with extra options (may be empty). */
    public String uri(String table, String options) {
        return "hbase://" + zkQuorum() + ":" + zkPort() + "/" + table + (options.isEmpty() ? "" : "?" + options);
    }

    /**
     * A new connection with bounded client retries and timeouts (short ones, so that tests of an unavailable region
     * fail fast); the caller closes it.
     */
    Connection newConnection(Duration operationTimeout) {
        Configuration conf = new Configuration(util.getConfiguration());
        HBaseClients.applyTimeouts(conf, HBaseOptions.builder()
                .operationTimeout(operationTimeout)
                .rpcTimeout(operationTimeout.dividedBy(2))
                .clientRetries(2)
                .build());
        try {
            return ConnectionFactory.createConnection(conf);
        } catch (IOException e) {
            throw new IllegalStateException("could not connect to the mini cluster", e);
        }
    }

    /** Takes every region of {@code table} offline (clients then fail temporarily), or brings them back. */
    void setRegionsOnline(TableName table, boolean online) {
        try (Admin admin = connection.getAdmin()) {
            for (RegionInfo r : admin.getRegions(table)) {
                if (online) {
                    admin.assign(r.getRegionName());
                } else {
                    admin.unassign(r.getRegionName());
                }
            }
            if (online) {
                util.waitTableAvailable(table, 60_000);
            }
        } catch (Exception e) {
            throw new IllegalStateException("could not " + (online ? "assign" : "unassign") + " the regions of " + table, e);
        }
    }

    Duration startTime() {
        return startTime;
    }

    private void stop() {
        try {
            connection.close();
        } catch (IOException e) {
            // the JVM is exiting
        }
        try {
            util.shutdownMiniCluster();
        } catch (Exception e) {
            log.warn("HBase mini cluster did not stop cleanly: {}", e.toString());
        }
    }
}
