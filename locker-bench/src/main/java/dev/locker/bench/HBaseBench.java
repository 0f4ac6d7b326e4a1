package dev.locker.bench;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockerConfig;
import dev.locker.bench.Table.Better;
import dev.locker.bench.Table.Row;
import dev.locker.hbase.HBaseLocker;
import dev.locker.hbase.HBaseOptions;
import dev.locker.hbase.HBaseTestCluster;
import org.apache.hadoop.hbase.HBaseTestingUtility;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.CheckAndMutate;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Delete;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.util.Bytes;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The HBase rows: the real HBase 2.6 mini cluster (master, region server and ZooKeeper in this JVM, data in a
 * temporary directory), started once for the section, with {@link HBaseLocker} against a raw checkAndMutate floor.
 */
final class HBaseBench implements AutoCloseable {

    private static final byte[] RAW_FAMILY = Bytes.toBytes("f");
    private static final byte[] RAW_COLUMN = Bytes.toBytes("o");

    private final Path dir;
    private final HBaseTestingUtility util;
    private final Connection connection;

    private HBaseBench() throws Exception {
        long t0 = System.nanoTime();
        dir = Files.createTempDirectory("locker-bench-hbase");
        System.setProperty("test.build.data.basedirectory", dir.toString());
        util = HBaseTestCluster.startMiniCluster(); // locker-hbase's test harness settings
        connection = ConnectionFactory.createConnection(util.getConfiguration());
        System.out.printf(Locale.ROOT, "HBase %s mini cluster up in %.1f s%n",
                org.apache.hadoop.hbase.util.VersionInfo.getVersion(), (System.nanoTime() - t0) / 1e9);
    }

    /** The HBase section: uncontended pairs against the floors, then the same with many locks held. */
    static void run(Run run) throws Exception {
        // more, shorter rounds than elsewhere: a round trip to the in-JVM mini cluster is mostly CPU and thread
        // switches, so its rates swing with the load of the machine, and the median needs more rounds to settle
        boolean quick = run.quick();
        int hbaseRounds = quick ? 5 : 7;
        Duration hbaseSlice = Duration.ofMillis(quick ? 500 : 1500);
        try (HBaseBench hbase = HBaseBench.start()) {
            hbase.uncontended(run.table(), hbaseRounds, hbaseSlice, Duration.ofSeconds(quick ? 5 : 10),
                    quick ? 500 : 1000);
            hbase.held(run.table(), quick ? new int[]{1, 2_000} : new int[]{1, 10_000, 30_000}, hbaseSlice,
                    hbaseRounds);
        }
    }

    static HBaseBench start() throws Exception {
        return new HBaseBench();
    }

    Connection connection() {
        return connection;
    }

    // ---- contenders ---------------------------------------------------------------------------------------------

    /** Locker's HBaseLocker: one checkAndMutate per grant (claim + fencing token), one per release. */
    private HBaseLocker locker(String table, Duration expiry) {
        return locker(connection, table, expiry);
    }

    private static HBaseLocker locker(Connection connection, String table, Duration expiry) {
        return HBaseLocker.builder(connection)
                .options(HBaseOptions.builder().table(table).ttl(Duration.ofHours(2)).build())
                .config(LockerConfig.builder().expiry(expiry).build())
                .build();
    }

    private static void pair(HBaseLocker locker, KeyColumn lock) {
        try (Lease lease = locker.acquire(lock, "bench")) {
            if (lease.fencingToken() <= 0) {
                throw new IllegalStateException("no token");
            }
        }
    }

    /**
     * The floors: what a hand-written HBase lock does, one cell holding a unique owner token, on one {@code Table}
     * kept for the thread; no fencing token, no expiry, no holder metadata.
     * <ul>
     *   <li>{@code delete}: put-if-absent ({@code checkAndMutate ifNotExists -> Put}), then compare-and-delete
     *       ({@code checkAndMutate ifEquals -> Delete}). Unsafe on a busy lock: a Delete's marker hides a Put of the
     *       same millisecond, so the next acquire's cell is invisible (to its release, and to every other
     *       contender); its releases that found the cell gone are counted.</li>
     *   <li>{@code clear}: put-if-empty ({@code checkAndMutate ifEquals empty -> Put}, which also matches an absent
     *       cell), then compare-and-clear ({@code checkAndMutate ifEquals -> Put empty}): the same two round trips
     *       without a delete marker, and safe (what HBaseLocker does, less the fencing counter and the TTL).</li>
     * </ul>
     */
    private final class Raw implements AutoCloseable {
        private static final byte[] EMPTY = new byte[0];
        private final org.apache.hadoop.hbase.client.Table table;
        private final boolean delete;
        private final AtomicLong tokens = new AtomicLong();
        private final AtomicLong lost = new AtomicLong();
        private final String instance = Long.toHexString(System.nanoTime());

        Raw(TableName name, boolean delete) throws IOException {
            this(connection, name, delete);
        }

        Raw(Connection connection, TableName name, boolean delete) throws IOException {
            this.table = connection.getTable(name);
            this.delete = delete;
        }

        byte[] acquire(byte[] row) throws IOException {
            byte[] token = Bytes.toBytes(instance + ":" + tokens.incrementAndGet());
            CheckAndMutate.Builder check = CheckAndMutate.newBuilder(row);
            check = delete ? check.ifNotExists(RAW_FAMILY, RAW_COLUMN) : check.ifEquals(RAW_FAMILY, RAW_COLUMN, EMPTY);
            if (!table.checkAndMutate(check.build(new Put(row).addColumn(RAW_FAMILY, RAW_COLUMN, token))).isSuccess()) {
                throw new IllegalStateException("raw lock " + Bytes.toString(row) + " is held");
            }
            return token;
        }

        void release(byte[] row, byte[] token) throws IOException {
            CheckAndMutate.Builder check = CheckAndMutate.newBuilder(row).ifEquals(RAW_FAMILY, RAW_COLUMN, token);
            boolean ok = table.checkAndMutate(delete ? check.build(new Delete(row).addColumns(RAW_FAMILY, RAW_COLUMN))
                    : check.build(new Put(row).addColumn(RAW_FAMILY, RAW_COLUMN, EMPTY))).isSuccess();
            if (!ok && delete) {
                lost.incrementAndGet(); // our Put was hidden by the previous release's Delete marker
            } else if (!ok) {
                throw new IllegalStateException("raw lock " + Bytes.toString(row) + " was lost");
            }
        }

        void pair(byte[] row) {
            try {
                release(row, acquire(row));
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        }

        @Override
        public void close() throws IOException {
            table.close();
        }
    }

    private TableName rawTable(String name) throws IOException {
        TableName t = TableName.valueOf(name);
        try (Admin admin = connection.getAdmin()) {
            if (!admin.tableExists(t)) {
                admin.createTable(TableDescriptorBuilder.newBuilder(t).setColumnFamily(ColumnFamilyDescriptorBuilder
                        .newBuilder(RAW_FAMILY).setMaxVersions(1).setInMemory(true).build()).build());
            }
        }
        return t;
    }

    // ---- workloads ----------------------------------------------------------------------------------------------

    /**
     * Uncontended acquire+release, 1 thread, Locker against both floors, rounds interleaved, after a warm-up of
     * {@code warmUp} (the region server's code is compiled while the cluster is fresh).
     */
    void uncontended(Table out, int rounds, Duration slice, Duration warmUp, int cpuOps) throws Exception {
        try (HBaseLocker ours = locker("bench_locks", Duration.ofSeconds(60));
             Raw clear = new Raw(rawTable("bench_raw"), false);
             Raw delete = new Raw(rawTable("bench_raw"), true)) {
            // every measured slice on fresh rows: a hot row piles up one version per write in the memstore (only a
            // flush or a compaction keeps just the newest), and each read of the row walks past them, so a slice on
            // an old row would pay for the writes of the slices before it
            Rows rows = new Rows(4 * rounds * 2 + 4);
            Map<String, Runnable> ops = new LinkedHashMap<>();
            ops.put("locker", () -> pair(ours, rows.lock("u")));
            ops.put("three-phase", () -> Bench.threePhases(ours, rows.lock("t")));
            ops.put("clear", () -> clear.pair(rows.row("c")));
            ops.put("delete", () -> delete.pair(rows.row("d")));
            long end = System.nanoTime() + warmUp.toNanos();
            while (System.nanoTime() - end < 0) {
                for (Runnable op : ops.values()) {
                    for (int i = 0; i < 100; i++) {
                        op.run();
                    }
                }
            }
            long lost0 = delete.lost.get();
            long pairs0 = delete.tokens.get();
            Map<String, Samples> rates = interleaved(ops, rounds, slice, rows::next);
            Map<String, Samples> allocated = new LinkedHashMap<>();
            Map<String, Samples> cpu = cpuPerOp(ops, rounds, cpuOps, rows::next, allocated);
            long lost = delete.lost.get() - lost0;
            long pairs = delete.tokens.get() - pairs0;
            System.out.printf(Locale.ROOT, "    raw put-if-absent + checkAndDelete: %d of %d releases (%.0f%%) found "
                    + "their cell hidden by the previous release's delete marker%n", lost, pairs, 100.0 * lost / pairs);
            String w = "HBase acquire+release, 1 thread (mini cluster)";
            out.add(new Row(w, "pairs/s", rates.get("locker"),
                    "raw put-if-empty + compare-and-clear (checkAndMutate x2)", rates.get("clear"), Better.HIGHER, 0.85,
                    false));
            out.add(new Row(w, "pairs/s", rates.get("locker"),
                    "raw put-if-absent + checkAndDelete (unsafe: " + Math.round(100.0 * lost / pairs) + "% hidden)",
                    rates.get("delete"), Better.HIGHER, 0.85, false));
            out.add(new Row("HBase writeLock+checkLocks+deleteLocks (no lease, no keep-alive), 1 thread", "pairs/s",
                    rates.get("three-phase"), "raw put-if-empty + compare-and-clear", rates.get("clear"),
                    Better.HIGHER, 0.85, false));
            // steadier than a rate on a shared machine: what a pair costs the client and the region server together
            out.add(new Row("HBase CPU per acquire+release (client + mini cluster, one JVM), 1 thread", "us",
                    cpu.get("locker"), "raw put-if-empty + compare-and-clear", cpu.get("clear"), Better.LOWER,
                    1 / 0.85, false));
            out.add(new Row("HBase CPU per writeLock+checkLocks+deleteLocks (no lease), 1 thread", "us",
                    cpu.get("three-phase"), "raw put-if-empty + compare-and-clear", cpu.get("clear"), Better.LOWER,
                    1 / 0.85, false));
            // steadier still on a loaded machine: bytes follow the work done, not how the CPUs were shared out
            out.add(new Row("HBase allocation per acquire+release (client + mini cluster, all threads), 1 thread",
                    "KB", allocated.get("locker"), "raw put-if-empty + compare-and-clear", allocated.get("clear"),
                    Better.LOWER, null, false));
            out.add(new Row("HBase allocation per writeLock+checkLocks+deleteLocks (no lease), 1 thread", "KB",
                    allocated.get("three-phase"), "raw put-if-empty + compare-and-clear", allocated.get("clear"),
                    Better.LOWER, null, false));
        }
        rpcs(out);
    }

    /**
     * Round trips per pair by kind, counted by the HBase client's own metrics on a connection of their own (so that
     * the timed rows above pay nothing for them). They do not depend on the load of the machine.
     */
    private void rpcs(Table out) throws Exception {
        org.apache.hadoop.conf.Configuration conf = new org.apache.hadoop.conf.Configuration(util.getConfiguration());
        conf.setBoolean(org.apache.hadoop.hbase.client.MetricsConnection.CLIENT_SIDE_METRICS_ENABLED_KEY, true);
        try (Connection counted = ConnectionFactory.createConnection(conf);
             HBaseLocker ours = locker(counted, "bench_locks", Duration.ofSeconds(60));
             Raw clear = new Raw(counted, rawTable("bench_raw"), false)) {
            org.apache.hadoop.hbase.client.MetricsConnection metrics =
                    ((org.apache.hadoop.hbase.client.ConnectionImplementation) counted).getConnectionMetrics();
            Rows rows = new Rows(1);
            Map<String, Runnable> ops = new LinkedHashMap<>();
            ops.put("locker", () -> pair(ours, rows.lock("rpc-u")));
            ops.put("three-phase", () -> Bench.threePhases(ours, rows.lock("rpc-t")));
            ops.put("clear", () -> clear.pair(rows.row("rpc-c")));
            int n = 200;
            Map<String, Samples> total = new LinkedHashMap<>();
            for (Map.Entry<String, Runnable> op : ops.entrySet()) {
                op.getValue().run(); // the first pair on a row reads it once: the steady state is what follows
                Map<String, Long> before = rpcCounts(metrics);
                for (int i = 0; i < n; i++) {
                    op.getValue().run();
                }
                Map<String, Long> after = rpcCounts(metrics);
                StringBuilder kinds = new StringBuilder();
                long sum = 0;
                for (Map.Entry<String, Long> e : after.entrySet()) {
                    long d = e.getValue() - before.getOrDefault(e.getKey(), 0L);
                    if (d > 0) {
                        sum += d;
                        kinds.append(String.format(Locale.ROOT, " %s %.2f", e.getKey(), (double) d / n));
                    }
                }
                System.out.printf(Locale.ROOT, "    HBase RPCs per pair, %s:%s%n", op.getKey(), kinds);
                Samples s = new Samples();
                s.add((double) sum / n);
                total.put(op.getKey(), s);
            }
            out.add(new Row("HBase RPCs per acquire+release (the client's counters), 1 thread", "RPCs",
                    total.get("locker"), "raw put-if-empty + compare-and-clear", total.get("clear"), Better.LOWER,
                    null, false));
            out.add(new Row("HBase RPCs per writeLock+checkLocks+deleteLocks (no lease), 1 thread", "RPCs",
                    total.get("three-phase"), "raw put-if-empty + compare-and-clear", total.get("clear"),
                    Better.LOWER, null, false));
        }
    }

    /** The client's RPC counts so far, by method ("Mutate", "Multi", "Get"), on every service. */
    private static Map<String, Long> rpcCounts(org.apache.hadoop.hbase.client.MetricsConnection metrics) {
        Map<String, Long> counts = new java.util.TreeMap<>();
        metrics.getRpcCounters().forEach((name, c) -> {
            if (name.startsWith("rpcCount_")) {
                counts.put(name.substring("rpcCount_".length()), c.getCount());
            }
        });
        return counts;
    }

    /**
     * Microseconds of this JVM's CPU time (every thread: the client's and the mini cluster's) per call, over
     * {@code n} calls per round, rounds interleaved; the kilobytes allocated per call, on every thread, go to
     * {@code allocated}.
     */
    private static Map<String, Samples> cpuPerOp(Map<String, Runnable> ops, int rounds, int n, Runnable beforeEach,
                                                 Map<String, Samples> allocated) {
        com.sun.management.OperatingSystemMXBean os = (com.sun.management.OperatingSystemMXBean)
                java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean)
                java.lang.management.ManagementFactory.getThreadMXBean();
        Map<String, Samples> cpu = new LinkedHashMap<>();
        List<String> names = new ArrayList<>(ops.keySet());
        for (int r = 0; r < rounds; r++) {
            for (int k = 0; k < names.size(); k++) {
                String name = names.get((k + r) % names.size());
                Runnable op = ops.get(name);
                beforeEach.run();
                long a0 = allocatedByAll(threads);
                long c0 = os.getProcessCpuTime();
                for (int i = 0; i < n; i++) {
                    op.run();
                }
                cpu.computeIfAbsent(name, x -> new Samples()).add((os.getProcessCpuTime() - c0) / (n * 1000.0));
                allocated.computeIfAbsent(name, x -> new Samples()).add((allocatedByAll(threads) - a0) / (n * 1024.0));
            }
        }
        return cpu;
    }

    /** Bytes allocated so far by the live threads of this JVM: the client's, the mini cluster's. */
    private static long allocatedByAll(com.sun.management.ThreadMXBean threads) {
        long sum = 0;
        for (long b : threads.getThreadAllocatedBytes(threads.getAllThreadIds())) {
            sum += Math.max(0, b);
        }
        return sum;
    }

    /**
     * Time per acquire+release while N other locks are held (Locker's, and as many raw cells for the floor), from 1
     * to {@code steps}' last, against the same with 1 held.
     */
    void held(Table out, int[] steps, Duration slice, int rounds) throws Exception {
        try (HBaseLocker ours = locker("bench_held", Duration.ofSeconds(60));
             HBaseLocker holder = locker("bench_held", Duration.ofHours(1));
             Raw raw = new Raw(rawTable("bench_held_raw"), false)) {
            Rows rows = new Rows(steps.length * (2 * rounds + 2) + 2);
            Map<String, Runnable> ops = new LinkedHashMap<>();
            ops.put("locker", () -> pair(ours, rows.lock("probe")));
            ops.put("raw", () -> raw.pair(rows.row("probe")));
            List<Lease> kept = new ArrayList<>();
            int held = 0;
            Map<String, Samples> base = null;
            for (int n : steps) {
                long t0 = System.nanoTime();
                holdMore(holder, raw, kept, held, n);
                double seconds = (System.nanoTime() - t0) / 1e9;
                int more = n - held;
                held = n;
                Map<String, Samples> rates = interleaved(ops, rounds, slice, rows::next);
                System.out.printf(Locale.ROOT, "    HBase with %d held (%.1f s to take %d more): Locker %.0f pairs/s, "
                        + "raw %.0f pairs/s%n", n, seconds, more, rates.get("locker").median(),
                        rates.get("raw").median());
                if (base == null) {
                    base = rates;
                    continue;
                }
                String nHeld = n >= 1000 ? (n / 1000) + "k" : Integer.toString(n);
                out.add(new Row("HBase time per pair with " + nHeld + " held ÷ with 1 held (1 thread)", "x",
                        slowdown(base.get("locker"), rates.get("locker")), "raw put-if-empty + compare-and-clear",
                        slowdown(base.get("raw"), rates.get("raw")), Better.LOWER, 1.2, true));
            }
            for (Lease l : kept) {
                l.close();
            }
        }
    }

    /** Takes locks {@code from}..{@code to}-1 with 8 threads: a Locker lease and a raw cell each. */
    private static void holdMore(HBaseLocker holder, Raw raw, List<Lease> kept, int from, int to) throws Exception {
        Lease[] got = new Lease[to - from];
        AtomicInteger next = new AtomicInteger(from);
        List<Thread> ts = new ArrayList<>();
        List<Throwable> failures = java.util.Collections.synchronizedList(new ArrayList<>());
        for (int t = 0; t < 8; t++) {
            Thread th = new Thread(() -> {
                try {
                    for (int i; (i = next.getAndIncrement()) < to; ) {
                        got[i - from] = holder.acquire(KeyColumn.named("held-" + i), "bench");
                        raw.acquire(("held-" + i).getBytes(StandardCharsets.US_ASCII));
                    }
                } catch (Throwable e) {
                    failures.add(e);
                }
            });
            th.start();
            ts.add(th);
        }
        for (Thread t : ts) {
            t.join();
        }
        if (!failures.isEmpty()) {
            throw new IllegalStateException("holding HBase locks failed", failures.get(0));
        }
        kept.addAll(List.of(got));
    }

    /** Lock names and raw rows per measured slice ({@link #next} moves on to fresh ones). */
    private static final class Rows {
        private final Map<String, KeyColumn[]> locks = new LinkedHashMap<>();
        private final Map<String, byte[][]> rows = new LinkedHashMap<>();
        private final int slots;
        private int slot;

        Rows(int slots) {
            this.slots = slots;
        }

        void next() {
            slot = (slot + 1) % slots;
        }

        KeyColumn lock(String prefix) {
            return locks.computeIfAbsent(prefix, p -> {
                KeyColumn[] a = new KeyColumn[slots];
                for (int i = 0; i < slots; i++) {
                    a[i] = KeyColumn.named(p + "-" + i);
                }
                return a;
            })[slot];
        }

        byte[] row(String prefix) {
            return rows.computeIfAbsent(prefix, p -> {
                byte[][] a = new byte[slots][];
                for (int i = 0; i < slots; i++) {
                    a[i] = Bytes.toBytes("raw-" + p + "-" + i);
                }
                return a;
            })[slot];
        }
    }

    /** Per-round time ratios (rate with 1 held ÷ rate with N held), paired by round. */
    private static Samples slowdown(Samples base, Samples now) {
        return Samples.ratios(base, now);
    }

    /** Runs each operation for {@code slice} per round, rounds interleaved (a different order each round). */
    static Map<String, Samples> interleaved(Map<String, Runnable> given, int rounds, Duration slice) throws Exception {
        return interleaved(given, rounds, slice, () -> { });
    }

    /** As above, running {@code beforeEach} before every measured slice. */
    static Map<String, Samples> interleaved(Map<String, Runnable> given, int rounds, Duration slice,
                                            Runnable beforeEach) throws Exception {
        Map<String, Runnable> ops = new LinkedHashMap<>();
        given.forEach((name, op) -> ops.put(name, () -> {
            try {
                op.run();
            } catch (RuntimeException e) {
                throw new IllegalStateException(name + ": " + e.getMessage(), e);
            }
        }));
        Map<String, Samples> rates = new LinkedHashMap<>();
        for (Map.Entry<String, Runnable> e : ops.entrySet()) {
            rates.put(e.getKey(), new Samples());
            Bench.rate(1, slice, t -> i -> e.getValue().run()); // warm-up
        }
        List<String> names = new ArrayList<>(ops.keySet());
        for (int r = 0; r < rounds; r++) {
            for (int k = 0; k < names.size(); k++) {
                String name = names.get((k + r) % names.size());
                beforeEach.run();
                rates.get(name).add(Bench.rate(1, slice, t -> i -> ops.get(name).run()));
            }
        }
        return rates;
    }

    @Override
    public void close() throws Exception {
        try {
            connection.close();
            util.shutdownMiniCluster();
        } finally {
            Bench.deleteTree(dir);
        }
    }
}
