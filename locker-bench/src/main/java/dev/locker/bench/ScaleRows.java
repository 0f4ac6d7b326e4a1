package dev.locker.bench;

import dev.locker.bench.Table.Better;
import dev.locker.bench.Table.Row;
import redis.clients.jedis.Jedis;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Waking at scale: sixteen waiting processes spread over a thousand busy locks ({@link Waking}), Locker against
 * Redisson's {@code lock()}, which publishes on a channel per lock. Per release: messages the server delivers to
 * subscribers, the server's CPU, the clients' CPU; and the handoff's p50 and p99 (one process's release of a lock to
 * its partner's grant).
 *
 * <h2>Counting messages without MONITOR</h2>
 * Redis 7.0 counts no delivered messages, so the row multiplies two counts. PUBLISH calls come from INFO
 * commandstats, which counts the calls scripts make. Subscribers per channel come from PUBSUB NUMSUB, sampled every
 * 100 ms over the contender's lock channels. A release publishes on one channel, so its deliveries are that
 * channel's subscribers. Both publish on a channel per lock: the estimate is the mean subscriber count over the lock
 * channels someone is subscribed to at the sample. Locker's are {@code <prefix>{<name>}w}, Redisson's {@code
 * redisson_lock__channel:{<name>}}. Locker's connections also subscribe to the prefix's channel, where older builds
 * publish. Nothing is published there in this row (no older build waits), so it is left out of the mean.
 */
final class ScaleRows {

    static final int PEERS = 16;
    /** The same row with fewer processes: messages per release should not change with their number. */
    static final int FEW_PEERS = 4;
    static final int WORKERS = 4;
    static final int LOCKS = 1_000;
    static final int HOLD_MS = 10;

    private final Run run;
    private final int port;

    ScaleRows(Run run, int port) {
        this.run = run;
        this.port = port;
    }

    /**
     * The row at {@link #PEERS} processes, and again at {@link #FEW_PEERS}: a row says whether a release costs more
     * messages as more processes wait on other locks.
     */
    void waking() throws Exception {
        int runs = run.quick() ? 1 : 2;
        Map<String, Map<String, Samples>> many = new LinkedHashMap<>();
        Map<String, Map<String, Samples>> few = new LinkedHashMap<>();
        for (int r = 0; r < runs; r++) {
            for (String c : r % 2 == 0 ? List.of("locker", "redisson") : List.of("redisson", "locker")) {
                add(many, c, once(c, PEERS));
                add(few, c, once(c, FEW_PEERS));
            }
        }
        Map<String, Samples> ours = many.get("locker");
        Map<String, Samples> theirs = many.get("redisson");
        String w = "waking at scale (" + PEERS + " JVMs x " + WORKERS + " waiting workers over " + LOCKS
                + " busy locks, hold " + HOLD_MS + " ms; " + runs + " run" + (runs > 1 ? "s" : "") + ")";
        String base = "Redisson lock() (a channel per lock)";
        run.table().add(new Row(w + ": messages delivered per release (PUBLISH calls x subscribers)", "msgs",
                ours.get("messages"), base, theirs.get("messages"), Better.LOWER, null, false));
        run.table().add(new Row("  the same: server CPU per release (INFO cpu)", "us", ours.get("serverCpu"), base,
                theirs.get("serverCpu"), Better.LOWER, null, false));
        run.table().add(new Row("  the same: clients' CPU per release (" + PEERS + " JVMs, all threads)", "us",
                ours.get("clientCpu"), base, theirs.get("clientCpu"), Better.LOWER, null, false));
        run.table().add(new Row("  the same: handoff p50", "ms", ours.get("p50"), base, theirs.get("p50"),
                Better.LOWER, 1.0, false));
        run.table().add(new Row("  the same: handoff p99", "ms", ours.get("p99"), base, theirs.get("p99"),
                Better.LOWER, 1.0, false));
        // independent of the lockers waiting on other locks: the same messages per release at 4 and 16 processes
        run.table().add(new Row("  the same: messages per release at " + PEERS + " JVMs / at " + FEW_PEERS, "x",
                Samples.ratios(ours.get("messages"), few.get("locker").get("messages")), base,
                Samples.ratios(theirs.get("messages"), few.get("redisson").get("messages")), Better.LOWER, 1.25,
                true));
    }

    private static void add(Map<String, Map<String, Samples>> into, String contender, Map<String, Double> figures) {
        Map<String, Samples> s = into.computeIfAbsent(contender, k -> new LinkedHashMap<>());
        figures.forEach((k, v) -> s.computeIfAbsent(k, x -> new Samples()).add(v));
    }

    /** One run of one contender with {@code peers} processes: its figures per release, by name. */
    private Map<String, Double> once(String contender, int peers) throws Exception {
        Peers.flush(port);
        List<CompletableFuture<List<String>>> outs = new ArrayList<>();
        for (int p = 0; p < peers; p++) {
            outs.add(Peers.withHeap("256m", "waking", contender, Integer.toString(port), Integer.toString(p),
                    Integer.toString(peers), Integer.toString(WORKERS), Integer.toString(LOCKS),
                    Integer.toString(HOLD_MS)));
        }
        long windowFrom;
        long windowTo;
        double subscribers;
        double serverCpuSeconds;
        long publishes;
        try (Jedis admin = Peers.admin(port, 60_000)) {
            // sixteen JVMs take 10 s to warm up on a quiet 2-CPU host, minutes on a loaded one: all start together
            long t0 = System.nanoTime();
            while (!String.valueOf(peers).equals(admin.get(Waking.READY))) {
                for (CompletableFuture<List<String>> out : outs) {
                    if (out.isDone()) {
                        out.get(); // a peer that failed says why
                        throw new IllegalStateException("a waking peer ended before the start");
                    }
                }
                Thread.sleep(100);
            }
            long startAt = System.currentTimeMillis() + 500;
            windowFrom = startAt + 2_000; // waits on every lock under way, every subscription made
            windowTo = windowFrom + (run.quick() ? 5_000 : 10_000);
            admin.set(Waking.START, startAt + " " + windowFrom + " " + windowTo);
            System.out.printf(Locale.ROOT, "    waking %s: %d JVMs ready after %.0f s%n", contender, peers,
                    (System.nanoTime() - t0) / 1e9);
            Peer.sleepUntil(windowFrom);
            admin.configResetStat();
            double cpu0 = serverCpu(admin);
            Samples numsub = new Samples();
            while (System.currentTimeMillis() < windowTo) {
                double mean = meanSubscribers(admin, contender.equals("locker") ? "*}w" : "redisson_lock__channel*");
                if (!Double.isNaN(mean)) {
                    numsub.add(mean);
                }
                Thread.sleep(100);
            }
            serverCpuSeconds = serverCpu(admin) - cpu0;
            publishes = publishCalls(admin);
            subscribers = numsub.isEmpty() ? 0 : mean(numsub);
        }
        long windowFromNs = Waking.toNanos(windowFrom);
        long windowToNs = Waking.toNanos(windowTo);
        Map<Integer, List<long[]>> byLock = new HashMap<>(); // granted, released, peer, asked
        long clientCpuNs = 0;
        for (int p = 0; p < peers; p++) {
            for (String line : outs.get(p).get()) {
                String[] f = line.trim().split(" ");
                if (f[0].equals("G")) {
                    byLock.computeIfAbsent(Integer.parseInt(f[1]), k -> new ArrayList<>())
                            .add(new long[]{Long.parseLong(f[3]), Long.parseLong(f[4]), p, Long.parseLong(f[2])});
                } else if (f[0].equals("CPU")) {
                    clientCpuNs += Long.parseLong(f[1]);
                }
            }
        }
        long releases = 0;
        List<Long> lat = new ArrayList<>();
        for (List<long[]> events : byLock.values()) {
            events.sort((x, y) -> Long.compare(x[0], y[0]));
            for (int i = 0; i < events.size(); i++) {
                long[] e = events.get(i);
                if (e[1] - windowFromNs >= 0 && e[1] - windowToNs < 0) {
                    releases++;
                }
                // a handoff: the lock goes to the other process, which asked for it before the release
                long[] before = i > 0 ? events.get(i - 1) : null;
                if (before != null && before[2] != e[2] && e[3] - before[1] < 0 && e[0] - windowFromNs >= 0
                        && e[0] - windowToNs < 0) {
                    lat.add(e[0] - before[1]);
                }
            }
        }
        if (releases == 0 || lat.isEmpty()) {
            throw new IllegalStateException("no release or handoff in the window for " + contender);
        }
        long[] sorted = lat.stream().mapToLong(Long::longValue).sorted().toArray();
        Map<String, Double> m = new LinkedHashMap<>();
        m.put("messages", publishes * subscribers / releases);
        m.put("serverCpu", serverCpuSeconds * 1e6 / releases);
        m.put("clientCpu", clientCpuNs / 1e3 / releases);
        m.put("p50", sorted[sorted.length / 2] / 1e6);
        m.put("p99", sorted[(int) (sorted.length * 0.99)] / 1e6);
        System.out.printf(Locale.ROOT, "    waking %s, %d JVMs: %d releases, %d handoffs in %.0f s; %d PUBLISH "
                        + "calls, %.1f subscribers per channel%n", contender, peers, releases, lat.size(),
                (windowTo - windowFrom) / 1e3, publishes, subscribers);
        return m;
    }

    private static double mean(Samples s) {
        double sum = 0;
        for (int i = 0; i < s.size(); i++) {
            sum += s.get(i);
        }
        return sum / s.size();
    }

    /** The mean subscriber count over the channels matching {@code pattern} that have one now; NaN when none has. */
    private static double meanSubscribers(Jedis admin, String pattern) {
        List<String> channels = admin.pubsubChannels(pattern);
        if (channels.isEmpty()) {
            return Double.NaN;
        }
        long sum = 0;
        for (Long n : admin.pubsubNumSub(channels.toArray(new String[0])).values()) {
            sum += n;
        }
        return sum / (double) channels.size();
    }

    /** The server's CPU time so far, user and system, in seconds. */
    private static double serverCpu(Jedis admin) {
        double s = 0;
        for (String line : admin.info("cpu").split("\r?\n")) {
            if (line.startsWith("used_cpu_sys:") || line.startsWith("used_cpu_user:")) {
                s += Double.parseDouble(line.substring(line.indexOf(':') + 1).trim());
            }
        }
        return s;
    }

    /** PUBLISH calls since the last reset, those that scripts made included. */
    private static long publishCalls(Jedis admin) {
        Matcher m = Pattern.compile("cmdstat_publish:calls=(\\d+)").matcher(admin.info("commandstats"));
        return m.find() ? Long.parseLong(m.group(1)) : 0;
    }
}
