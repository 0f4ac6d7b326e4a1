package dev.locker.bench;

import dev.locker.testkit.RedisServer;
import redis.clients.jedis.Jedis;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * Runs every section, each against its baselines measured in the same run with the rounds interleaved, and prints one
 * table (markdown) of medians, spreads and ratios. {@code --quick} for a few minutes, the default for the full run;
 * {@code --only=name,...} picks sections (the names in {@link #SECTIONS}). The rows live in a file per group
 * ({@link RedisRows}, {@link PeerRows}, {@link ScaleRows}, {@link RegistryRows}, ...); this class only runs them.
 */
public final class BenchMain {

    /** One section of the run: its name for {@code --only}, whether it needs the shared Redis server, its rows. */
    private record Section(String name, boolean redis, Body body) {
    }

    private interface Body {
        void run(Run run, int redisPort) throws Exception;
    }

    /**
     * Every section, in the order of a run. A section that needs Redis runs on the one server started for the run,
     * after the restart guard's first minute; the in-JVM sections before them use that minute.
     */
    private static final List<Section> SECTIONS = List.of(
            new Section("mediator", false, (run, port) -> new MediatorRows(run).run()),
            new Section("metrics", false, (run, port) -> new MetricsRows(run).run(
                    "mem:bench-metrics?protocol=wait-and-read-back&expiry=60s&lockWait=1ms", "mem: (lockWait=1ms)")),
            new Section("redis", true, (run, port) -> new RedisRows(run, port).uncontended()),
            new Section("lease", true, (run, port) -> new RedisRows(run, port).leaseCost()),
            new Section("metrics", true, (run, port) -> new MetricsRows(run).run(
                    "redis://127.0.0.1:" + port + "?expiry=60s", "Redis")),
            new Section("alloc", true, (run, port) -> new RedisRows(run, port).allocation()),
            new Section("handoff", true, (run, port) -> new PeerRows(run, port).handoff()),
            new Section("waking", true, (run, port) -> new ScaleRows(run, port).waking()),
            new Section("shedlock", true, (run, port) -> new ShedLockRows(run, port).run()),
            new Section("registry", true, (run, port) -> new RegistryRows(run, port).run()),
            new Section("held", true, (run, port) -> new PeerRows(run, port).held()),
            new Section("servercost", false, (run, port) -> ServerCost.run(run.table(), run.quick())),
            new Section("mongo", false, (run, port) -> new MongoRows(run).run()),
            new Section("hbase", false, (run, port) -> HBaseBench.run(run)),
            new Section("janusgraph", false,
                    (run, port) -> new JanusGraphBench(run.quick(), run.rounds(), run.slice()).run(run.table())));

    private BenchMain() {
    }

    public static void main(String[] args) throws Exception {
        boolean quick = false;
        Set<String> names = new LinkedHashSet<>();
        for (Section s : SECTIONS) {
            names.add(s.name());
        }
        Set<String> only = new LinkedHashSet<>();
        for (String a : args) {
            if (a.equals("--quick")) {
                quick = true;
            } else if (a.startsWith("--only=")) {
                only.addAll(Arrays.asList(a.substring(7).split(",")));
            } else {
                throw new IllegalArgumentException("usage: bench/run [--quick] [--only=" + String.join(",", names)
                        + "]; unknown argument " + a);
            }
        }
        for (String name : only) {
            if (!names.contains(name)) {
                throw new IllegalArgumentException("no section named " + name + "; the sections are "
                        + String.join(",", names));
            }
        }
        List<Section> chosen = new ArrayList<>();
        for (Section s : SECTIONS) {
            if (only.isEmpty() || only.contains(s.name())) {
                chosen.add(s);
            }
        }
        run(Run.of(quick), chosen);
    }

    private static void run(Run run, List<Section> sections) throws Exception {
        long t0 = System.nanoTime();
        System.out.println("Locker benchmarks, " + (run.quick() ? "quick" : "full") + " run, " + LocalDateTime.now()
                + "; " + Runtime.getRuntime().availableProcessors() + " CPUs, Java "
                + System.getProperty("java.version") + ", " + System.getProperty("os.name") + " "
                + System.getProperty("os.arch") + "; load average at start " + loadAverage());
        boolean anyRedis = sections.stream().anyMatch(Section::redis);
        // the Redis server starts first: Locker's restart guard (on, as long as the 60 s expiry) refuses grants on a
        // fresh server for a minute, which the in-JVM sections use instead of waiting for it
        try (RedisServer redis = anyRedis ? RedisServer.start() : null) {
            boolean waited = false;
            for (Section s : sections) {
                int port = -1;
                if (s.redis()) {
                    port = redis.port();
                    if (!waited) {
                        System.out.println("redis-server " + redisVersion(port) + " on port " + port);
                        RedisRows.awaitGrants(port);
                        waited = true;
                    }
                }
                long s0 = System.nanoTime();
                s.body().run(run, port);
                System.out.printf(Locale.ROOT, "  (section %s took %.0f s)%n", s.name(),
                        (System.nanoTime() - s0) / 1e9);
            }
        }
        System.out.println();
        System.out.println(run.table().render());
        System.out.printf(Locale.ROOT, "%d rounds per row unless noted; run took %.0f s; load average at end %s%n",
                run.rounds(), (System.nanoTime() - t0) / 1e9, loadAverage());
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
