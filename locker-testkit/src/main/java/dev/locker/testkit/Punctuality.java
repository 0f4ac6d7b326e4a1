package dev.locker.testkit;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * How late this JVM woke a sleeping thread while a real-time scenario ran. A promise made in real time ("told
 * before the validity ends") holds only while the locker's own threads run within its margin: a run in which this
 * JVM stalled longer is no evidence either way, and {@link #rerunWhileStalled} runs it again with a longer expiry.
 */
final class Punctuality implements AutoCloseable {

    private static final long TICK = TimeUnit.MILLISECONDS.toNanos(2);
    /** The most runs of one scenario: each stretched, each stalled beyond its own margin. */
    private static final int RUNS = 4;

    private final AtomicLong worst = new AtomicLong();
    private final Thread watcher;
    private volatile boolean stopped;

    private Punctuality() {
        watcher = new Thread(() -> {
            while (!stopped) {
                long before = System.nanoTime();
                LockSupport.parkNanos(TICK);
                long late = System.nanoTime() - before - TICK;
                worst.accumulateAndGet(late, Math::max);
            }
        }, "punctuality-watch");
        watcher.setDaemon(true);
        watcher.start();
    }

    /** Starts watching: until {@link #close()}, the longest stall is kept. */
    static Punctuality watch() {
        return new Punctuality();
    }

    /** The longest this JVM overslept a 2 ms wait since the watch began. */
    Duration worstStall() {
        return Duration.ofNanos(Math.max(0, worst.get()));
    }

    @Override
    public void close() {
        stopped = true;
        watcher.interrupt();
    }

    /** One run of a real-time scenario with its lease's expiry; returns whether its promise was kept. */
    interface Run {
        boolean keptWith(Duration expiry) throws Exception;
    }

    /**
     * Runs {@code run} with {@code expiry}; a run whose promise was broken while this JVM stalled for more than a
     * quarter of {@code marginOf.apply(expiry)} (a loaded machine) runs again with the expiry doubled: a few such
     * stalls in a row (the watchdog's wake-up, the hop to a notifier thread) add up to the margin. A broken promise
     * without such a stall fails at once, as does the last run.
     *
     * @param what     the promise, for the failure message
     * @param expiry   the first run's lease expiry
     * @param marginOf the margin the promise leaves the locker's threads, for an expiry
     * @param run      one run
     */
    static void rerunWhileStalled(String what, Duration expiry,
                                  java.util.function.UnaryOperator<Duration> marginOf, Run run) throws Exception {
        StringBuilder stalls = new StringBuilder();
        Duration e = expiry;
        for (int i = 1; ; i++) {
            boolean kept;
            Duration stall;
            try (Punctuality p = watch()) {
                kept = run.keptWith(e);
                stall = p.worstStall();
            }
            if (kept) {
                return;
            }
            Duration margin = marginOf.apply(e);
            if (stall.compareTo(margin.dividedBy(4)) <= 0 || i == RUNS) {
                throw new AssertionError(what + ": broken with expiry " + e + " while this JVM stalled at most "
                        + stall.toMillis() + " ms (the margin is " + margin.toMillis() + " ms)"
                        + (stalls.length() == 0 ? "" : "; earlier runs, each stalled past its margin:" + stalls));
            }
            stalls.append(' ').append(e.toMillis()).append(" ms expiry, ").append(stall.toMillis()).append(" ms stall;");
            System.out.printf("[conformance] %s: broken with expiry %d ms while this JVM stalled %d ms, past the "
                    + "%d ms margin (a loaded machine): run again with the expiry doubled%n", what, e.toMillis(),
                    stall.toMillis(), margin.toMillis());
            e = e.multipliedBy(2);
        }
    }
}
