package dev.locker.bench;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntConsumer;
import java.util.function.IntFunction;
import java.util.stream.Stream;

/** Measuring helpers: operations per second on N threads, bytes allocated per operation. */
final class Bench {

    private Bench() {
    }

    /**
     * Runs {@code threads} threads for {@code d}, each calling its own operation ({@code op.apply(thread)}) with a
     * counter, and returns the operations per second of all of them together. A failure of any operation fails it.
     */
    static double rate(int threads, Duration d, IntFunction<IntConsumer> op) throws InterruptedException {
        long[] counts = new long[threads * 8]; // padded: one cache line per thread
        AtomicReference<Throwable> failure = new AtomicReference<>();
        CountDownLatch ready = new CountDownLatch(threads);
        CountDownLatch go = new CountDownLatch(1);
        long[] end = new long[1];
        Thread[] ts = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            int me = t;
            IntConsumer o = op.apply(t);
            ts[t] = new Thread(() -> {
                ready.countDown();
                try {
                    go.await();
                    long stop = end[0];
                    int i = 0;
                    while (System.nanoTime() - stop < 0) {
                        o.accept(i++);
                    }
                    counts[me * 8] = i;
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }, "bench-" + t);
            ts[t].start();
        }
        ready.await();
        long start = System.nanoTime();
        end[0] = start + d.toNanos();
        go.countDown();
        for (Thread t : ts) {
            t.join();
        }
        long elapsed = System.nanoTime() - start;
        if (failure.get() != null) {
            throw new IllegalStateException("a benchmark operation failed: " + failure.get(), failure.get());
        }
        long total = 0;
        for (int t = 0; t < threads; t++) {
            total += counts[t * 8];
        }
        return total / (elapsed / 1e9);
    }

    /**
     * Bytes allocated per call of {@code op}, on every thread of this JVM (a client's I/O threads included), over
     * {@code n} calls on this thread.
     */
    static double allocatedPerOp(int n, IntConsumer op) {
        com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long before = allAllocated(mx);
        for (int i = 0; i < n; i++) {
            op.accept(i);
        }
        return (allAllocated(mx) - before) / (double) n;
    }

    /**
     * CPU time of this whole JVM (every thread: a client's I/O and keep-alive threads, the JIT and the GC) per call of
     * {@code op}, in ns, over {@code n} calls on this thread. The servers run in processes of their own.
     */
    static double processCpuPerOp(int n, Runnable op) {
        com.sun.management.OperatingSystemMXBean os =
                (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        long before = os.getProcessCpuTime();
        for (int i = 0; i < n; i++) {
            op.run();
        }
        return (os.getProcessCpuTime() - before) / (double) n;
    }

    private static long allAllocated(com.sun.management.ThreadMXBean mx) {
        long sum = 0;
        for (long b : mx.getThreadAllocatedBytes(mx.getAllThreadIds())) {
            sum += Math.max(0, b);
        }
        return sum;
    }

    /**
     * JanusGraph's three phases on {@code lock} in a fresh transaction (writeLock, checkLocks, deleteLocks; no lease,
     * so no keep-alive), with the fencing token read.
     */
    static void threePhases(dev.locker.api.Locker locker, dev.locker.api.KeyColumn lock) {
        Object tx = new Object();
        try {
            locker.writeLock(lock, tx);
            locker.checkLocks(tx);
            if (locker.fencingToken(lock, tx) <= 0) {
                throw new IllegalStateException("no token");
            }
        } finally {
            locker.deleteLocks(tx);
        }
    }

    /** Deletes {@code dir} and everything under it (a section's scratch directory), as far as it can. */
    static void deleteTree(Path dir) throws IOException {
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }
}
