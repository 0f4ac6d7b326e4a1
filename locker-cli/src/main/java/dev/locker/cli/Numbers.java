package dev.locker.cli;

import java.time.Duration;
import java.util.Locale;

/** Numbers and durations on the command line; a bad one is a {@link UsageException} naming the option. */
final class Numbers {

    private Numbers() {
    }

    static long positive(String value, String option, String command) {
        try {
            long n = Long.parseLong(value.trim());
            if (n < 1) {
                throw new UsageException(option + " must be at least 1, was " + n, command);
            }
            return n;
        } catch (NumberFormatException e) {
            throw new UsageException(option + " must be a whole number, was '" + value + "'", command);
        }
    }

    /**
     * {@code 250ms}, {@code 2s}, {@code 1m}: a unit is required (a bare number is refused, not read as ms), and the
     * duration must be a whole number of milliseconds that fits a long (a larger one would overflow where it is used).
     */
    static Duration duration(String value, String option, String command) {
        String v = value.trim().toLowerCase(Locale.ROOT);
        Duration d = null;
        try {
            if (v.endsWith("ms")) {
                d = Duration.ofMillis(Long.parseLong(v.substring(0, v.length() - 2)));
            } else if (v.endsWith("s")) {
                d = Duration.ofSeconds(Long.parseLong(v.substring(0, v.length() - 1)));
            } else if (v.endsWith("m")) {
                d = Duration.ofMinutes(Long.parseLong(v.substring(0, v.length() - 1)));
            }
            if (d != null) {
                d.toMillis(); // throws ArithmeticException past Long.MAX_VALUE ms
                return d;
            }
        } catch (NumberFormatException e) {
            // the message below
        } catch (ArithmeticException e) {
            throw new UsageException(option + " is too large: '" + value + "'", command);
        }
        throw new UsageException(option + " must be a duration with a unit: 250ms, 2s or 1m (was '" + value + "')",
                command);
    }
}
