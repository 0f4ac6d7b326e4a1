package dev.locker.bench;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import org.redisson.api.RLock;
import redis.clients.jedis.Jedis;

import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * One process of the waking-at-scale row ({@link ScaleRows}), run as a {@link Peer}: {@code waking <locker|redisson>
 * <port> <peer> <peers> <workers> <locks> <holdMs>}. Once warmed up it counts itself ready ({@link #READY}), and
 * waits for the runner's start: {@link #START} holds "startAt windowFrom windowTo", epoch milliseconds.
 *
 * <p>Its workers take locks in turn with a partner in another process: worker {@code g} of all {@code peers * workers}
 * shares the locks {@code j} with {@code j % pairs == g % pairs} with worker {@code g + pairs} ({@code pairs} is half
 * the workers). Both go through their locks in step with the clock, one lock every {@link #PERIOD_MS} ms, and take the
 * current one again and again, holding it {@code holdMs}. So one waits while the other holds, and most releases hand
 * the lock over. Walking their locks each at its own pace, the two drifted apart and then never waited. Prints one
 * line per grant, {@code G lock asked granted released} ({@link System#nanoTime()}, one clock for the host's
 * processes), and {@code CPU ns}, this JVM's CPU time within the window.
 */
final class Waking {

    /** How long a pair stays on each of its locks before both go on to the next, by the host's clock. */
    static final int PERIOD_MS = 100;

    /** A counter of the processes warmed up; the runner starts the run once all are. */
    static final String READY = "bench:waking:ready";
    /** "startAt windowFrom windowTo" (epoch ms), set by the runner once every process is ready. */
    static final String START = "bench:waking:start";

    private Waking() {
    }

    static void run(String[] args) throws Exception {
        String contender = args[1];
        int port = Integer.parseInt(args[2]);
        int peer = Integer.parseInt(args[3]);
        int peers = Integer.parseInt(args[4]);
        int workers = Integer.parseInt(args[5]);
        int locks = Integer.parseInt(args[6]);
        int holdMs = Integer.parseInt(args[7]);
        int pairs = peers * workers / 2;
        Taker taker = contender.equals("locker") ? new Ours(port) : new Theirs(port);
        for (int i = 0; i < 200; i++) { // class loading and a first JIT pass, off the measured locks
            taker.take("warm-" + ProcessHandle.current().pid() + "-" + (i % 4)).run();
        }
        long[] times = awaitStart(port);
        long startAt = times[0];
        long windowFrom = times[1];
        long windowTo = times[2];
        Peer.sleepUntil(startAt);
        long origin = toNanos(startAt); // the same instant in every process: the pairs go through their locks in step
        long end = toNanos(windowTo);
        List<StringBuilder> outs = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        for (int k = 0; k < workers; k++) {
            int g = peer * workers + k;
            StringBuilder out = new StringBuilder();
            outs.add(out);
            Thread t = new Thread(() -> {
                List<Integer> mine = new ArrayList<>();
                for (int j = g % pairs; j < locks; j += pairs) {
                    mine.add(j);
                }
                try {
                    while (System.nanoTime() - end < 0) {
                        int j = mine.get((int) ((System.nanoTime() - origin) / (PERIOD_MS * 1_000_000L)
                                % mine.size()));
                        long asked = System.nanoTime();
                        Runnable release = taker.take("busy-" + j);
                        long granted = System.nanoTime();
                        Thread.sleep(holdMs);
                        long released = System.nanoTime();
                        release.run();
                        out.append("G ").append(j).append(' ').append(asked).append(' ').append(granted).append(' ')
                                .append(released).append('\n');
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "waking-" + g);
            threads.add(t);
        }
        threads.forEach(Thread::start);
        com.sun.management.OperatingSystemMXBean os =
                (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        Peer.sleepUntil(windowFrom);
        long cpu0 = os.getProcessCpuTime();
        Peer.sleepUntil(windowTo);
        long cpu = os.getProcessCpuTime() - cpu0;
        for (Thread t : threads) {
            t.join(60_000);
            if (t.isAlive()) {
                throw new IllegalStateException("worker " + t.getName() + " still waits 60 s after the window");
            }
        }
        StringBuilder all = new StringBuilder();
        outs.forEach(all::append);
        all.append("CPU ").append(cpu).append('\n');
        System.out.print(all);
    }

    /** Says this process is ready, and waits for the runner's start times (at most three minutes). */
    private static long[] awaitStart(int port) throws InterruptedException {
        try (Jedis j = Peers.admin(port, 10_000)) {
            j.incr(READY);
            long deadline = System.nanoTime() + Duration.ofMinutes(3).toNanos();
            while (System.nanoTime() - deadline < 0) {
                String v = j.get(START);
                if (v != null) {
                    String[] f = v.split(" ");
                    return new long[]{Long.parseLong(f[0]), Long.parseLong(f[1]), Long.parseLong(f[2])};
                }
                Thread.sleep(20);
            }
        }
        throw new IllegalStateException("no start from the runner within 3 minutes");
    }

    /** This host's monotonic clock at the epoch instant {@code epochMs} (within a millisecond). */
    static long toNanos(long epochMs) {
        return System.nanoTime() + (epochMs - System.currentTimeMillis()) * 1_000_000;
    }

    /** Takes a lock, waiting as long as it takes; returns its release. */
    private interface Taker {
        Runnable take(String lock) throws InterruptedException;
    }

    private static final class Ours implements Taker {
        private final RedisContender.Ours c;

        Ours(int port) {
            c = new RedisContender.Ours(port);
        }

        @Override
        public Runnable take(String lock) {
            Optional<Lease> lease = c.locker.tryAcquire(KeyColumn.named(lock), "waking", Duration.ofSeconds(30));
            return lease.orElseThrow(() -> new IllegalStateException(lock + " not granted within 30 s"))::close;
        }
    }

    private static final class Theirs implements Taker {
        private final RedisContender.Theirs c;

        Theirs(int port) {
            c = new RedisContender.Theirs(port);
        }

        @Override
        public Runnable take(String lock) {
            RLock l = c.redisson.getLock("redisson:" + lock);
            l.lock();
            return l::unlock;
        }
    }
}
