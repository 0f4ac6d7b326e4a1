package dev.locker.testkit;

import dev.locker.api.TimeSource;

import java.time.Duration;
import java.time.Instant;

/**
 * Another process's view of a shared clock: its wall clock is off by a skew (its monotonic clock is not), which a test
 * may {@link #step} as NTP or an operator would.
 */
public final class OffsetClock implements TimeSource {

    private final TimeSource base;
    private volatile Duration skew;

    public OffsetClock(TimeSource base, Duration skew) {
        this.base = base;
        this.skew = skew;
    }

    /** Steps this process's wall clock by {@code d}, forwards or backwards; its monotonic clock does not move. */
    public void step(Duration d) {
        skew = skew.plus(d);
    }

    @Override
    public Instant now() {
        return base.now().plus(skew);
    }

    @Override
    public long nanoTime() {
        return base.nanoTime();
    }

    @Override
    public void sleep(Duration d) throws InterruptedException {
        base.sleep(d);
    }

    @Override
    public String toString() {
        return base + " skewed by " + skew;
    }
}
