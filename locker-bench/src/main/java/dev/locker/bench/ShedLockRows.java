package dev.locker.bench;

import dev.locker.bench.Table.Better;
import dev.locker.bench.Table.Row;
import dev.locker.shedlock.LockerLockProvider;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.provider.redis.spring.RedisLockProvider;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * ShedLock users' choice on Redis: Locker's {@link LockerLockProvider} against ShedLock's own {@link RedisLockProvider}
 * (shedlock-provider-redis-spring 6.6.1, the newest served here, over Spring Data Redis and Lettuce), both through
 * ShedLock's {@link LockProvider} API only. An uncontended lock+unlock pair at 1 and 4 threads, and the handoff of one
 * lock between two processes that poll for it.
 */
final class ShedLockRows {

    /** The baseline's name in the table. */
    static final String THEIRS = "ShedLock 6.6.1 RedisLockProvider (SET NX PX, DEL; Spring Data Redis, Lettuce)";

    private final Run run;
    private final int port;

    ShedLockRows(Run run, int port) {
        this.run = run;
        this.port = port;
    }

    /** A provider by name, for this section and for its {@link Peer}s: {@code locker} or {@code shedlock}. */
    static Provider provider(String name, int port) {
        return switch (name) {
            case "locker" -> {
                RedisContender.Ours ours = new RedisContender.Ours(port);
                yield new Provider(new LockerLockProvider(ours.locker), ours);
            }
            case "shedlock" -> {
                LettuceConnectionFactory factory = new LettuceConnectionFactory(
                        new RedisStandaloneConfiguration("127.0.0.1", port));
                factory.afterPropertiesSet();
                factory.start();
                yield new Provider(new RedisLockProvider(factory), factory::destroy);
            }
            default -> throw new IllegalArgumentException("no ShedLock provider named " + name);
        };
    }

    /** A provider and what closes its client. */
    record Provider(LockProvider provider, AutoCloseable client) implements AutoCloseable {

        /** One attempt at {@code name}, as ShedLock makes it for a task (lockAtMostFor 60 s, no lockAtLeastFor). */
        SimpleLock tryLock(String name) {
            return provider.lock(new LockConfiguration(ClockProvider.now(), name, Duration.ofSeconds(60),
                    Duration.ZERO)).orElse(null);
        }

        void pair(String name) {
            SimpleLock lock = tryLock(name);
            if (lock == null) {
                throw new IllegalStateException("ShedLock lock " + name + " is held");
            }
            lock.unlock();
        }

        @Override
        public void close() throws Exception {
            if (provider instanceof AutoCloseable c) {
                c.close();
            }
            client.close();
        }
    }

    void run() throws Exception {
        uncontended();
        handoff();
    }

    private void uncontended() throws Exception {
        try (Provider ours = provider("locker", port); Provider theirs = provider("shedlock", port)) {
            List<Provider> both = List.of(ours, theirs);
            for (int threads : new int[]{1, 4}) {
                Map<Provider, Samples> rates = new LinkedHashMap<>();
                for (Provider p : both) {
                    rates.put(p, new Samples());
                    Bench.rate(threads, run.slice(), t -> i -> p.pair("shed-" + t)); // warm-up
                }
                for (int r = 0; r < run.rounds(); r++) {
                    for (int k = 0; k < both.size(); k++) {
                        Provider p = both.get((k + r) % both.size());
                        rates.get(p).add(Bench.rate(threads, run.slice(), t -> i -> p.pair("shed-" + t)));
                    }
                }
                run.table().add(new Row("ShedLock lock+unlock, uncontended, " + Run.threads(threads)
                        + " (LockerLockProvider on Redis)", "pairs/s", rates.get(ours), THEIRS, rates.get(theirs),
                        Better.HIGHER, null, false));
            }
        }
    }

    private void handoff() throws Exception {
        int runs = run.quick() ? 1 : 3;
        long durationMs = run.quick() ? 2_500 : 5_000;
        int hold = 5;
        Map<String, Samples> p50 = new LinkedHashMap<>();
        Map<String, Samples> p99 = new LinkedHashMap<>();
        for (int r = 0; r < runs; r++) {
            for (String c : r % 2 == 0 ? List.of("locker", "shedlock") : List.of("shedlock", "locker")) {
                long[] lat = PeerRows.handoffRun(port, "shedlock-handoff", c, hold, durationMs);
                p50.computeIfAbsent(c, k -> new Samples()).add(lat[lat.length / 2] / 1e6);
                p99.computeIfAbsent(c, k -> new Samples()).add(lat[(int) (lat.length * 0.99)] / 1e6);
            }
        }
        String w = "ShedLock handoff between 2 JVMs polling every " + Peer.SHEDLOCK_POLL_MS + " ms, hold " + hold
                + " ms";
        run.table().add(new Row(w + ", p50 (" + runs + " runs)", "ms", p50.get("locker"), THEIRS,
                p50.get("shedlock"), Better.LOWER, null, false));
        run.table().add(new Row(w + ", p99 (" + runs + " runs)", "ms", p99.get("locker"), THEIRS,
                p99.get("shedlock"), Better.LOWER, null, false));
    }
}
