package dev.locker.bench;

import java.time.Duration;

/**
 * What every section of one run shares: quick or full, rounds per row, the length of a timed slice, and the one table
 * every row goes to.
 */
record Run(boolean quick, int rounds, Duration slice, Table table) {

    static Run of(boolean quick) {
        return new Run(quick, quick ? 3 : 5, Duration.ofMillis(quick ? 700 : 2000), new Table());
    }

    /** {@code threads} as a row says it: "1 thread", "4 threads". */
    static String threads(int threads) {
        return threads + " thread" + (threads > 1 ? "s" : "");
    }
}
