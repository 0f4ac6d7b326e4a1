package dev.locker.bench;

import com.mongodb.MongoWriteException;
import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import com.mongodb.client.MongoCollection;
import com.mongodb.client.model.Filters;
import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.backend.memory.MemoryBackend;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockerConfig;
import dev.locker.api.TemporaryLockingException;
import dev.locker.bench.Table.Better;
import dev.locker.bench.Table.Row;
import dev.locker.mongo.MongoLocker;
import dev.locker.testkit.RedisServer;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.provider.mongo.MongoLockProvider;
import org.bson.Document;
import redis.clients.jedis.Jedis;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Date;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

/**
 * Runs every workload, each against its baselines measured in the same run with the rounds interleaved, and prints one
 * table (markdown) of medians, spreads and ratios. {@code --quick} for a couple of minutes, the default for the full
 * run (about 22 minutes on a 2-CPU host); {@code --only=redis,handoff,held,alloc,mongo,hbase,janusgraph,mediator,metrics} picks
 * sections.
 */
public final class BenchMain {

    private final boolean quick;
    private final Set<String> only;
    private final Table table = new Table();
    private final int rounds;
    private final Duration slice;

    private BenchMain(boolean quick, Set<String> only) {
        this.quick = quick;
        this.only = only;
        this.rounds = quick ? 3 : 5;
        this.slice = Duration.ofMillis(quick ? 700 : 2000);
    }

    public static void main(String[] args) throws Exception {
        boolean quick = false;
        Set<String> only = new TreeSet<>();
        for (String a : args) {
            if (a.equals("--quick")) {
                quick = true;
            } else if (a.startsWith("--only=")) {
                only.addAll(Arrays.asList(a.substring(7).split(",")));
            } else {
                throw new IllegalArgumentException("usage: bench/run [--quick] [--only=redis,alloc,held,handoff,servercost,"
                        + "mongo,hbase,janusgraph,mediator,metrics]; unknown argument " + a);
            }
        }
        new BenchMain(quick, only).run();
    }

    private boolean wants(String section) {
        return only.isEmpty() || only.contains(section);
    }

    private void run() throws Exception {
        long t0 = System.nanoTime();
        System.out.println("Locker benchmarks, " + (quick ? "quick" : "full") + " run, " + LocalDateTime.now()
                + "; " + Runtime.getRuntime().availableProcessors() + " CPUs, Java " + System.getProperty("java.version")
                + ", " + System.getProperty("os.name") + " " + System.getProperty("os.arch") + "; load average at start "
                + loadAverage());
        boolean redisRows = wants("redis") || wants("metrics") || wants("alloc") || wants("handoff") || wants("held");
        // the Redis server starts first: Locker's restart guard (on, as long as the 60 s expiry) refuses grants on a
        // fresh server for a minute, which the in-JVM sections use instead of waiting for it
        try (RedisServer redis = redisRows ? RedisServer.start() : null) {
            if (wants("mediator")) {
                section("mediator", this::mediator);
            }
            if (wants("metrics")) {
                section("metrics (mem:)",
                        () -> metrics("mem:bench-metrics?protocol=wait-and-read-back&expiry=60s&lockWait=1ms",
                                "mem: (lockWait=1ms)"));
            }
            if (redisRows) {
                int port = redis.port();
                System.out.println("redis-server " + redisVersion(port) + " on port " + port);
                awaitGrants(port);
                if (wants("redis")) {
                    section("redis", () -> uncontended(port));
                }
                if (wants("metrics")) {
                    section("metrics (Redis)", () -> metrics("redis://127.0.0.1:" + port + "?expiry=60s", "Redis"));
                }
                if (wants("alloc")) {
                    section("alloc", () -> allocation(port));
                }
                if (wants("handoff")) {
                    section("handoff", () -> handoff(port));
                }
                if (wants("held")) {
                    section("held", () -> held(port));
                }
            }
        }
        if (wants("servercost")) {
            section("servercost", () -> ServerCost.run(table, quick));
        }
        if (wants("mongo")) {
            section("mongo", this::mongo);
        }
        if (wants("hbase")) {
            section("hbase", this::hbase);
        }
        if (wants("janusgraph")) {
            section("janusgraph", () -> new JanusGraphBench(quick, rounds, slice).run(table));
        }
        System.out.println();
        System.out.println(table.render());
        System.out.printf(Locale.ROOT, "%d rounds per row unless noted; run took %.0f s; load average at end %s%n",
                rounds, (System.nanoTime() - t0) / 1e9, loadAverage());
    }

    /** One section of the run, and how long it took (the full run has a budget: where the time goes). */
    private interface Section {
        void run() throws Exception;
    }

    private static void section(String name, Section body) throws Exception {
        long t0 = System.nanoTime();
        body.run();
        System.out.printf(Locale.ROOT, "  (section %s took %.0f s)%n", name, (System.nanoTime() - t0) / 1e9);
    }

    // ---- in-JVM: the mediator against a bare map (paired blocks in forked JVMs) -------------------------------------

    /**
     * Forks: each round starts a fresh JVM per thread count that runs every contender paired ({@link
     * MediatorBench#paired}: short blocks alternating between the contenders in one JVM, so that the JIT's choices and
     * the machine's load fall on both sides alike); each fork gives one sample per contender, so a row's spread is
     * the spread between forks. Default JVM flags (G1, as users run it): the record's allocation is part of the cost.
     */
    private void mediator() throws Exception {
        int forks = quick ? 2 : 5;
        long warmupMs = quick ? 1500 : 2500;
        long measureMs = quick ? 1500 : 3000;
        for (int threads : new int[]{1, 2}) {
            Map<String, Samples> byName = new LinkedHashMap<>();
            for (String n : MediatorBench.SIDES) {
                byName.put(n, new Samples());
            }
            for (int fork = 0; fork < forks; fork++) {
                List<String> cmd = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                        "-cp", System.getProperty("java.class.path"), "-Xmx1g", MediatorBench.class.getName(),
                        Integer.toString(threads), Long.toString(warmupMs), Long.toString(measureMs));
                Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
                try (BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(),
                        StandardCharsets.US_ASCII))) {
                    for (String line; (line = in.readLine()) != null; ) {
                        String[] f = line.split(" ");
                        byName.get(f[0]).add(Double.parseDouble(f[1]));
                    }
                }
                if (p.waitFor() != 0) {
                    throw new IllegalStateException("the mediator fork failed: " + cmd);
                }
            }
            String t = threads + " thread" + (threads > 1 ? "s" : "");
            String how = forks + " forks of paired blocks; time per pair";
            table.add(new Row("LocalLockMediator take+release, " + t + " (" + how
                    + "; the lock's record made beforehand, as the map's value)", "ns", byName.get("mediatorOnly"),
                    "bare ConcurrentHashMap putIfAbsent+remove", byName.get("bareMapOnly"), Better.LOWER, 1 / 0.9,
                    false));
            table.add(new Row("the same with the record made per pair (a new hold, 96 B), " + t, "ns",
                    byName.get("mediator"), "bare ConcurrentHashMap, a new Object per pair", byName.get("bareMap"),
                    Better.LOWER, 1 / 0.9, false));
            table.add(new Row("the same as an acquire pays it, " + t + " (+ the hold's clock reading and state change)",
                    "ns", byName.get("acquirePath"), "bare ConcurrentHashMap, a new Object per pair",
                    byName.get("bareMap"), Better.LOWER, 1 / 0.9, false)); // the row the first published figures measured, so runs compare
        }
    }

    // ---- the cost of metrics ----------------------------------------------------------------------------------------

    /**
     * Uncontended acquire+release on one backend, with {@code LockerMetrics} installed against without: the cost of
     * the meters on the lock path, which must stay off its critical cost. Two lockers on one backend,
     * rounds interleaved. On {@code mem:} there is no I/O, so the row shows the meters' CPU cost at its largest.
     */
    private void metrics(String uri, String backend) throws Exception {
        io.micrometer.core.instrument.simple.SimpleMeterRegistry registry = new io.micrometer.core.instrument.simple.SimpleMeterRegistry();
        dev.locker.micrometer.LockerMetrics meters = dev.locker.micrometer.LockerMetrics.builder(registry)
                .backend(backend).lockNamePrefixes("m-").build();
        try (dev.locker.api.Locker plain = dev.locker.api.Lockers.open(uri, LockerConfig.builder().build());
             dev.locker.api.Locker metered = dev.locker.api.Lockers.open(uri, LockerConfig.builder().probe(meters).build())) {
            List<dev.locker.api.Locker> both = List.of(metered, plain);
            Map<dev.locker.api.Locker, Samples> rates = new LinkedHashMap<>();
            for (dev.locker.api.Locker l : both) {
                rates.put(l, new Samples());
                Bench.rate(1, slice, t -> i -> pair(l, "m-" + t)); // warm-up
            }
            for (int r = 0; r < rounds; r++) {
                for (int k = 0; k < both.size(); k++) {
                    dev.locker.api.Locker l = both.get((k + r) % both.size());
                    rates.get(l).add(Bench.rate(1, slice, t -> i -> pair(l, "m-" + t)));
                }
            }
            table.add(new Row(backend + " acquire+release with LockerMetrics, 1 thread", "pairs/s", rates.get(metered),
                    "the same without metrics", rates.get(plain), Better.HIGHER, 0.95, false));
            // allocation is steadier than a rate on a shared machine: what the meters add per pair, in bytes
            // (2,000 pairs a sample: the figure moves by less than 1% between samples, and on mem: a pair waits its
            // 1 ms lockWait, so 10,000 cost the full run two minutes of its 15)
            int n = quick ? 1_000 : 2_000;
            Samples withMeters = new Samples();
            Samples without = new Samples();
            for (int r = 0; r < rounds; r++) {
                withMeters.add(Bench.allocatedPerOp(n, i -> pair(metered, "m-alloc")));
                without.add(Bench.allocatedPerOp(n, i -> pair(plain, "m-alloc")));
            }
            table.add(new Row(backend + " allocation per pair with LockerMetrics", "B", withMeters,
                    "the same without metrics", without, Better.LOWER, 1.1, false));
        }
    }

    private static void pair(dev.locker.api.Locker locker, String name) {
        try (Lease lease = locker.acquire(KeyColumn.named(name), "bench")) {
            if (lease.fencingToken() <= 0) {
                throw new IllegalStateException("no token");
            }
        }
    }

    // ---- Redis ------------------------------------------------------------------------------------------------------

    /** A fresh server is refused grants for the restart guard; wait it out (and say so) so that rows compare steady states. */
    private static void awaitGrants(int port) throws InterruptedException {
        long t0 = System.nanoTime();
        try (RedisContender.Ours c = new RedisContender.Ours(port)) {
            while (true) {
                try {
                    c.pair("first");
                    break;
                } catch (TemporaryLockingException e) {
                    Thread.sleep(200);
                }
            }
        }
        long ms = (System.nanoTime() - t0) / 1_000_000;
        System.out.println("first grant on the fresh server after " + ms + " ms");
    }

    private void uncontended(int port) throws Exception {
        try (RedisContender ours = RedisContender.of("locker", port);
             RedisContender raw = RedisContender.of("raw", port);
             RedisContender redisson = RedisContender.of("redisson", port)) {
            List<RedisContender> all = List.of(ours, raw, redisson);
            for (int threads : new int[]{1, 4, 16}) {
                Map<RedisContender, Samples> rates = new LinkedHashMap<>();
                for (RedisContender c : all) {
                    rates.put(c, new Samples());
                    Bench.rate(threads, slice, t -> i -> c.pair("u-" + t)); // warm-up
                }
                for (int r = 0; r < rounds; r++) {
                    for (int k = 0; k < all.size(); k++) {
                        RedisContender c = all.get((k + r) % all.size()); // a different order each round
                        rates.get(c).add(Bench.rate(threads, slice, t -> i -> c.pair("u-" + t)));
                    }
                }
                String w = "Redis acquire+release, uncontended, " + threads + " thread" + (threads > 1 ? "s" : "");
                table.add(new Row(w, "pairs/s", rates.get(ours), "raw SET NX PX + compare-and-delete",
                        rates.get(raw), Better.HIGHER, threads == 1 ? 0.9 : 0.85, false));
                table.add(new Row(w, "pairs/s", rates.get(ours), "Redisson 3.52 RFencedLock", rates.get(redisson),
                        Better.HIGHER, 2.0, false));
            }
        }
    }

    private void allocation(int port) throws Exception {
        // 8,000 pairs a sample (about 1.5 s at one thread): allocation per pair moves by less than 1% between samples
        int n = quick ? 4_000 : 8_000;
        try (RedisContender ours = RedisContender.of("locker", port);
             RedisContender raw = RedisContender.of("raw", port);
             Jedis admin = new Jedis("127.0.0.1", port)) {
            Samples a = new Samples();
            Samples b = new Samples();
            Samples serverOurs = new Samples();
            Samples serverRaw = new Samples();
            Samples clientOurs = new Samples();
            Samples clientRaw = new Samples();
            for (RedisContender c : List.of(ours, raw)) {
                Bench.allocatedPerOp(n, i -> c.pair("alloc")); // warm-up
            }
            for (int r = 0; r < rounds; r++) {
                a.add(Bench.allocatedPerOp(n, i -> ours.pair("alloc")));
                b.add(Bench.allocatedPerOp(n, i -> raw.pair("alloc")));
                for (RedisContender c : r % 2 == 0 ? List.of(ours, raw) : List.of(raw, ours)) {
                    double[] cpu = cpuPerPair(admin, n, c);
                    (c == ours ? clientOurs : clientRaw).add(cpu[0]);
                    (c == ours ? serverOurs : serverRaw).add(cpu[1]);
                }
            }
            table.add(new Row("Redis client allocation per uncontended pair (all threads)", "B", a,
                    "raw SET NX PX + compare-and-delete", b, Better.LOWER, 2048.0, true));
            table.add(new Row("Redis server CPU per uncontended pair (INFO commandstats, scripts included)", "us",
                    serverOurs, "raw SET NX PX + compare-and-delete", serverRaw, Better.LOWER, null, false));
            table.add(new Row("Redis client CPU per uncontended pair (the calling thread)", "us", clientOurs,
                    "raw SET NX PX + compare-and-delete", clientRaw, Better.LOWER, null, false));
        }
    }

    /**
     * The calling thread's CPU time and the server's time in commands (INFO commandstats, reset first), per pair of
     * {@code c} over {@code n} pairs: steadier than a rate on a shared machine, and they say where a gap to the floor
     * lies (client or server).
     */
    private static double[] cpuPerPair(Jedis admin, int n, RedisContender c) {
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        admin.configResetStat();
        long cpu0 = mx.getCurrentThreadCpuTime();
        for (int i = 0; i < n; i++) {
            c.pair("alloc");
        }
        long cpu = mx.getCurrentThreadCpuTime() - cpu0;
        long serverUs = 0;
        for (String line : admin.info("commandstats").split("\\r?\\n")) {
            // cmdstat_<name>:calls=..,usec=..,...; the commands a script runs are counted apart from EVALSHA itself
            // (which includes them), so only top-level commands are summed: EVALSHA/EVAL for scripts, SET, GET...
            if (line.startsWith("cmdstat_evalsha:") || line.startsWith("cmdstat_eval:")
                    || line.startsWith("cmdstat_set:")) {
                java.util.regex.Matcher m = java.util.regex.Pattern.compile("usec=(\\d+)").matcher(line);
                if (m.find()) {
                    serverUs += Long.parseLong(m.group(1));
                }
            }
        }
        return new double[]{cpu / 1e3 / n, serverUs / (double) n};
    }

    private void handoff(int port) throws Exception {
        int runs = quick ? 1 : 3;
        long durationMs = quick ? 2_500 : 5_000;
        for (int hold : new int[]{1, 20}) {
            Map<String, Samples> p50 = new LinkedHashMap<>();
            Map<String, Samples> p99 = new LinkedHashMap<>();
            for (int r = 0; r < runs; r++) {
                for (String c : r % 2 == 0 ? List.of("locker", "redisson") : List.of("redisson", "locker")) {
                    long[] lat = handoffRun(c, port, hold, durationMs);
                    p50.computeIfAbsent(c, k -> new Samples()).add(lat[lat.length / 2] / 1e6);
                    p99.computeIfAbsent(c, k -> new Samples()).add(lat[(int) (lat.length * 0.99)] / 1e6);
                }
            }
            String w = "contended handoff between 2 JVMs, hold " + hold + " ms";
            table.add(new Row(w + ", p50 (" + runs + " runs)", "ms", p50.get("locker"), "Redisson lock()",
                    p50.get("redisson"), Better.LOWER, 1.0, false));
            table.add(new Row(w + ", p99 (" + runs + " runs)", "ms", p99.get("locker"), "Redisson lock()",
                    p99.get("redisson"), Better.LOWER, 1.0, false));
        }
    }

    /** Two peers take one lock in turn; returns the sorted handoff latencies (one peer's release to the other's grant). */
    private long[] handoffRun(String contender, int port, int holdMs, long durationMs) throws Exception {
        flush(port);
        long startAt = System.currentTimeMillis() + 4_000;
        List<CompletableFuture<List<String>>> outs = new ArrayList<>();
        for (int p = 0; p < 2; p++) {
            outs.add(peer("handoff", contender, Integer.toString(port), Integer.toString(holdMs),
                    Long.toString(startAt), Long.toString(durationMs)));
        }
        List<long[]> events = new ArrayList<>(); // granted, released, peer
        for (int p = 0; p < 2; p++) {
            for (String line : outs.get(p).get()) {
                String[] f = line.trim().split(" ");
                if (f.length == 2) {
                    events.add(new long[]{Long.parseLong(f[0]), Long.parseLong(f[1]), p});
                }
            }
        }
        events.sort((x, y) -> Long.compare(x[0], y[0]));
        List<Long> lat = new ArrayList<>();
        // the first half second of a run warms both contenders up alike (class loading, JIT, a first pub/sub
        // subscription): its handoffs are not counted. The peers' nanoTime is the host's monotonic clock
        long warm = events.isEmpty() ? 0 : events.get(0)[0] + 500_000_000L;
        for (int i = 1; i < events.size(); i++) {
            if (events.get(i)[2] != events.get(i - 1)[2] && events.get(i)[0] - warm >= 0) {
                lat.add(events.get(i)[0] - events.get(i - 1)[1]);
            }
        }
        if (lat.isEmpty()) {
            throw new IllegalStateException("no handoff between the two " + contender + " peers");
        }
        System.out.printf(Locale.ROOT, "    handoff %s hold %d ms: %d grants, %d handoffs between the peers%n",
                contender, holdMs, events.size(), lat.size());
        return lat.stream().mapToLong(Long::longValue).sorted().toArray();
    }

    private void held(int port) throws Exception {
        int n = quick ? 50_000 : 1_000_000;
        Map<String, double[]> results = new LinkedHashMap<>();
        for (String c : List.of("locker", "raw", "redisson")) {
            flush(port);
            List<String> out;
            try {
                out = peer("held", c, Integer.toString(port), Integer.toString(n), "8",
                        Integer.toString((int) slice.toMillis() * 2)).get();
            } catch (ExecutionException e) {
                // one contender giving out (Redisson's client at a million held locks, on a loaded host) must not
                // cost the run its other rows: its figures are left out (n/a), and the run says so
                System.out.printf(Locale.ROOT, "    held %s: FAILED (%s), its figures are left out%n", c,
                        e.getCause().getMessage());
                continue;
            }
            double[] v = null;
            for (String line : out) {
                if (line.startsWith("RESULT ")) {
                    v = Arrays.stream(line.substring(7).trim().split(" ")).mapToDouble(Double::parseDouble).toArray();
                }
            }
            if (v == null) {
                System.out.printf(Locale.ROOT, "    held %s: printed no result, its figures are left out: %s%n", c,
                        out);
                continue;
            }
            results.put(c, v);
            System.out.printf(Locale.ROOT, "    held %s: %d locks in %.1f s; server %.0f B/lock, heap %.0f B/lock, "
                    + "pairs/s %.0f before, %.0f while held%n", c, (int) v[0], v[5], v[1], v[2], v[3], v[4]);
        }
        flush(port);
        String nHeld = n >= 1_000_000 ? (n / 1_000_000) + "M" : (n / 1000) + "k";
        double[] ours = results.get("locker");
        for (String base : List.of("redisson", "raw")) {
            double[] theirs = results.get(base);
            String name = base.equals("raw") ? "raw SET" : "Redisson RFencedLock";
            table.add(new Row("Redis memory per held lock (INFO used_memory delta, " + nHeld + " held; 1 run)", "B",
                    one(ours, 1), name, one(theirs, 1), Better.LOWER, 200.0, true));
        }
        table.add(new Row("client heap per held lock (" + nHeld + " held; 1 run)", "B", one(ours, 2),
                "Redisson RFencedLock", one(results.get("redisson"), 2), Better.LOWER, 300.0,
                true));
        table.add(new Row("Redis time per pair with " + nHeld + " held ÷ with none (1 thread; 1 run)", "x",
                slowdown(ours), "raw SET NX PX", slowdown(results.get("raw")), Better.LOWER, 1.2, true));
    }

    /** Figure {@code i} of a held peer's result, none when that peer failed. */
    private static Samples one(double[] result, int i) {
        return result == null ? new Samples() : one(result[i]);
    }

    private static Samples slowdown(double[] result) {
        return result == null ? new Samples() : one(result[3] / result[4]);
    }

    private static Samples one(double v) {
        return new Samples().add(v);
    }

    // ---- MongoDB (in-process wire-protocol server) -----------------------------------------------------------------

    private void mongo() throws Exception {
        MongoServer server = new MongoServer(new MemoryBackend());
        server.bind("127.0.0.1", 0);
        InetSocketAddress at = server.getLocalAddress();
        String uri = "mongodb://127.0.0.1:" + at.getPort();
        try (MongoClient client = MongoClients.create(uri);
             MongoLocker locker = MongoLocker.builder().connectionString(uri)
                     .config(LockerConfig.builder().expiry(Duration.ofSeconds(60)).build()).build()) {
            MongoCollection<Document> raw = client.getDatabase("bench").getCollection("raw");
            MongoLockProvider shed = new MongoLockProvider(client.getDatabase("bench"));
            KeyColumn lock = KeyColumn.named("m");
            Map<String, Runnable> ops = new LinkedHashMap<>();
            ops.put("locker", () -> {
                try (Lease l = locker.acquire(lock, "bench")) {
                    l.fencingToken();
                }
            });
            long[] tokens = {0};
            ops.put("raw", () -> {
                String token = Long.toString(++tokens[0]);
                try {
                    raw.insertOne(new Document("_id", "m").append("owner", token)
                            .append("until", new Date(System.currentTimeMillis() + 60_000)));
                } catch (MongoWriteException held) {
                    throw new IllegalStateException("raw lock held", held);
                }
                raw.deleteOne(Filters.and(Filters.eq("_id", "m"), Filters.eq("owner", token)));
            });
            ops.put("shedlock", () -> {
                Optional<SimpleLock> l = shed.lock(new LockConfiguration(Instant.now(), "m", Duration.ofSeconds(60),
                        Duration.ZERO));
                l.orElseThrow(() -> new IllegalStateException("shedlock lock held")).unlock();
            });
            Map<String, Samples> rates = new LinkedHashMap<>();
            for (Map.Entry<String, Runnable> e : ops.entrySet()) {
                rates.put(e.getKey(), new Samples());
                Bench.rate(1, slice, t -> i -> e.getValue().run());
            }
            List<String> names = new ArrayList<>(ops.keySet());
            for (int r = 0; r < rounds; r++) {
                for (int k = 0; k < names.size(); k++) {
                    String name = names.get((k + r) % names.size());
                    rates.get(name).add(Bench.rate(1, slice, t -> i -> ops.get(name).run()));
                }
            }
            String w = "MongoDB acquire+release, 1 thread (in-process mongo-java-server)";
            table.add(new Row(w, "pairs/s", rates.get("locker"), "ShedLock 7.9 MongoLockProvider",
                    rates.get("shedlock"), Better.HIGHER, null, false));
            table.add(new Row(w, "pairs/s", rates.get("locker"), "raw insertOne + deleteOne", rates.get("raw"),
                    Better.HIGHER, null, false));
        } finally {
            server.shutdownNow();
        }
    }

    // ---- HBase (the mini cluster, started once) --------------------------------------------------------------------

    private void hbase() throws Exception {
        // more, shorter rounds than elsewhere: a round trip to the in-JVM mini cluster is mostly CPU and thread
        // switches, so its rates swing with the load of the machine, and the median needs more rounds to settle
        int hbaseRounds = quick ? 5 : 7;
        Duration hbaseSlice = Duration.ofMillis(quick ? 500 : 1500);
        try (HBaseBench hbase = HBaseBench.start()) {
            hbase.uncontended(table, hbaseRounds, hbaseSlice, Duration.ofSeconds(quick ? 5 : 10), quick ? 500 : 1000);
            hbase.held(table, quick ? new int[]{1, 2_000} : new int[]{1, 10_000, 30_000}, hbaseSlice, hbaseRounds);
        }
    }

    // ---- helpers -----------------------------------------------------------------------------------------------------

    /** Starts a {@link Peer} JVM on this classpath; its stdout lines, once it exits (stderr is passed through). */
    private static CompletableFuture<List<String>> peer(String... args) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", System.getProperty("java.class.path"), "-Xmx4g", "-XX:+UseParallelGC",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", Peer.class.getName()));
        cmd.addAll(List.of(args));
        // a peer's stderr goes to a file: a client that gives out can print a stack trace per request (Redisson at a
        // million held locks printed 170k lines); a failure names its last lines
        Path err = Files.createTempFile("locker-bench-peer", ".err");
        Process p = new ProcessBuilder(cmd).redirectError(err.toFile()).start();
        return CompletableFuture.supplyAsync(() -> {
            List<String> lines = new ArrayList<>();
            try (BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(),
                    StandardCharsets.US_ASCII))) {
                for (String line; (line = in.readLine()) != null; ) {
                    lines.add(line);
                }
                if (p.waitFor() != 0) {
                    List<String> errors = Files.readAllLines(err, StandardCharsets.UTF_8);
                    throw new IllegalStateException("peer " + String.join(" ", args) + " failed: "
                            + String.join(" | ", errors.subList(Math.max(0, errors.size() - 3), errors.size())));
                }
            } catch (IOException | InterruptedException e) {
                throw new IllegalStateException(e);
            } finally {
                try {
                    Files.deleteIfExists(err);
                } catch (IOException ignored) {
                    // a temporary file left behind
                }
            }
            return lines;
        });
    }

    private static void flush(int port) {
        try (Jedis j = new Jedis("127.0.0.1", port, 300_000)) { // a million held locks take seconds to drop
            j.flushAll();
        }
    }

    private static String redisVersion(int port) {
        try (Jedis j = new Jedis("127.0.0.1", port)) {
            for (String line : j.info("server").split("\r\n")) {
                if (line.startsWith("redis_version:")) {
                    return line.substring(14);
                }
            }
        }
        return "?";
    }

    private static String loadAverage() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).trim().split(" ", 4)[0];
        } catch (IOException e) {
            return "?";
        }
    }
}
