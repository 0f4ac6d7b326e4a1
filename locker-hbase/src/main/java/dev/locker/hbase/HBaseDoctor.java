package dev.locker.hbase;

import dev.locker.spi.DeploymentCheck;
import dev.locker.api.LockerConfig;
import dev.locker.api.PermanentLockingException;
import dev.locker.spi.StoreException;
import dev.locker.api.TemporaryLockingException;
import dev.locker.spi.UriOptions;
import org.apache.hadoop.hbase.ClusterMetrics;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptor;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.TableDescriptor;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;

/**
 * The {@code hbase://} deployment checks ({@code locker doctor}), read-only (it never creates the table): the
 * cluster (version, live region servers), the lock table, its claims and token families, the claims family's TTL
 * against the expiry (a TTL not longer than the expiry drops held claims), the token family's TTL (any TTL restarts
 * fencing counters), and NEW_VERSION_BEHAVIOR (not needed by {@link HBaseLocker}, which never deletes its holder
 * cell; needed by the key-column-value adapter's tables).
 */
public final class HBaseDoctor implements DeploymentCheck {

    @Override
    public Set<String> schemes() {
        return Set.of("hbase");
    }

    @Override
    public List<Finding> check(String uri, Consumer<String> progress) {
        HBaseOptions options = HBaseOptions.fromUri(uri); // a malformed URI fails here, before any I/O
        LockerConfig config = UriOptions.parse(uri).applyTo(LockerConfig.defaults());
        String where = HBaseClients.describe(HBaseClients.configuration(options), options.table());
        progress.accept("connecting to " + where);
        long deadline = options.operationTimeout().toMillis() * 2;
        // HBase nests its retries (ZooKeeper inside meta lookups inside RPCs): one deadline for the whole check
        FutureTask<List<Finding>> task = new FutureTask<>(() -> {
            try (Connection c = HBaseClients.connect(options); Admin admin = c.getAdmin()) {
                return checkNow(admin, options, config, where, progress);
            }
        });
        Thread t = new Thread(task, "locker-hbase-doctor");
        t.setDaemon(true);
        t.start();
        try {
            return task.get(deadline, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            task.cancel(true);
            throw new TemporaryLockingException("checking " + where + ": no answer within " + deadline + " ms "
                    + "(cluster or ZooKeeper quorum unreachable?)", null, null, e);
        } catch (InterruptedException e) {
            task.cancel(true);
            Thread.currentThread().interrupt();
            throw new TemporaryLockingException("interrupted while checking " + where, null, null, e);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof StoreException s) {
                throw s.isTemporary() ? new TemporaryLockingException(s.getMessage(), null, null, s)
                        : new PermanentLockingException(s.getMessage(), null, null, s);
            }
            if (cause instanceof IOException io) {
                StoreException s = HBaseErrors.translate(io, "checking the deployment", where);
                throw s.isTemporary() ? new TemporaryLockingException(s.getMessage(), null, null, s)
                        : new PermanentLockingException(s.getMessage(), null, null, s);
            }
            if (cause instanceof RuntimeException r) {
                throw r;
            }
            throw new TemporaryLockingException("checking " + where + " failed: " + cause, null, null, cause);
        }
    }

    private static List<Finding> checkNow(Admin admin, HBaseOptions options, LockerConfig config, String where,
                                          Consumer<String> progress) throws IOException {
        List<Finding> out = new ArrayList<>();
        ClusterMetrics m = admin.getClusterMetrics(EnumSet.of(ClusterMetrics.Option.HBASE_VERSION,
                ClusterMetrics.Option.LIVE_SERVERS, ClusterMetrics.Option.DEAD_SERVERS));
        int live = m.getLiveServerMetrics().size();
        String cluster = "HBase " + m.getHBaseVersion() + ", " + live + " live region server(s)"
                + (m.getDeadServerNames().isEmpty() ? "" : ", " + m.getDeadServerNames().size() + " dead");
        out.add(live == 0 ? Finding.fail("cluster", cluster + ": no region server serves the lock table",
                "start the region servers") : Finding.ok("cluster", cluster));
        progress.accept("reading table " + options.table());
        TableName name = TableName.valueOf(options.table());
        if (!admin.tableExists(name)) {
            if (options.createTable()) {
                out.add(Finding.ok("table", "table " + name + " does not exist yet: the first locker creates it "
                        + "(createTable=true)"));
            } else {
                out.add(Finding.fail("table", "table " + name + " does not exist and createTable=false: no lock can "
                        + "be taken", "create it with families '" + options.family() + "' (TTL " + options.ttl()
                        .toSeconds() + " s) and '" + options.tokenFamily() + "' (no TTL), or allow createTable"));
            }
            return out;
        }
        if (!admin.isTableEnabled(name)) {
            out.add(Finding.fail("table", "table " + name + " is disabled: every lock call fails",
                    "enable '" + name + "' in the hbase shell"));
            return out;
        }
        TableDescriptor d = admin.getDescriptor(name);
        out.add(Finding.ok("table", "table " + name + " is enabled"));
        ColumnFamilyDescriptor claims = d.getColumnFamily(options.familyBytes());
        ColumnFamilyDescriptor tokens = d.getColumnFamily(options.tokenFamilyBytes());
        if (claims == null || tokens == null) {
            out.add(Finding.fail("families", "table " + name + " lacks family '" + (claims == null ? options.family()
                    : options.tokenFamily()) + "' (it has " + d.getColumnFamilyNames().stream()
                    .map(org.apache.hadoop.hbase.util.Bytes::toString).toList() + "): lockers refuse to open",
                    "add the family, or name the right ones with family= and tokenFamily= in the URI"));
            return out;
        }
        out.add(Finding.ok("families", "claims family '" + options.family() + "' and token family '"
                + options.tokenFamily() + "' are there"));
        int claimsTtl = claims.getTimeToLive();
        Duration expiry = config.expiry();
        if (claimsTtl != HConstants.FOREVER && Duration.ofSeconds(claimsTtl).compareTo(expiry) <= 0) {
            out.add(Finding.fail("claims-ttl", "the claims family's TTL (" + claimsTtl + " s) is not longer than the "
                    + "expiry (" + expiry.toSeconds() + " s): held claims would vanish, and lockers refuse to open",
                    "alter '" + name + "', {NAME => '" + options.family() + "', TTL => " + Math.max(604800,
                    expiry.toSeconds() * 2) + "}"));
        } else {
            out.add(Finding.ok("claims-ttl", "the claims family's TTL (" + (claimsTtl == HConstants.FOREVER ? "none"
                    : claimsTtl + " s") + ") outlasts the expiry (" + expiry.toSeconds() + " s); expiry itself is the "
                    + "per-cell TTL on the region server's clock"));
        }
        int tokenTtl = tokens.getTimeToLive();
        if (tokenTtl != HConstants.FOREVER) {
            out.add(Finding.fail("token-ttl", "the token family has a TTL (" + tokenTtl + " s): fencing counters would "
                    + "restart and a later holder could get a lower token; lockers refuse to open",
                    "alter '" + name + "', {NAME => '" + options.tokenFamily() + "', TTL => 'FOREVER'}"));
        } else {
            out.add(Finding.ok("token-ttl", "the token family has no TTL: fencing tokens only grow"));
        }
        out.add(Finding.ok("new-version-behavior", "claims family NEW_VERSION_BEHAVIOR="
                + claims.isNewVersionBehavior() + ": not needed by the hbase:// locker, which never deletes its holder "
                + "cell (tables of the key-column-value adapter need it: HBaseKeyColumnValueStore)"));
        return out;
    }
}
