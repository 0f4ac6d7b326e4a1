package dev.locker.testkit;

import dev.locker.api.TimeSource;

import java.time.Duration;
import java.time.Instant;

/** Another process's view of a shared clock: its wall clock is off by a fixed skew (its monotonic clock is not). */
public final class OffsetClock implements TimeSource {

    private final TimeSource base;
    private final Duration skew;

    public OffsetClock(TimeSource base, Duration skew) {
        this.base = base;
        this.skew = skew;
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
