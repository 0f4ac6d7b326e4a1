package dev.locker.spi;

import java.time.Duration;

/**
 * The deadline a driver gives a claim: until when, on the locker's monotonic clock, its holder may believe in it.
 * Sums of readings and durations saturate, so a century-long expiry never overflows.
 */
public final class Deadlines {

    private Deadlines() {
    }

    /**
     * The deadline of a claim whose lifetime on the deciding clock is {@code validity}. One percent of the validity is
     * kept back for the rate at which two hosts' clocks may drift apart meanwhile.
     *
     * @param startNanos a monotonic reading of the locker's time source, taken before the request that wrote or
     *                   renewed the claim
     * @param validity   how long the claim lives on the clock that decides its expiry, less any margin the protocol needs
     * @return the deadline, in monotonic nanoseconds
     */
    public static long of(long startNanos, Duration validity) {
        long nanos = saturatedNanos(validity);
        return startNanos + Math.max(0, nanos - nanos / 100);
    }

    /**
     * {@code d} in nanoseconds, saturated at a quarter of the long range (about 73 years) either way. A monotonic
     * reading plus it then cannot overflow, even for an expiry of a century.
     *
     * @param d a duration
     * @return its nanoseconds, saturated
     */
    public static long saturatedNanos(Duration d) {
        try {
            return Math.max(Long.MIN_VALUE / 4, Math.min(Long.MAX_VALUE / 4, d.toNanos()));
        } catch (ArithmeticException overflow) {
            return d.isNegative() ? Long.MIN_VALUE / 4 : Long.MAX_VALUE / 4;
        }
    }
}
