package dev.locker.bench;

import dev.locker.api.KeyColumn;
import dev.locker.api.TimeSource;
import dev.locker.local.LocalLockMediator;
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
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * One uncontended take-and-release of a lock in the {@link LocalLockMediator} (what every acquire pays before any
 * I/O: a new hold record, {@code putIfAbsent}, {@code remove}) against the floor: {@code putIfAbsent} and
 * {@code remove} of a fresh value on a bare {@link ConcurrentHashMap}. Each thread has its own lock; run at 1 and 2
 * threads ({@code -t}). The mediator's entry points are package-private, so they are reached through method handles
 * (a constant handle is inlined like a direct call).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class MediatorBench {

    private static final MethodHandle NEW_HOLD;
    private static final MethodHandle TAKE;
    private static final MethodHandle RELEASE;
    private static final MethodHandle HOLD_RELEASE;

    static {
        try {
            Class<?> hold = Class.forName("dev.locker.local.Hold");
            MethodHandles.Lookup in = MethodHandles.privateLookupIn(LocalLockMediator.class, MethodHandles.lookup());
            NEW_HOLD = in.findConstructor(hold, MethodType.methodType(void.class, KeyColumn.class, Object.class,
                    long.class, Consumer.class)).asType(MethodType.methodType(Object.class, KeyColumn.class,
                    Object.class, long.class, Consumer.class));
            TAKE = in.findVirtual(LocalLockMediator.class, "take", MethodType.methodType(boolean.class, hold))
                    .asType(MethodType.methodType(boolean.class, LocalLockMediator.class, Object.class));
            RELEASE = in.findVirtual(LocalLockMediator.class, "release", MethodType.methodType(void.class, hold))
                    .asType(MethodType.methodType(void.class, LocalLockMediator.class, Object.class));
            Class<?> state = Class.forName("dev.locker.local.Hold$State");
            HOLD_RELEASE = in.findVirtual(hold, "release", MethodType.methodType(state))
                    .asType(MethodType.methodType(Object.class, Object.class));
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final LocalLockMediator mediator = LocalLockMediator.standalone("bench", TimeSource.system());
    private final ConcurrentHashMap<KeyColumn, Object> map = new ConcurrentHashMap<>();
    private final AtomicInteger threads = new AtomicInteger();

    /** Each thread's own lock. */
    @State(Scope.Thread)
    public static class Mine {
        KeyColumn lock;
        final Object tx = new Object();

        @Setup
        public void setUp(MediatorBench bench) {
            lock = KeyColumn.of("bench-" + bench.threads.incrementAndGet(), "c");
        }
    }

    private static final Consumer<Object> NO_LOSS = h -> { };

    /** What an acquire and a release cost in the mediator. */
    @Benchmark
    public boolean mediator(Mine mine) throws Throwable {
        Object hold = NEW_HOLD.invokeExact(mine.lock, mine.tx, System.nanoTime() + 60_000_000_000L,
                (Consumer) NO_LOSS);
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
}
