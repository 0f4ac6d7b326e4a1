package dev.locker.bench;

import dev.locker.api.KeyColumn;
import dev.locker.api.TemporaryLockingException;
import dev.locker.bench.Table.Better;
import dev.locker.bench.Table.Row;
import redis.clients.jedis.Jedis;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The single-process Redis rows: uncontended acquire+release against the floors and Redisson, a lease's own cost, and
 * allocation and CPU per pair. One redis-server, started by the runner, serves them all.
 */
final class RedisRows {

    private final Run run;
    private final int port;

    RedisRows(Run run, int port) {
        this.run = run;
        this.port = port;
    }

    /** A fresh server is refused grants for the restart guard; wait it out (and say so) so that rows compare steady states. */
    static void awaitGrants(int port) throws InterruptedException {
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

    /**
     * Uncontended acquire+release at 1, 4 and 16 threads, each thread on its own lock, every contender with a pool of
     * {@link RedisContender#POOL} connections, in interleaved rounds: Locker against the fenced floor (the target), the
     * raw floor without fencing, and Redisson's fenced lock.
     */
    void uncontended() throws Exception {
        try (RedisContender ours = RedisContender.of("locker", port);
             RedisContender fenced = RedisContender.of("fenced", port);
             RedisContender raw = RedisContender.of("raw", port);
             RedisContender redisson = RedisContender.of("redisson", port)) {
            List<RedisContender> all = List.of(ours, fenced, raw, redisson);
            for (int threads : new int[]{1, 4, 16}) {
                Map<RedisContender, Samples> rates = new LinkedHashMap<>();
                for (RedisContender c : all) {
                    rates.put(c, new Samples());
                    Bench.rate(threads, run.slice(), t -> i -> c.pair("u-" + t)); // warm-up
                }
                for (int r = 0; r < run.rounds(); r++) {
                    for (int k = 0; k < all.size(); k++) {
                        RedisContender c = all.get((k + r) % all.size()); // a different order each round
                        rates.get(c).add(Bench.rate(threads, run.slice(), t -> i -> c.pair("u-" + t)));
                    }
                }
                String w = "Redis acquire+release, uncontended, " + Run.threads(threads);
                run.table().add(new Row(w, "pairs/s", rates.get(ours), "minimal fenced script pair (TIME token, "
                        + "compare-and-delete keeping it)", rates.get(fenced), Better.HIGHER, 0.95, false));
                // no target since the fenced floor came: a fenced grant on Redis 7.0 is a script, never a bare SET
                run.table().add(new Row(w, "pairs/s", rates.get(ours), "raw SET NX PX + compare-and-delete (no "
                        + "fencing)", rates.get(raw), Better.HIGHER, null, false));
                run.table().add(new Row(w, "pairs/s", rates.get(ours), "Redisson 3.52 RFencedLock",
                        rates.get(redisson), Better.HIGHER, threads == 1 ? 1.6 : 2.0, false));
            }
        }
    }

    /**
     * A lease's own cost: acquire and close of a lease against the three phases (writeLock, checkLocks, deleteLocks)
     * on the same locker and lock, 1 thread, in interleaved rounds. The rate, and the client JVM's CPU per pair on
     * all its threads: a lease schedules its keep-alive, which runs on the locker's own thread.
     */
    void leaseCost() throws Exception {
        // the JVM's CPU time moves in 10 ms ticks: 10,000 pairs a sample read it to 1 us per pair
        int n = run.quick() ? 3_000 : 10_000;
        try (RedisContender.Ours c = new RedisContender.Ours(port)) {
            KeyColumn lock = KeyColumn.named("lease-cost");
            Map<String, Runnable> ops = new LinkedHashMap<>();
            ops.put("lease", () -> c.pair("lease-cost"));
            ops.put("phases", () -> Bench.threePhases(c.locker, lock));
            Map<String, Samples> rates = new LinkedHashMap<>();
            Map<String, Samples> cpu = new LinkedHashMap<>();
            for (Map.Entry<String, Runnable> e : ops.entrySet()) {
                rates.put(e.getKey(), new Samples());
                cpu.put(e.getKey(), new Samples());
                Bench.rate(1, run.slice(), t -> i -> e.getValue().run()); // warm-up
            }
            List<String> names = List.copyOf(ops.keySet());
            for (int r = 0; r < run.rounds(); r++) {
                for (int k = 0; k < names.size(); k++) {
                    String name = names.get((k + r) % names.size());
                    Runnable op = ops.get(name);
                    rates.get(name).add(Bench.rate(1, run.slice(), t -> i -> op.run()));
                    cpu.get(name).add(Bench.processCpuPerOp(n, op) / 1e3);
                }
            }
            String w = "Redis lease acquire+close (keep-alive scheduled), 1 thread";
            String base = "writeLock+checkLocks+deleteLocks on the same locker";
            run.table().add(new Row(w, "pairs/s", rates.get("lease"), base, rates.get("phases"), Better.HIGHER, 0.95,
                    false));
            run.table().add(new Row("Redis client CPU per lease acquire+close (the whole JVM, 1 thread)", "us",
                    cpu.get("lease"), base, cpu.get("phases"), Better.LOWER, 1.2, false));
        }
    }

    void allocation() throws Exception {
        // 8,000 pairs a sample (about 1.5 s at one thread): allocation per pair moves by less than 1% between samples
        int n = run.quick() ? 4_000 : 8_000;
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
            for (int r = 0; r < run.rounds(); r++) {
                a.add(Bench.allocatedPerOp(n, i -> ours.pair("alloc")));
                b.add(Bench.allocatedPerOp(n, i -> raw.pair("alloc")));
                for (RedisContender c : r % 2 == 0 ? List.of(ours, raw) : List.of(raw, ours)) {
                    double[] cpu = cpuPerPair(admin, n, c);
                    (c == ours ? clientOurs : clientRaw).add(cpu[0]);
                    (c == ours ? serverOurs : serverRaw).add(cpu[1]);
                }
            }
            run.table().add(new Row("Redis client allocation per uncontended pair (all threads)", "B", a,
                    "raw SET NX PX + compare-and-delete", b, Better.LOWER, 2048.0, true));
            run.table().add(new Row("Redis server CPU per uncontended pair (INFO commandstats, scripts included)", "us",
                    serverOurs, "raw SET NX PX + compare-and-delete", serverRaw, Better.LOWER, null, false));
            run.table().add(new Row("Redis client CPU per uncontended pair (the calling thread)", "us", clientOurs,
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
}
