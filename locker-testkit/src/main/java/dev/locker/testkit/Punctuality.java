package dev.locker.testkit;

import java.time.Duration;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.UnaryOperator;

/**
 * When this JVM stalled (woke a sleeping thread late) while a real-time scenario ran. A promise made in real time
 * ("told before the validity ends") holds only while the locker's own threads run: a run in which the signal came
 * late because this JVM stalled between its due time and the signal is no evidence either way, and
 * {@link #rerunWhileStalled} runs it again with a longer expiry. A signal later than the stalls explain fails at once.
 * The watch's own thread stands for the locker's: a stall that starves them both is what it sees.
 */
final class Punctuality implements AutoCloseable {

    private static final long TICK = TimeUnit.MILLISECONDS.toNanos(2);
    /** Oversleeping by less than this is not kept: no scheduler wakes a thread to the microsecond. */
    private static final long NOTED = TimeUnit.MILLISECONDS.toNanos(1);
    /** The most runs of one scenario: each stretched, each late only by what stalls explain. */
    private static final int RUNS = 4;

    /** Each stall as {from, to} (System.nanoTime): the watch should have woken at from, and woke at to. */
    private final Queue<long[]> stalls = new ConcurrentLinkedQueue<>();
    private final Thread watcher;
    private volatile boolean stopped;
    /** When the watch began its current wait: a stall it has not woken from yet counts from then. */
    private volatile long waitingSince;

    private Punctuality() {
        waitingSince = System.nanoTime();
        watcher = new Thread(() -> {
            while (!stopped) {
                long before = System.nanoTime();
                waitingSince = before;
                LockSupport.parkNanos(TICK);
                long after = System.nanoTime();
                if (after - before - TICK > NOTED) {
                    stalls.add(new long[]{before + TICK, after});
                }
            }
        }, "punctuality-watch");
        watcher.setDaemon(true);
        watcher.start();
    }

    /** Starts watching: until {@link #close()}, every stall is kept. */
    static Punctuality watch() {
        return new Punctuality();
    }

    /**
     * How long this JVM was stalled within {@code [from, to]} (System.nanoTime): every stall clipped to it, added up,
     * the one the watch has not woken from yet included.
     */
    Duration stalledBetween(long from, long to) {
        long total = 0;
        for (long[] s : stalls) {
            total += overlap(s[0], s[1], from, to);
        }
        long now = System.nanoTime();
        long since = waitingSince;
        if (now - since - TICK > NOTED) {
            total += overlap(since + TICK, now, from, to);
        }
        return Duration.ofNanos(total);
    }

    private static long overlap(long a, long b, long from, long to) {
        long start = a - from > 0 ? a : from;
        long end = b - to < 0 ? b : to;
        return Math.max(0, end - start);
    }

    @Override
    public void close() {
        stopped = true;
        watcher.interrupt();
    }

    /** A real-time promise's two instants (System.nanoTime): when the validity ended, and when the signal came. */
    record Promise(long validUntil, long toldAt) {

        /** How long after the validity ended the signal came; negative when in time. */
        long lateNanos() {
            return toldAt - validUntil;
        }
    }

    /** One run of a real-time scenario with its lease's expiry. */
    interface Run {
        Promise run(Duration expiry) throws Exception;
    }

    /**
     * Runs {@code run} with {@code expiry}. A signal that came late is excused only when this JVM's stalls between the
     * signal's due time (the validity's end less {@code marginOf.apply(expiry)}) and the signal add up to how far
     * behind its due time the signal came, less half the margin (the locker's own work on a running JVM); the run then
     * goes again with the expiry doubled. Any other late signal fails at once, as does the last run.
     *
     * @param what     the promise, for the failure message
     * @param expiry   the first run's lease expiry
     * @param marginOf the margin before the validity's end at which the signal is due, for an expiry
     * @param run      one run
     */
    static void rerunWhileStalled(String what, Duration expiry, UnaryOperator<Duration> marginOf, Run run)
            throws Exception {
        StringBuilder earlier = new StringBuilder();
        Duration e = expiry;
        for (int i = 1; ; i++) {
            Promise p;
            long behind;
            long margin = marginOf.apply(e).toNanos();
            Duration stalled;
            try (Punctuality watch = watch()) {
                p = run.run(e);
                if (p.lateNanos() < 0) {
                    return;
                }
                long due = p.validUntil() - margin;
                behind = p.toldAt() - due;
                stalled = watch.stalledBetween(due, p.toldAt());
            }
            String said = "told " + p.lateNanos() / 1_000_000 + " ms after the validity ended, with expiry "
                    + e.toMillis() + " ms: " + behind / 1_000_000 + " ms behind its due time, of which this JVM was "
                    + "stalled " + stalled.toMillis() + " ms";
            if (stalled.toNanos() + margin / 2 < behind || i == RUNS) {
                throw new AssertionError(what + ": " + said
                        + (earlier.length() == 0 ? "" : "; earlier runs, each late by what stalls explain:" + earlier));
            }
            earlier.append(' ').append(said).append(';');
            System.out.printf("[conformance] %s: %s (a loaded machine): run again with the expiry doubled%n", what,
                    said);
            e = e.multipliedBy(2);
        }
    }
}
