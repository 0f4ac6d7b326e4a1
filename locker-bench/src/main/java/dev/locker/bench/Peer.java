package dev.locker.bench;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import org.redisson.api.RLock;
import redis.clients.jedis.Jedis;

import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.Arrays;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The child JVMs of a run (started by {@link BenchMain}, never by hand):
 * <ul>
 *   <li>{@code held <contender> <port> <n> <threads> <measureMs>}: holds {@code n} locks, and prints the server's
 *       memory and this JVM's heap per held lock, and the uncontended pair rate before and while they are held;</li>
 *   <li>{@code handoff <contender> <port> <holdMs> <startAtEpochMs> <durationMs>}: takes one lock over and over
 *       (waiting for it while the other peer holds it), holds it {@code holdMs}, and prints each grant's and release's
 *       {@link System#nanoTime()} (one clock for all processes of a Linux host).</li>
 *   <li>{@code shedlock-handoff <locker|shedlock> <port> <holdMs> <startAtEpochMs> <durationMs>}: as handoff, through
 *       ShedLock's {@code LockProvider}, which takes no wait: a peer that finds the lock held tries again every
 *       {@link #SHEDLOCK_POLL_MS} ms, and after its release waits as long as it held before trying again;</li>
 *   <li>{@code registry-handoff <contender> <port> <holdMs> <durationMs>}: as handoff, through a Spring Integration
 *       {@code LockRegistry}, starting once both peers are warm ({@link RegistryRows#peer});</li>
 *   <li>{@code waking ...}: one of the processes of the waking-at-scale row ({@link Waking}).</li>
 * </ul>
 * The JVM ends with {@link Runtime#halt}: a million held locks are not released one by one; the server is flushed.
 */
public final class Peer {

    /** How often a ShedLock peer tries a lock it found held: ShedLock's providers take no wait. */
    static final int SHEDLOCK_POLL_MS = 1;

    private Peer() {
    }

    public static void main(String[] args) throws Exception {
        try {
            switch (args[0]) {
                case "held" -> held(args[1], Integer.parseInt(args[2]), Integer.parseInt(args[3]),
                        Integer.parseInt(args[4]), Integer.parseInt(args[5]));
                case "handoff" -> handoff(args[1], Integer.parseInt(args[2]), Integer.parseInt(args[3]),
                        Long.parseLong(args[4]), Long.parseLong(args[5]));
                case "shedlock-handoff" -> shedlockHandoff(args[1], Integer.parseInt(args[2]),
                        Integer.parseInt(args[3]), Long.parseLong(args[4]), Long.parseLong(args[5]));
                case "registry-handoff" -> RegistryRows.peer(args[1], Integer.parseInt(args[2]),
                        Integer.parseInt(args[3]), Long.parseLong(args[4]));
                case "waking" -> Waking.run(args);
                default -> throw new IllegalArgumentException("unknown peer mode " + args[0]);
            }
            System.out.flush();
            Runtime.getRuntime().halt(0);
        } catch (Throwable t) {
            t.printStackTrace();
            System.err.flush();
            Runtime.getRuntime().halt(1);
        }
    }

    private static void held(String contender, int port, int n, int threads, int measureMs) throws Exception {
        // equal settings: Redisson holds its locks with a 30-minute lease time and no watchdog, so Locker's leases live
        // 30 minutes too (their keep-alive then renews each one every 10 minutes, never while this measures)
        RedisContender c = switch (contender) {
            case "locker" -> new RedisContender.Ours(port, Duration.ofMinutes(30));
            case "redisson" -> new RedisContender.Theirs(port, Duration.ofSeconds(10));
            default -> RedisContender.of(contender, port);
        };
        // warmed up as the rows of the uncontended section are (a JIT-cold first slice ran at a third of the warm
        // rate and read as a slowdown "with none held" of 2x); each figure is the median of three slices
        for (int i = 0; i < 20_000; i++) {
            c.pair("warm-" + (i % 16));
        }
        double before = medianRate(c, "probe-a-", measureMs);
        long heap0 = usedHeap();
        long server0 = usedMemory(port);
        Object[] kept = new Object[n];
        AtomicInteger next = new AtomicInteger();
        long t0 = System.nanoTime();
        long giveUpAt = t0 + TimeUnit.SECONDS.toNanos(180);
        Thread[] ts = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            ts[t] = new Thread(() -> {
                for (int i; (i = next.getAndIncrement()) < n; ) {
                    if (System.nanoTime() - giveUpAt > 0) { // a contender that cannot hold them costs the run 3 min
                        throw new IllegalStateException("gave up: " + i + " of " + n + " held after 180 s");
                    }
                    kept[i] = c.hold("held-" + i);
                }
            });
            ts[t].start();
        }
        for (Thread t : ts) {
            t.join();
        }
        double acquireSeconds = (System.nanoTime() - t0) / 1e9;
        long server1 = usedMemory(port);
        long heap1 = usedHeap();
        for (int i = 0; i < 2_000; i++) { // the first pairs after a burst of holds settle (GC, caches) for all alike
            c.pair("probe-b-0");
        }
        double during = medianRate(c, "probe-b-", measureMs);
        System.out.printf(java.util.Locale.ROOT, "RESULT %d %.1f %.1f %.1f %.1f %.2f%n", n,
                (server1 - server0) / (double) n, (heap1 - heap0) / (double) n, before, during, acquireSeconds);
        if (kept.length > 0 && kept[kept.length - 1] == null) {
            throw new IllegalStateException("not all locks held");
        }
    }

    private static double medianRate(RedisContender c, String prefix, int measureMs) throws InterruptedException {
        double[] r = new double[3];
        for (int i = 0; i < r.length; i++) {
            r[i] = Bench.rate(1, Duration.ofMillis(Math.max(200, measureMs / 3)), t -> n -> c.pair(prefix + t));
        }
        Arrays.sort(r);
        return r[1];
    }

    private static void handoff(String contender, int port, int holdMs, long startAt, long durationMs)
            throws Exception {
        KeyColumn lock = KeyColumn.named("handoff");
        StringBuilder out = new StringBuilder();
        if (contender.equals("locker")) {
            RedisContender.Ours c = new RedisContender.Ours(port);
            for (int i = 0; i < 500; i++) {
                c.pair("warm-" + ProcessHandle.current().pid());
            }
            sleepUntil(startAt);
            long end = System.nanoTime() + durationMs * 1_000_000;
            while (System.nanoTime() - end < 0) {
                Optional<Lease> lease = c.locker.tryAcquire(lock, "handoff", Duration.ofSeconds(30));
                if (lease.isEmpty()) {
                    throw new IllegalStateException("not granted within 30 s");
                }
                long granted = System.nanoTime();
                Thread.sleep(holdMs);
                long released = System.nanoTime();
                lease.get().close();
                out.append(granted).append(' ').append(released).append('\n');
            }
        } else {
            RedisContender.Theirs c = new RedisContender.Theirs(port);
            for (int i = 0; i < 500; i++) {
                c.pair("warm-" + ProcessHandle.current().pid());
            }
            RLock l = c.redisson.getLock("redisson:handoff");
            sleepUntil(startAt);
            long end = System.nanoTime() + durationMs * 1_000_000;
            while (System.nanoTime() - end < 0) {
                l.lock();
                long granted = System.nanoTime();
                Thread.sleep(holdMs);
                long released = System.nanoTime();
                l.unlock();
                out.append(granted).append(' ').append(released).append('\n');
            }
        }
        System.out.print(out);
    }

    private static void shedlockHandoff(String contender, int port, int holdMs, long startAt, long durationMs)
            throws Exception {
        StringBuilder out = new StringBuilder();
        ShedLockRows.Provider p = ShedLockRows.provider(contender, port);
        for (int i = 0; i < 500; i++) {
            p.pair("warm-" + ProcessHandle.current().pid());
        }
        sleepUntil(startAt);
        long end = System.nanoTime() + durationMs * 1_000_000;
        while (System.nanoTime() - end < 0) {
            net.javacrumbs.shedlock.core.SimpleLock lock = p.tryLock("handoff");
            if (lock == null) {
                Thread.sleep(SHEDLOCK_POLL_MS);
                continue;
            }
            long granted = System.nanoTime();
            Thread.sleep(holdMs);
            long released = System.nanoTime();
            lock.unlock();
            out.append(granted).append(' ').append(released).append('\n');
            // the other peer's turn, as a scheduled task that just ran waits for its next run
            Thread.sleep(holdMs);
        }
        System.out.print(out);
    }

    static void sleepUntil(long epochMs) throws InterruptedException {
        long left = epochMs - System.currentTimeMillis();
        if (left > 0) {
            Thread.sleep(left);
        }
    }

    /** Heap in use after a full collection (several, until it settles). */
    static long usedHeap() throws InterruptedException {
        long last = Long.MAX_VALUE;
        for (int i = 0; i < 4; i++) {
            System.gc();
            Thread.sleep(100);
            long used = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
            if (Math.abs(last - used) < 64 * 1024) {
                return used;
            }
            last = used;
        }
        return last;
    }

    static long usedMemory(int port) {
        try (Jedis j = new Jedis("127.0.0.1", port)) {
            String info = j.info("memory");
            for (String line : info.split("\r\n")) {
                if (line.startsWith("used_memory:")) {
                    return Long.parseLong(line.substring("used_memory:".length()).trim());
                }
            }
        }
        throw new IllegalStateException("no used_memory in INFO memory");
    }
}
