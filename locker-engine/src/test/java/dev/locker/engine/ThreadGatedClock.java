package dev.locker.engine;

import dev.locker.api.TimeSource;
import dev.locker.testkit.VirtualClock;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** A clock that runs a thread's hooks right after its readings, before the caller gets the value. */
final class ThreadGatedClock implements TimeSource {

    /** What one thread does after its wall reading and after its n-th monotonic reading (counted from 1). */
    static final class Hooks {
        volatile Runnable onWall;
        final Map<Integer, Runnable> onNanos = new ConcurrentHashMap<>();
        int nanoCalls;
    }

    private final VirtualClock clock;
    private final Map<Thread, Hooks> hooks = new ConcurrentHashMap<>();

    ThreadGatedClock(VirtualClock clock) {
        this.clock = clock;
    }

    Hooks hooksOf(Thread t) {
        return hooks.computeIfAbsent(t, x -> new Hooks());
    }

    @Override
    public Instant now() {
        Instant wall = clock.now();
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
