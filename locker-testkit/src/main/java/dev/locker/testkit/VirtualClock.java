package dev.locker.testkit;

import dev.locker.api.TimeSource;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A clock for protocol tests: time stands still until a test {@link #advance advances} it or code sleeps, and
 * sleeping advances it at once instead of waiting. Wall clock and monotonic clock move together, unless a test
 * {@link #stepWallClock steps} the wall clock alone. Thread-safe.
 */
public final class VirtualClock implements TimeSource {

    private final AtomicLong nanos;
    private final AtomicLong wallStepNanos = new AtomicLong();
    private final Instant epoch;

    public VirtualClock(Instant start) {
        this.epoch = start;
        this.nanos = new AtomicLong();
    }

    /** Starts at 2026-01-01T00:00:00Z. */
    public VirtualClock() {
        this(Instant.parse("2026-01-01T00:00:00Z"));
    }

    @Override
    public Instant now() {
        return epoch.plusNanos(nanos.get() + wallStepNanos.get());
    }

    @Override
    public long nanoTime() {
        return nanos.get();
    }

    /** Advances time by {@code d} without waiting (and yields, so that other threads see progress). */
    @Override
    public void sleep(Duration d) throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException();
        }
        if (!d.isNegative() && !d.isZero()) {
            nanos.addAndGet(d.toNanos());
        }
        Thread.yield();
    }

    public void advance(Duration d) {
        if (d.isNegative()) {
            throw new IllegalArgumentException("time only moves forward; was " + d);
        }
        nanos.addAndGet(d.toNanos());
    }

    /**
     * Steps the wall clock only, forwards or backwards (NTP, an operator, a resumed VM); the monotonic clock does not
     * move. Wall clock and monotonic clock no longer agree afterwards, as on a real host.
     */
    public void stepWallClock(Duration step) {
        wallStepNanos.addAndGet(step.toNanos());
    }

    @Override
    public String toString() {
        return "virtual clock at " + now();
    }
}
