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
import java.io.InterruptedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;

/**
 * The {@code hbase://} deployment checks ({@code locker doctor}), read-only (it never creates the table): the
 * cluster (version, live region servers), the lock table, its claims and token families, the claims family's TTL
 * against the expiry plus the region servers' clock allowance (a shorter TTL drops held claims), the token family's
 * TTL (any TTL restarts fencing counters), NEW_VERSION_BEHAVIOR (not needed by {@link HBaseLocker}, which never
 * deletes its holder cell; needed by the key-column-value adapter's tables), the table's layout ({@link HBaseLayout}),
 * and the region servers' clocks against the condition {@link HBaseOptions#serverClockSkew()} states: each within
 * half the allowance of true time (this host's clock stands for it), since a claim stamped by a clock behind and
 * judged by one ahead dies early by the sum.
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
        if (live > 0) {
            progress.accept("reading the region servers' clocks from their reports to the master");
            out.add(serverClocks(admin, options.serverClockSkew()));
        }
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
        Duration cellTtl = LockTable.cellTtl(expiry, options.serverClockSkew());
        if (claimsTtl != HConstants.FOREVER && Duration.ofSeconds(claimsTtl).compareTo(cellTtl) <= 0) {
            out.add(Finding.fail("claims-ttl", "the claims family's TTL (" + claimsTtl + " s) is not longer than the "
                    + "expiry plus the region servers' clock allowance (" + expiry.toSeconds() + " s + "
                    + options.serverClockSkew().toSeconds() + " s): held claims would vanish, and lockers refuse to open",
                    "alter '" + name + "', {NAME => '" + options.family() + "', TTL => " + Math.max(604800,
                    cellTtl.toSeconds() * 2) + "}"));
        } else {
            out.add(Finding.ok("claims-ttl", "the claims family's TTL (" + (claimsTtl == HConstants.FOREVER ? "none"
                    : claimsTtl + " s") + ") outlasts a claim's cell TTL (expiry " + expiry.toSeconds() + " s + clock "
                    + "allowance " + options.serverClockSkew().toSeconds() + " s), which judges expiry on the region "
                    + "server's clock"));
        }
        int tokenTtl = tokens.getTimeToLive();
        if (tokenTtl != HConstants.FOREVER) {
            out.add(Finding.fail("token-ttl", "the token family has a TTL (" + tokenTtl + " s): fencing counters would "
                    + "restart and a later holder could get a lower token; lockers refuse to open",
                    "alter '" + name + "', {NAME => '" + options.tokenFamily() + "', TTL => 'FOREVER'}"));
        } else {
            out.add(Finding.ok("token-ttl", "the token family has no TTL: fencing tokens only grow"));
        }
        out.add(layout(d));
        out.add(Finding.ok("new-version-behavior", "claims family NEW_VERSION_BEHAVIOR="
                + claims.isNewVersionBehavior() + ": not needed by the hbase:// locker, which never deletes its holder "
                + "cell (tables of the key-column-value adapter need it: HBaseKeyColumnValueStore)"));
        return out;
    }

    /**
     * The table's layout ({@link HBaseLayout}): OK on the current one. On the previous one, a warning with the command
     * to switch, once every locker of the table runs this build; an unknown one fails, as lockers refuse the table.
     */
    static Finding layout(TableDescriptor d) {
        HBaseLayout.State s = HBaseLayout.state(d);
        String shown = "table " + s.table() + " is on layout " + s.layout() + ": " + s.description();
        if (!s.known()) {
            return Finding.fail("layout", shown, "upgrade every locker of the table to the build that wrote "
                    + TableLayout.KEY + "='" + s.layout() + "'");
        }
        if (s.isCurrent()) {
            return Finding.ok("layout", shown);
        }
        return Finding.warn("layout", shown + " (lockers of earlier builds can read it; a grant costs two checked "
                + "cells)", "once every locker of the table runs this build: locker hbase-layout --uri URI --finalize "
                + "(or in the hbase shell: alter '" + s.table() + "', METADATA => {'" + TableLayout.KEY + "' => '"
                + HBaseLayout.CURRENT + "'}); open lockers switch when they next open the table");
    }

    /**
     * The live region servers' clocks, read from the reports they send the master: each report carries its region
     * server's clock at the end of the report ({@code ServerMetrics.getReportTimestamp()}), which is the clock that
     * stamps cells and judges their TTL. One reading of a server's clock against ours is a lower bound (the report
     * aged before we read it); polling the master for two report intervals catches a fresh report of every server, so
     * the highest bound seen is within about one poll of the truth. A server that sent no report while we polled is not
     * judged (its old report would read as a clock behind), only named in a warning.
     *
     * <p>What safety needs ({@link HBaseOptions#serverClockSkew()}): every region server within half the allowance of
     * true time for a claim's whole life, since a claim stamped by a clock behind and judged (after a step, or on
     * another server) by a clock ahead dies early by the sum of the two. This host's clock stands for true time. So:
     * region servers further apart than the whole allowance fail (no time is within half of each); with several
     * servers, one further than half the allowance from this host's clock fails too (a region moves between them); a
     * lone server further than half behind fails (its correction forward expires claims early), ahead it is a warning
     * (its correction back only prolongs claims, but it tells of clocks not kept in sync).
     */
    static Finding serverClocks(Admin admin, Duration allowance) throws IOException {
        Map<String, Long> aheadOfUs = new TreeMap<>();
        Map<String, Long> firstReport = new TreeMap<>();
        Set<String> reportedDuring = new TreeSet<>();
        long interval = 0;
        long pollStart = System.nanoTime();
        long worstGapNanos = 0;
        long lastSampleNanos = pollStart;
        while (true) {
            long asked = System.nanoTime();
            ClusterMetrics m = admin.getClusterMetrics(EnumSet.of(ClusterMetrics.Option.LIVE_SERVERS));
            long now = System.currentTimeMillis();
            long answered = System.nanoTime();
            worstGapNanos = Math.max(worstGapNanos, answered - lastSampleNanos);
            lastSampleNanos = asked;
            for (var e : m.getLiveServerMetrics().entrySet()) {
                long reported = e.getValue().getReportTimestamp();
                if (reported <= 0) {
                    continue;
                }
                long last = e.getValue().getLastReportTimestamp();
                if (last > 0 && reported > last) {
                    interval = Math.max(interval, Math.min(reported - last, 5_000));
                }
                String server = e.getKey().getServerName();
                if (firstReport.putIfAbsent(server, reported) != null && firstReport.get(server) != reported) {
                    reportedDuring.add(server); // a report made during the check: its clock reading is fresh
                }
                aheadOfUs.merge(server, reported - now, Math::max);
            }
            // two report intervals (a report can be late), at least one second
            long pollFor = TimeUnit.MILLISECONDS.toNanos(Math.max(1_000, 2 * (interval == 0 ? 3_000 : interval) + 200));
            if (answered - pollStart >= pollFor) {
                break;
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new InterruptedIOException("interrupted while reading the region servers' clocks");
            }
        }
        // a server that sent no report during the check shows an old report, which reads as a clock behind: not judged
        Set<String> late = new TreeSet<>(aheadOfUs.keySet());
        late.removeAll(reportedDuring);
        aheadOfUs.keySet().retainAll(reportedDuring);
        if (aheadOfUs.isEmpty() && !late.isEmpty()) {
            return Finding.warn("server-clocks", late.size() + " region server(s) sent the master no report during the "
                    + "check (" + String.join(", ", late) + "): their clocks were not judged", "run the doctor again");
        }
        if (aheadOfUs.isEmpty()) {
            return Finding.warn("server-clocks", "no region server has reported to the master yet: their clocks were not "
                    + "checked", "run the doctor again once the region servers are up");
        }
        long error = TimeUnit.NANOSECONDS.toMillis(worstGapNanos) + 100;
        long max = Collections.max(aheadOfUs.values());
        long min = Collections.min(aheadOfUs.values());
        long spread = max - min;
        long farthest = Math.max(Math.abs(max), Math.abs(min));
        boolean several = aheadOfUs.size() > 1;
        String seen = aheadOfUs.size() + " region server clock(s), measured from their reports to the master to within "
                + "~" + error + " ms: " + (several ? "spread " + spread + " ms, " : "")
                + "against this client's clock " + signed(min) + (min == max ? "" : ".." + signed(max)) + " ms";
        long allowed = allowance.toMillis();
        long half = allowed / 2;
        String condition = "safety needs every region server within serverClockSkew/2=" + half + "ms of true time for "
                + "a claim's whole life (a claim stamped by a clock behind and judged by one ahead dies early by the sum)";
        String fix = "keep the region servers' clocks in sync (NTP or chrony), or raise serverClockSkew to at least "
                + "twice the largest distance";
        if (several && spread > allowed + error) {
            return Finding.fail("server-clocks", seen + ": further apart than serverClockSkew=" + allowed + "ms, so no "
                    + "time is within half of it from each; " + condition, fix);
        }
        if (several && farthest > half + error) {
            return Finding.fail("server-clocks", seen + ": one is further than serverClockSkew/2 from this host's clock, "
                    + "which stands for true time (if this host's clock is the one off, run the doctor from a host kept "
                    + "in sync); " + condition, fix);
        }
        if (!several && -min > half + error) {
            return Finding.fail("server-clocks", seen + ": behind this host's clock by more than serverClockSkew/2, so "
                    + "its correction forward would expire claims early (if this host's clock is the one off, run the "
                    + "doctor from a host kept in sync); " + condition, fix);
        }
        if (allowed == 0 && several) {
            return Finding.warn("server-clocks", seen + ", and serverClockSkew=0: a region moving between servers "
                    + "expires claims early by their clocks' difference", "set serverClockSkew (default 10s)");
        }
        if (farthest > Math.max(half, 1_000) + error) {
            return Finding.warn("server-clocks", seen + ": the deployment's clocks are not kept in sync (" + condition
                    + ")", "keep every host's clock in sync (NTP or chrony)");
        }
        if (!late.isEmpty()) {
            return Finding.warn("server-clocks", seen + "; " + late.size() + " other region server(s) sent the master no "
                    + "report during the check (" + String.join(", ", late) + "): not judged", "run the doctor again");
        }
        return Finding.ok("server-clocks", seen + ", within serverClockSkew/2=" + half + "ms of this host's clock");
    }

    private static String signed(long millis) {
        return millis > 0 ? "+" + millis : Long.toString(millis);
    }
}
