package dev.locker.engine;

import dev.locker.api.TimeSource;
import dev.locker.testkit.VirtualClock;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A virtual clock for the judging tests: a thread's hooks run right after its chosen readings, before the caller gets
 * the value, and every wall reading can be made to stand apart from the monotonic readings around it (a preempted
 * thread).
 */
final class ThreadGatedClock implements TimeSource {

    /** What one thread does after its wall reading and after its n-th monotonic reading (counted from 1). */
    static final class Hooks {
        volatile Runnable onWall;
        final Map<Integer, Runnable> onNanos = new ConcurrentHashMap<>();
        int nanoCalls;
    }

    private final VirtualClock clock;
    private final Map<Thread, Hooks> hooks = new ConcurrentHashMap<>();
    /** How long each wall reading is taken after its call: the thread lost its core before reading. */
    volatile Duration wallTakenLate = Duration.ZERO;
    /** How long each wall reading reaches its caller after it was taken: the thread lost its core after reading. */
    volatile Duration wallReturnedLate = Duration.ZERO;

    ThreadGatedClock(VirtualClock clock) {
        this.clock = clock;
    }

    Hooks hooksOf(Thread t) {
        return hooks.computeIfAbsent(t, x -> new Hooks());
    }

    /** Runs {@code r} after {@code t}'s {@code n}-th monotonic reading, counted from its first. */
    void onNanos(Thread t, int n, Runnable r) {
        hooksOf(t).onNanos.put(n, r);
    }

    /** Runs {@code r} after the calling thread's {@code n}-th monotonic reading from now. */
    void afterNanos(int n, Runnable r) {
        Hooks h = hooksOf(Thread.currentThread());
        h.onNanos.put(h.nanoCalls + n, r);
    }

    /** Runs {@code r} after the calling thread's next wall reading. */
    void afterWall(Runnable r) {
        hooksOf(Thread.currentThread()).onWall = r;
    }

    /** Whether every hook set ran: a test whose hook never ran proved nothing. */
    boolean allHooksRan() {
        return hooks.values().stream().allMatch(h -> h.onWall == null && h.onNanos.isEmpty());
    }

    @Override
    public Instant now() {
        clock.advance(wallTakenLate);
        Instant wall = clock.now();
        clock.advance(wallReturnedLate);
        Hooks h = hooks.get(Thread.currentThread());
        if (h != null && h.onWall != null) {
            Runnable r = h.onWall;
            h.onWall = null;
            r.run();
        }
        return wall;
    }

    @Override
    public long nanoTime() {
        long nanos = clock.nanoTime();
        Hooks h = hooks.get(Thread.currentThread());
        if (h != null) {
            Runnable r = h.onNanos.remove(++h.nanoCalls);
            if (r != null) {
                r.run();
            }
        }
        return nanos;
    }

    @Override
    public void sleep(Duration d) throws InterruptedException {
        clock.sleep(d);
    }
}
