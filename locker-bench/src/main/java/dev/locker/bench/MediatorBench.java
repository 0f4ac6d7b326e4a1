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
 * One uncontended take-and-release of a lock in the {@link LocalLockMediator} against the floor, a bare
 * {@link ConcurrentHashMap}. Each thread has its own lock; run at 1 and 2 threads ({@code -t}).
 *
 * <ul>
 *   <li>{@link #mediator}: the mediator's own work for one acquire and its release: its entry (a new hold record),
 *       {@code take} and {@code release}.</li>
 *   <li>{@link #bareMap}, the floor: its entry (a new value), {@code putIfAbsent} and {@code remove}, on a map of the
 *       same initial capacity as the mediator's (like with like: the table's size decides which locks share a cache
 *       line of it, see {@code LocalLockMediator.INITIAL_CAPACITY}).</li>
 *   <li>{@link #acquirePath}: {@link #mediator} plus what an acquire and its release pay around it, for the record:
 *       the clock reading that gives the hold its deadline ({@code writeLock} reads it whether or not another
 *       transaction ever looks at the entry; about 20-25 ns on a VM) and the hold's release, a compare-and-set of its
 *       state ({@code deleteLocks}: the transaction's record, which the lease and the keep-alive watch). Neither is
 *       the mediator's, and the floor has neither a deadline nor a state, so the target row leaves both out.</li>
 * </ul>
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

        @Setup
        public void setUp(MediatorBench bench) {
            lock = KeyColumn.of("bench-" + bench.threads.incrementAndGet(), "c");
            deadline = System.nanoTime() + 60 * MINUTE;
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
}
