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

    private Punctuality() {
        watcher = new Thread(() -> {
            while (!stopped) {
                long before = System.nanoTime();
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

    /** The longest stall that overlapped {@code [from, to]} (System.nanoTime). */
    Duration worstStallBetween(long from, long to) {
        long worst = 0;
        for (long[] s : stalls) {
            if (s[1] - from >= 0 && to - s[0] >= 0) {
                worst = Math.max(worst, s[1] - s[0]);
            }
        }
        return Duration.ofNanos(worst);
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
     * Runs {@code run} with {@code expiry}. A signal that came late is excused only when this JVM stalled, between the
     * signal's due time (the validity's end less {@code marginOf.apply(expiry)}) and the signal, for at least half of
     * how far behind its due time the signal came (a stall may hit both hops: the watchdog's wake-up, the notifier);
     * the run then goes again with the expiry doubled. Any other late signal fails at once, as does the last run.
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
            Duration stall;
            try (Punctuality watch = watch()) {
                p = run.run(e);
                if (p.lateNanos() < 0) {
                    return;
                }
                long due = p.validUntil() - marginOf.apply(e).toNanos();
                behind = p.toldAt() - due;
                stall = watch.worstStallBetween(due, p.toldAt());
            }
            String said = "told " + p.lateNanos() / 1_000_000 + " ms after the validity ended, with expiry "
                    + e.toMillis() + " ms: " + behind / 1_000_000 + " ms behind its due time, while this JVM stalled "
                    + "at most " + stall.toMillis() + " ms in between";
            if (stall.toNanos() * 2 < behind || i == RUNS) {
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
