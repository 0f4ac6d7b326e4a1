package dev.locker.bench;

import dev.locker.bench.Table.Better;
import dev.locker.bench.Table.Row;
import dev.locker.springintegration.LockerLockRegistry;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.integration.redis.util.RedisLockRegistry;
import org.springframework.integration.support.locks.LockRegistry;
import redis.clients.jedis.Jedis;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;

/**
 * Spring Integration users' choice on Redis: {@link LockerLockRegistry} over Locker's Redis locker, against Spring's
 * own {@link RedisLockRegistry} in both its lock types, all through the {@link LockRegistry} API only. An uncontended
 * obtain+lock+unlock at 1 and 4 threads, and the handoff of one lock between two processes that wait for it.
 */
final class RegistryRows {

    /** The contenders by name, for this section and for its peers: Locker first, then Spring's two lock types. */
    static final List<String> CONTENDERS = List.of("locker", "spring-spin", "spring-pubsub");

    /** Counts the handoff peers that are warm; the runner flushes it before each run. */
    private static final String READY = "bench:registry-handoff:ready";

    /** How long a peer holds the lock, and then waits before asking again (the other peer's turn). */
    private static final int HOLD_MS = 5;

    private final Run run;
    private final int port;

    RegistryRows(Run run, int port) {
        this.run = run;
        this.port = port;
    }

    /** A baseline's name in the table. */
    private static String baseline(String name) {
        return switch (name) {
            case "spring-spin" -> "Spring RedisLockRegistry (SPIN_LOCK, its default)";
            case "spring-pubsub" -> "Spring RedisLockRegistry (PUB_SUB_LOCK)";
            default -> throw new IllegalArgumentException("no baseline registry named " + name);
        };
    }

    /**
     * A registry by name, each with its defaults: Locker's over the bench's Redis locker (60 s expiry, keep-alive on),
     * Spring's over a Lettuce connection factory (60 s expiry, no renewal), spinning or waking on pub/sub.
     */
    static Registry registry(String name, int port) {
        return switch (name) {
            case "locker" -> {
                RedisContender.Ours ours = new RedisContender.Ours(port);
                LockerLockRegistry registry = new LockerLockRegistry(ours.locker);
                yield new Registry(registry, () -> {
                    registry.close();
                    ours.close();
                });
            }
            case "spring-spin", "spring-pubsub" -> {
                LettuceConnectionFactory factory = new LettuceConnectionFactory(
                        new RedisStandaloneConfiguration("127.0.0.1", port));
                factory.afterPropertiesSet();
                factory.start();
                RedisLockRegistry registry = new RedisLockRegistry(factory, "spring-registry");
                if (name.equals("spring-pubsub")) {
                    registry.setRedisLockType(RedisLockRegistry.RedisLockType.PUB_SUB_LOCK);
                }
                yield new Registry(registry, () -> {
                    registry.destroy();
                    factory.destroy();
                });
            }
            default -> throw new IllegalArgumentException("no lock registry named " + name);
        };
    }

    /** A registry and what closes it and its client. */
    record Registry(LockRegistry registry, AutoCloseable client) implements AutoCloseable {

        /** What a user's code does around a guarded step: obtain the key's lock, lock it, unlock it. */
        void pair(String key) {
            Lock lock = registry.obtain(key);
            lock.lock();
            lock.unlock();
        }

        @Override
        public void close() throws Exception {
            client.close();
        }
    }

    void run() throws Exception {
        uncontended();
        handoff();
    }

    private void uncontended() throws Exception {
        Map<String, Registry> all = new LinkedHashMap<>();
        try {
            for (String c : CONTENDERS) {
                all.put(c, registry(c, port));
            }
            for (int threads : new int[]{1, 4}) {
                Map<String, Samples> rates = new LinkedHashMap<>();
                for (String c : CONTENDERS) {
                    Registry reg = all.get(c);
                    rates.put(c, new Samples());
                    Bench.rate(threads, run.slice(), t -> i -> reg.pair("registry-" + t)); // warm-up
                }
                for (int r = 0; r < run.rounds(); r++) {
                    for (int k = 0; k < CONTENDERS.size(); k++) {
                        String c = CONTENDERS.get((k + r) % CONTENDERS.size());
                        Registry reg = all.get(c);
                        rates.get(c).add(Bench.rate(threads, run.slice(), t -> i -> reg.pair("registry-" + t)));
                    }
                }
                for (String base : CONTENDERS.subList(1, CONTENDERS.size())) {
                    run.table().add(new Row("LockRegistry obtain+lock+unlock, uncontended, " + Run.threads(threads)
                            + " (LockerLockRegistry on Redis)", "pairs/s", rates.get("locker"), baseline(base),
                            rates.get(base), Better.HIGHER, null, false));
                }
            }
        } finally {
            for (Registry reg : all.values()) {
                reg.close();
            }
        }
    }

    private void handoff() throws Exception {
        int runs = run.quick() ? 1 : 3;
        long durationMs = run.quick() ? 2_500 : 5_000;
        Map<String, Samples> p50 = new LinkedHashMap<>();
        Map<String, Samples> p99 = new LinkedHashMap<>();
        for (int r = 0; r < runs; r++) {
            for (int k = 0; k < CONTENDERS.size(); k++) {
                String c = CONTENDERS.get((k + r) % CONTENDERS.size());
                long[] lat = handoffRun(c, durationMs);
                p50.computeIfAbsent(c, x -> new Samples()).add(lat[lat.length / 2] / 1e6);
                p99.computeIfAbsent(c, x -> new Samples()).add(lat[(int) (lat.length * 0.99)] / 1e6);
            }
        }
        String w = "LockRegistry handoff between 2 JVMs waiting in lock(), hold " + HOLD_MS + " ms";
        for (String base : CONTENDERS.subList(1, CONTENDERS.size())) {
            run.table().add(new Row(w + ", p50 (" + runs + " runs)", "ms", p50.get("locker"), baseline(base),
                    p50.get(base), Better.LOWER, null, false));
            run.table().add(new Row(w + ", p99 (" + runs + " runs)", "ms", p99.get("locker"), baseline(base),
                    p99.get(base), Better.LOWER, null, false));
        }
    }

    /**
     * Two peers of {@code contender} take one lock in turn; returns the sorted handoff latencies. A handoff is a grant
     * to a peer that asked while the other held the lock. Its latency runs from the other's first release after that
     * ask, so a release the waiter missed (a spin lock asleep between tries) counts against it.
     */
    private long[] handoffRun(String contender, long durationMs) throws Exception {
        Peers.flush(port);
        List<CompletableFuture<List<String>>> outs = new ArrayList<>();
        for (int p = 0; p < 2; p++) {
            outs.add(Peers.start("registry-handoff", contender, Integer.toString(port), Integer.toString(HOLD_MS),
                    Long.toString(durationMs)));
        }
        List<List<long[]>> holds = new ArrayList<>(); // per peer: asked, granted, released, in the order taken
        long first = Long.MAX_VALUE;
        for (CompletableFuture<List<String>> out : outs) {
            List<long[]> mine = new ArrayList<>();
            for (String line : out.get()) {
                String[] f = line.trim().split(" ");
                if (f.length == 3) {
                    long[] h = {Long.parseLong(f[0]), Long.parseLong(f[1]), Long.parseLong(f[2])};
                    mine.add(h);
                    first = Math.min(first, h[1]);
                }
            }
            holds.add(mine);
        }
        // the first half second warms every contender up alike (class loading, JIT, a first pub/sub subscription)
        long warm = first + 500_000_000L;
        List<Long> lat = new ArrayList<>();
        int grants = 0;
        for (int p = 0; p < 2; p++) {
            List<long[]> other = holds.get(1 - p);
            for (long[] h : holds.get(p)) {
                grants++;
                long[] blocking = heldAt(other, h[0]);
                if (h[0] - warm >= 0 && blocking != null) {
                    lat.add(h[1] - blocking[2]);
                }
            }
        }
        if (lat.isEmpty()) {
            throw new IllegalStateException("no handoff between the two " + contender + " peers, in " + grants
                    + " grants");
        }
        System.out.printf(Locale.ROOT, "    registry-handoff %s hold %d ms: %d grants, %d handoffs between the peers%n",
                contender, HOLD_MS, grants, lat.size());
        return lat.stream().mapToLong(Long::longValue).sorted().toArray();
    }

    /**
     * Waits on the backend a few times before the measured run, for a lock that a second registry of this process
     * holds. Spring's pub/sub registry starts its listener at its first wait, and a release published before it
     * listens is lost: that waiter sleeps for the 60 s expiry. Its later waits subscribe before they read the lock.
     */
    private static void warmWaits(String contender, int port, Registry reg) throws Exception {
        String key = "warm-wait-" + ProcessHandle.current().pid();
        try (Registry other = registry(contender, port)) {
            for (int i = 0; i < 5; i++) {
                Lock held = other.registry().obtain(key);
                CountDownLatch locked = new CountDownLatch(1);
                Thread holder = new Thread(() -> {
                    held.lock();
                    locked.countDown();
                    try {
                        Thread.sleep(200);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    } finally {
                        held.unlock();
                    }
                }, "warm-holder");
                holder.start();
                locked.await();
                Lock waiter = reg.registry().obtain(key);
                if (!waiter.tryLock(10, TimeUnit.SECONDS)) {
                    throw new IllegalStateException(contender + " was not granted a released lock within 10 s");
                }
                waiter.unlock();
                holder.join();
            }
        }
    }

    /**
     * Counts this peer ready and waits for the other one: a first pub/sub wait on a loaded host took seconds, so a
     * start time fixed by the runner let one peer run alone.
     */
    private static void awaitOtherPeer(int port) throws InterruptedException {
        try (Jedis j = Peers.admin(port, 10_000)) {
            j.incr(READY);
            long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
            while (System.nanoTime() - deadline < 0) {
                String v = j.get(READY);
                if (v != null && Long.parseLong(v) >= 2) {
                    return;
                }
                Thread.sleep(1);
            }
        }
        throw new IllegalStateException("the other peer was not ready within 3 minutes");
    }

    /** The hold of {@code holds} (in the order taken) that covers the instant {@code t}, or null when none does. */
    private static long[] heldAt(List<long[]> holds, long t) {
        int lo = 0;
        int hi = holds.size() - 1;
        long[] last = null; // the last hold granted at or before t
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (holds.get(mid)[1] - t <= 0) {
                last = holds.get(mid);
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        return last != null && t - last[2] < 0 ? last : null;
    }

    /**
     * A peer of the handoff row (started by {@link Peer}): once both peers are warm, for {@code durationMs}, locks
     * the one lock, holds it {@code holdMs}, unlocks it, and waits as long again before asking for it anew. Prints
     * per hold the {@link System#nanoTime()} of the ask, the grant and the release.
     */
    static void peer(String contender, int port, int holdMs, long durationMs) throws Exception {
        StringBuilder out = new StringBuilder();
        Registry reg = registry(contender, port);
        for (int i = 0; i < 500; i++) {
            reg.pair("warm-" + ProcessHandle.current().pid());
        }
        warmWaits(contender, port, reg);
        Lock lock = reg.registry().obtain("handoff");
        awaitOtherPeer(port);
        long end = System.nanoTime() + durationMs * 1_000_000;
        while (System.nanoTime() - end < 0) {
            long asked = System.nanoTime();
            lock.lock();
            long granted = System.nanoTime();
            Thread.sleep(holdMs);
            long released = System.nanoTime();
            lock.unlock();
            out.append(asked).append(' ').append(granted).append(' ').append(released).append('\n');
            // the other peer's turn: without it a spin lock's releaser takes the lock straight back every time
            Thread.sleep(holdMs);
        }
        System.out.print(out);
    }
}
