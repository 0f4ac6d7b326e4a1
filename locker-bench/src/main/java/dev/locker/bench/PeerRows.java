package dev.locker.bench;

import dev.locker.bench.Table.Better;
import dev.locker.bench.Table.Row;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

/** The Redis rows that need other processes: contended handoff between two JVMs, and a million locks held. */
final class PeerRows {

    private final Run run;
    private final int port;

    PeerRows(Run run, int port) {
        this.run = run;
        this.port = port;
    }

    void handoff() throws Exception {
        int runs = run.quick() ? 1 : 3;
        long durationMs = run.quick() ? 2_500 : 5_000;
        for (int hold : new int[]{1, 20}) {
            Map<String, Samples> p50 = new LinkedHashMap<>();
            Map<String, Samples> p99 = new LinkedHashMap<>();
            for (int r = 0; r < runs; r++) {
                for (String c : r % 2 == 0 ? List.of("locker", "redisson") : List.of("redisson", "locker")) {
                    long[] lat = handoffRun(port, "handoff", c, hold, durationMs);
                    p50.computeIfAbsent(c, k -> new Samples()).add(lat[lat.length / 2] / 1e6);
                    p99.computeIfAbsent(c, k -> new Samples()).add(lat[(int) (lat.length * 0.99)] / 1e6);
                }
            }
            String w = "contended handoff between 2 JVMs, hold " + hold + " ms";
            run.table().add(new Row(w + ", p50 (" + runs + " runs)", "ms", p50.get("locker"), "Redisson lock()",
                    p50.get("redisson"), Better.LOWER, 1.0, false));
            run.table().add(new Row(w + ", p99 (" + runs + " runs)", "ms", p99.get("locker"), "Redisson lock()",
                    p99.get("redisson"), Better.LOWER, 1.0, false));
        }
    }

    /**
     * Two peers of {@code mode} take one lock in turn; returns the sorted handoff latencies (one peer's release to the
     * other's grant).
     */
    static long[] handoffRun(int port, String mode, String contender, int holdMs, long durationMs) throws Exception {
        Peers.flush(port);
        long startAt = System.currentTimeMillis() + 4_000;
        List<CompletableFuture<List<String>>> outs = new ArrayList<>();
        for (int p = 0; p < 2; p++) {
            outs.add(Peers.start(mode, contender, Integer.toString(port), Integer.toString(holdMs),
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
        System.out.printf(Locale.ROOT, "    %s %s hold %d ms: %d grants, %d handoffs between the peers%n",
                mode, contender, holdMs, events.size(), lat.size());
        return lat.stream().mapToLong(Long::longValue).sorted().toArray();
    }

    void held() throws Exception {
        int n = run.quick() ? 50_000 : 1_000_000;
        Map<String, double[]> results = new LinkedHashMap<>();
        for (String c : List.of("locker", "raw", "redisson")) {
            Peers.flush(port);
            List<String> out;
            try {
                out = Peers.start("held", c, Integer.toString(port), Integer.toString(n), "8",
                        Integer.toString((int) run.slice().toMillis() * 2)).get();
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
        Peers.flush(port);
        String nHeld = n >= 1_000_000 ? (n / 1_000_000) + "M" : (n / 1000) + "k";
        double[] ours = results.get("locker");
        for (String base : List.of("redisson", "raw")) {
            double[] theirs = results.get(base);
            String name = base.equals("raw") ? "raw SET" : "Redisson RFencedLock";
            run.table().add(new Row("Redis memory per held lock (INFO used_memory delta, " + nHeld + " held; 1 run)", "B",
                    one(ours, 1), name, one(theirs, 1), Better.LOWER, 200.0, true));
        }
        run.table().add(new Row("client heap per held lock (" + nHeld + " held; 1 run)", "B", one(ours, 2),
                "Redisson RFencedLock", one(results.get("redisson"), 2), Better.LOWER, 300.0,
                true));
        run.table().add(new Row("Redis time per pair with " + nHeld + " held ÷ with none (1 thread; 1 run)", "x",
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
}
