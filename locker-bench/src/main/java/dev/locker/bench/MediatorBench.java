package dev.locker.bench;

import dev.locker.api.KeyColumn;
import dev.locker.api.TimeSource;
import dev.locker.engine.LocalLockMediator;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * One uncontended take-and-release of a lock in the {@link LocalLockMediator} against the floor, a bare
 * {@link ConcurrentHashMap}. Each thread has its own lock; run at 1 and 2 threads.
 *
 * <ul>
 *   <li>{@link #mediatorOnly} against {@link #bareMapOnly}: the mediator's own work, {@code take} and
 *       {@code release} of the lock's record, against {@code putIfAbsent} and {@code remove} of a value; each thread
 *       makes its record (its value) once, outside the loop. The record is not the mediator's: it is the one object a
 *       locker keeps per claimed lock whatever arbitrates it (state, deadline, listeners, keep-alive slots).</li>
 *   <li>{@link #mediator} against {@link #bareMap}: the same with the entry made per pair, as an acquire makes it (a
 *       new hold record against a new {@code Object}): what the record's size costs on top.</li>
 *   <li>{@link #acquirePath}: {@link #mediator} plus what an acquire and its release pay around it, for the record:
 *       the clock reading that gives the hold its deadline ({@code writeLock} reads it whether or not another
 *       transaction ever looks at the entry; about 20-25 ns on a VM) and the hold's release, a compare-and-set of its
 *       state ({@code deleteLocks}: the transaction's record, which the lease and the keep-alive watch). Neither is
 *       the mediator's, and the floor has neither a deadline nor a state.</li>
 * </ul>
 *
 * <p>The runner measures them {@linkplain #paired paired}: every operation in one JVM, in short blocks that alternate
 * between the contenders, so that the JIT's choices and the machine's load fall on both sides of a ratio alike. On a
 * shared 2-CPU VM, JMH forks of one benchmark differ by 20-70% from fork to fork (JIT decisions, memory layout, other
 * tenants), more than the few nanoseconds this row measures; paired blocks give the ratio within a few percent. The
 * methods stay JMH benchmarks, for a profiler ({@code java -cp ... org.openjdk.jmh.Main MediatorBench -prof gc}).
 *
 * <p>The mediator's entry points are package-private, so they are reached through method handles (a constant handle
 * is inlined like a direct call).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class MediatorBench {

    private static final MethodHandle NEW_HOLD;
    private static final MethodHandle TAKE;
    private static final MethodHandle RELEASE;
    private static final MethodHandle HOLD_RELEASE;
    private static final int CAPACITY;

    static {
        try {
            Class<?> hold = Class.forName("dev.locker.engine.Hold");
            MethodHandles.Lookup in = MethodHandles.privateLookupIn(LocalLockMediator.class, MethodHandles.lookup());
            NEW_HOLD = in.findConstructor(hold, MethodType.methodType(void.class, KeyColumn.class, Object.class,
                    long.class, Consumer.class)).asType(MethodType.methodType(Object.class, KeyColumn.class,
                    Object.class, long.class, Consumer.class));
            TAKE = in.findVirtual(LocalLockMediator.class, "take", MethodType.methodType(boolean.class, hold))
                    .asType(MethodType.methodType(boolean.class, LocalLockMediator.class, Object.class));
            RELEASE = in.findVirtual(LocalLockMediator.class, "release", MethodType.methodType(void.class, hold))
                    .asType(MethodType.methodType(void.class, LocalLockMediator.class, Object.class));
            Class<?> state = Class.forName("dev.locker.engine.HoldStates$State");
            HOLD_RELEASE = in.findVirtual(hold, "release", MethodType.methodType(state))
                    .asType(MethodType.methodType(Object.class, Object.class));
            CAPACITY = (int) in.findStaticGetter(LocalLockMediator.class, "INITIAL_CAPACITY", int.class).invokeExact();
        } catch (Throwable e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private static final long MINUTE = 60_000_000_000L;

    private final LocalLockMediator mediator = LocalLockMediator.standalone("bench", TimeSource.system());
    private final ConcurrentHashMap<KeyColumn, Object> map = new ConcurrentHashMap<>(CAPACITY);
    private final AtomicInteger threads = new AtomicInteger();

    /** Each thread's own lock, transaction and deadline. */
    @State(Scope.Thread)
    public static class Mine {
        KeyColumn lock;
        final Object tx = new Object();
        /** The hold's deadline, read from the clock once (see the class comment): far enough ahead to stay live. */
        long deadline;
        /** A record (for {@link #mediatorOnly}) and a value (for {@link #bareMapOnly}) made once. */
        Object hold;
        final Object value = new Object();

        @Setup
        public void setUp(MediatorBench bench) {
            lock = KeyColumn.of("bench-" + bench.threads.incrementAndGet(), "c");
            deadline = System.nanoTime() + 60 * MINUTE;
            try {
                hold = NEW_HOLD.invokeExact(lock, tx, deadline, (Consumer) NO_LOSS);
            } catch (Throwable e) {
                throw new IllegalStateException(e);
            }
        }
    }

    private static final Consumer<Object> NO_LOSS = h -> { };

    /** What the mediator costs an acquire and its release: its entry, take, release. */
    @Benchmark
    public boolean mediator(Mine mine) throws Throwable {
        Object hold = NEW_HOLD.invokeExact(mine.lock, mine.tx, mine.deadline, (Consumer) NO_LOSS);
        boolean taken = (boolean) TAKE.invokeExact(mediator, hold);
        RELEASE.invokeExact(mediator, hold);
        return taken;
    }

    /** The same with what writeLock and deleteLocks do around it: a clock reading for the deadline, the hold's release. */
    @Benchmark
    public boolean acquirePath(Mine mine) throws Throwable {
        Object hold = NEW_HOLD.invokeExact(mine.lock, mine.tx, System.nanoTime() + MINUTE, (Consumer) NO_LOSS);
        boolean taken = (boolean) TAKE.invokeExact(mediator, hold);
        Object before = HOLD_RELEASE.invokeExact(hold);
        RELEASE.invokeExact(mediator, hold);
        return taken & before != null;
    }

    /** The floor: a bare map. */
    @Benchmark
    public boolean bareMap(Mine mine) {
        Object value = new Object();
        boolean taken = map.putIfAbsent(mine.lock, value) == null;
        return taken & map.remove(mine.lock, value);
    }

    /** The mediator's own work: take and release of a record made beforehand. */
    @Benchmark
    public boolean mediatorOnly(Mine mine) throws Throwable {
        boolean taken = (boolean) TAKE.invokeExact(mediator, mine.hold);
        RELEASE.invokeExact(mediator, mine.hold);
        return taken;
    }

    /** The floor of {@link #mediatorOnly}: a bare map, with a value made beforehand. */
    @Benchmark
    public boolean bareMapOnly(Mine mine) {
        boolean taken = map.putIfAbsent(mine.lock, mine.value) == null;
        return taken & map.remove(mine.lock, mine.value);
    }

    private static volatile boolean blackhole;

    /** The contenders of {@link #paired}, in the order of its result. */
    static final List<String> SIDES = List.of("mediatorOnly", "bareMapOnly", "mediator", "bareMap", "acquirePath");

    /**
     * Runs every contender in this JVM with {@code threads} threads, each on its own lock: rounds of one block of
     * {@code block} pairs per contender (all threads on the same contender at once, a barrier between blocks, the
     * order rotating from round to round), for {@code warmupNanos} unmeasured, then {@code measureNanos}. Returns each
     * contender's mean time per pair over the measured blocks, in nanoseconds, in the order of {@link #SIDES}. A mean,
     * not a median: a young collection falls into the block of whichever contender filled the heap, as often as its
     * share of the allocation, and what a pair costs includes it.
     */
    static double[] paired(int threads, long warmupNanos, long measureNanos, int block) throws Exception {
        MediatorBench bench = new MediatorBench();
        int sides = SIDES.size();
        long[][] nanos = new long[threads][sides];
        long[] blocks = new long[sides];
        CyclicBarrier barrier = new CyclicBarrier(threads);
        long start = System.nanoTime();
        long measureFrom = start + warmupNanos;
        long end = measureFrom + measureNanos;
        // the first thread decides at each round whether the run goes on and is measured; the others follow it
        java.util.concurrent.atomic.AtomicLong phase = new java.util.concurrent.atomic.AtomicLong();
        List<Thread> workers = new ArrayList<>();
        List<Throwable> failures = java.util.Collections.synchronizedList(new ArrayList<>());
        for (int t = 0; t < threads; t++) {
            int me = t;
            Mine mine = new Mine();
            mine.setUp(bench);
            Thread w = new Thread(() -> {
                try {
                    boolean sink = false;
                    for (int round = 0; ; round++) {
                        barrier.await();
                        if (me == 0) {
                            long now = System.nanoTime();
                            phase.set(now >= end ? 2 : now >= measureFrom ? 1 : 0);
                        }
                        barrier.await();
                        long p = phase.get();
                        if (p == 2) {
                            break;
                        }
                        for (int k = 0; k < sides; k++) {
                            int side = (k + round) % sides;
                            barrier.await();
                            long t0 = System.nanoTime();
                            sink ^= bench.run(side, mine, block);
                            long took = System.nanoTime() - t0;
                            if (p == 1) {
                                nanos[me][side] += took;
                                if (me == 0) {
                                    blocks[side]++;
                                }
                            }
                        }
                    }
                    blackhole = sink; // the results stay alive
                } catch (Throwable e) {
                    failures.add(e);
                    barrier.reset();
                }
            }, "mediator-bench-" + t);
            workers.add(w);
            w.start();
        }
        for (Thread w : workers) {
            w.join();
        }
        if (!failures.isEmpty()) {
            throw new IllegalStateException("a measuring thread failed", failures.get(0));
        }
        double[] perPair = new double[sides];
        for (int side = 0; side < sides; side++) {
            long sum = 0;
            for (int t = 0; t < threads; t++) {
                sum += nanos[t][side];
            }
            perPair[side] = (double) sum / threads / (blocks[side] * (long) block);
        }
        return perPair;
    }

    /** {@code n} pairs of contender {@code side} (see {@link #SIDES}); one loop per contender, each compiled alone. */
    private boolean run(int side, Mine mine, int n) throws Throwable {
        boolean r = false;
        switch (side) {
            case 0 -> {
                for (int i = 0; i < n; i++) {
                    r ^= mediatorOnly(mine);
                }
            }
            case 1 -> {
                for (int i = 0; i < n; i++) {
                    r ^= bareMapOnly(mine);
                }
            }
            case 2 -> {
                for (int i = 0; i < n; i++) {
                    r ^= mediator(mine);
                }
            }
            case 3 -> {
                for (int i = 0; i < n; i++) {
                    r ^= bareMap(mine);
                }
            }
            case 4 -> {
                for (int i = 0; i < n; i++) {
                    r ^= acquirePath(mine);
                }
            }
            default -> throw new IllegalArgumentException("no contender " + side);
        }
        return r;
    }

    /**
     * A fork of the runner ({@code MediatorBench <threads> <warmupMs> <measureMs>}): prints each contender's name and
     * time per pair in nanoseconds, one line each.
     */
    public static void main(String[] args) throws Exception {
        double[] perPair = paired(Integer.parseInt(args[0]), Long.parseLong(args[1]) * 1_000_000,
                Long.parseLong(args[2]) * 1_000_000, 20_000);
        for (int i = 0; i < perPair.length; i++) {
            System.out.println(SIDES.get(i) + " " + perPair[i]);
        }
    }
}
