package dev.locker.api;

import java.time.Duration;
import java.time.Instant;

/**
 * The one source of time every component uses: wall clock (claim timestamps and expiry), monotonic clock (local
 * deadlines) and sleeping. Tests inject a virtual clock whose sleep advances time at once.
 */
public interface TimeSource {

    /**
     * Wall-clock time.
     *
     * @return the current wall-clock time
     */
    Instant now();

    /**
     * Monotonic nanoseconds, for measuring intervals; unrelated to {@link #now()}.
     *
     * @return monotonic nanoseconds, for measuring intervals; unrelated to {@link #now()}
     */
    long nanoTime();

    /**
     * Sleeps for {@code d} (no-op when zero or negative).
     *
     * @param d the duration
     * @throws InterruptedException when interrupted while waiting
     */
    void sleep(Duration d) throws InterruptedException;

    /**
     * The real clocks of this JVM.
     *
     * @return the real clocks of this JVM
     */
    static TimeSource system() {
        return SystemTimeSource.INSTANCE;
    }
}
