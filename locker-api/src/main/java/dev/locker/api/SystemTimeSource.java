package dev.locker.api;

import java.time.Duration;
import java.time.Instant;

/** The JVM's clocks: {@link Instant#now()}, {@link System#nanoTime()}, {@link Thread#sleep}. */
final class SystemTimeSource implements TimeSource {

    static final SystemTimeSource INSTANCE = new SystemTimeSource();

    private SystemTimeSource() {
    }

    @Override
    public Instant now() {
        return Instant.now();
    }

    @Override
    public long nanoTime() {
        return System.nanoTime();
    }

    @Override
    public void sleep(Duration d) throws InterruptedException {
        if (d.isNegative() || d.isZero()) {
            return;
        }
        Thread.sleep(d.toMillis(), d.toNanosPart() % 1_000_000);
    }

    @Override
    public String toString() {
        return "system clock";
    }
}
