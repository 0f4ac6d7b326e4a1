package dev.locker.hbase;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.RpcRetryingCallerFactory;
import org.apache.hadoop.hbase.client.TableBuilder;
import org.apache.hadoop.hbase.TableName;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Builds HBase client configurations and connections that fail fast. HBase's own defaults retry an operation 15
 * times with back-off and ZooKeeper reads 30 times, so a dead cluster blocks a caller for minutes; a lock must
 * answer "unavailable" in seconds. Opening a table additionally has a hard deadline of
 * {@link HBaseOptions#operationTimeout()} (see {@code HBaseTables}), because HBase nests its retries.
 *
 * <p>The same settings make the client keep an interrupt ({@link InterruptKeepingCallers}). A locker built on a
 * connection configured otherwise can lose an interrupt that lands during a grant, and its waiter keeps waiting.
 */
public final class HBaseClients {

    private HBaseClients() {
    }

    /** A client configuration for {@code options}: quorum, znode parent and bounded retries and timeouts. */
    public static Configuration configuration(HBaseOptions options) {
        Configuration conf = HBaseConfiguration.create();
        conf.set(HConstants.ZOOKEEPER_QUORUM, options.zkQuorum());
        conf.setInt(HConstants.ZOOKEEPER_CLIENT_PORT, options.zkPort());
        conf.set(HConstants.ZOOKEEPER_ZNODE_PARENT, options.znodeParent());
        applyTimeouts(conf, options);
        for (Map.Entry<String, String> e : options.extraConfiguration().entrySet()) {
            conf.set(e.getKey(), e.getValue());
        }
        return conf;
    }

    /**
     * Bounded retries and timeouts on an existing configuration (used by tests on the mini cluster's own), and
     * retrying callers that keep an interrupt ({@link InterruptKeepingCallers}).
     */
    public static Configuration applyTimeouts(Configuration conf, HBaseOptions options) {
        long rpc = options.rpcTimeout().toMillis();
        long op = options.operationTimeout().toMillis();
        conf.setInt(HConstants.HBASE_CLIENT_RETRIES_NUMBER, options.clientRetries());
        conf.setLong(HConstants.HBASE_CLIENT_PAUSE, options.clientPause().toMillis());
        conf.setLong(HConstants.HBASE_RPC_TIMEOUT_KEY, rpc);
        conf.setLong(HConstants.HBASE_RPC_READ_TIMEOUT_KEY, rpc);
        conf.setLong(HConstants.HBASE_RPC_WRITE_TIMEOUT_KEY, rpc);
        conf.setLong(HConstants.HBASE_CLIENT_OPERATION_TIMEOUT, op);
        conf.setLong(HConstants.HBASE_CLIENT_META_OPERATION_TIMEOUT, op);
        conf.setLong("hbase.client.meta.read.rpc.timeout", rpc);
        conf.setLong("hbase.client.meta.scanner.timeout.period", op);
        conf.setLong(HConstants.HBASE_CLIENT_SCANNER_TIMEOUT_PERIOD, op);
        conf.setLong("hbase.ipc.client.connect.timeout", Math.min(rpc, 3000));
        // ZooKeeper: the client reads the meta location there, inside its own retries; retrying each read as well
        // would multiply the wait on a dead quorum, and a session wait is kept to a third of the operation timeout
        conf.setInt("zookeeper.recovery.retry", 0);
        conf.setInt("zookeeper.recovery.retry.intervalmill", 200);
        conf.setLong("zookeeper.session.timeout", Math.max(2000, op / 3));
        // Admin calls that wait for a procedure (table creation) on the master: the budget HBaseTables gives them
        conf.setLong("hbase.client.sync.wait.timeout.msec", Math.max(op, HBaseTables.CREATE_BUDGET_MS));
        // the batch path (a grant's claim and counter) swallows an interrupt: these callers hand it back
        conf.set(RpcRetryingCallerFactory.CUSTOM_CALLER_CONF_KEY, InterruptKeepingCallers.class.getName());
        return conf;
    }

    /** The cluster and table a connection reaches, for messages: {@code HBase cluster zk1,zk2:2181/hbase table t}. */
    public static String describe(Configuration conf, String table) {
        String quorum = conf.get(HConstants.ZOOKEEPER_QUORUM, "localhost");
        String port = conf.get(HConstants.ZOOKEEPER_CLIENT_PORT, "2181");
        String parent = conf.get(HConstants.ZOOKEEPER_ZNODE_PARENT, "/hbase");
        return "HBase cluster " + quorum + (quorum.contains(":") ? "" : ":" + port) + parent + " table " + table;
    }

    /**
     * Builds the tables of a locker or store: {@code Table}s whose multi-action calls (an atomic {@code RowMutations},
     * conditional or not) run in the calling thread. By default HBase's blocking client hands every such call to the
     * connection's batch pool and waits for it, two thread switches per call; on a loaded host that cost as much as a
     * second round trip (a grant is a conditional {@code RowMutations}: claim and fencing counter). Single mutations
     * and gets run in the calling thread either way. A {@code Table} stays per call (it is not thread-safe); the
     * builder is.
     */
    static TableBuilder tables(Connection connection, TableName table) {
        return connection.getTableBuilder(table, IN_CALLING_THREAD);
    }

    private static final ExecutorService IN_CALLING_THREAD = new InCallingThread();

    /** Runs each task at once in the thread that submits it; never shut down (it owns no thread). */
    private static final class InCallingThread extends AbstractExecutorService {
        @Override
        public void execute(Runnable task) {
            task.run();
        }

        @Override
        public void shutdown() {
        }

        @Override
        public List<Runnable> shutdownNow() {
            return List.of();
        }

        @Override
        public boolean isShutdown() {
            return false;
        }

        @Override
        public boolean isTerminated() {
            return false;
        }

        @Override
        public boolean awaitTermination(long timeout, TimeUnit unit) {
            return false;
        }
    }

    /** Opens a connection; the caller closes it. Connecting is lazy: the cluster is contacted by the first call. */
    public static Connection connect(HBaseOptions options) throws IOException {
        return ConnectionFactory.createConnection(configuration(options));
    }
}
