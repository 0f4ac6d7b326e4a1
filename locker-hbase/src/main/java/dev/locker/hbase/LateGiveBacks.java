package dev.locker.hbase;

import dev.locker.spi.Uninterruptible;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;

/**
 * Claims that a grant given up on may still write, given back if it does. One driver's, tried by one daemon thread
 * that runs only while some are pending.
 *
 * <p>A grant whose answer never came may land later: a grant still waiting for its row lock until its RPC deadline,
 * one stalled past it whenever it resumes. Its cell lives at most its lifetime from its stamp. So each claim is tried
 * every pause until that lifetime is over, and dropped once freed. The thread ends when none is pending, or when the
 * connection closed.
 */
final class LateGiveBacks {

    /** Logs under the public class's name, the one users configure. */
    private static final Logger log = LoggerFactory.getLogger(HBaseLocker.class);

    /** One give-back to try: true when it freed the claim (nothing more to do). */
    interface Attempt {
        boolean freed();
    }

    private record Pending(Attempt attempt, long endNanos) {
    }

    private final long pauseMillis;
    private final BooleanSupplier closed;
    private final List<Pending> pending = new ArrayList<>();
    private boolean running;
    private int threadsStarted;

    /**
     * @param pauseMillis how long between tries: twice the RPC timeout
     * @param closed      true once the connection closed: no try can succeed then
     */
    LateGiveBacks(long pauseMillis, BooleanSupplier closed) {
        this.pauseMillis = pauseMillis;
        this.closed = closed;
    }

    /** Tries {@code attempt} every pause, until it freed the claim or {@code lifetimeMillis} more than one pause passed. */
    void add(Attempt attempt, long lifetimeMillis) {
        long end = System.nanoTime() + Math.multiplyExact(Math.addExact(pauseMillis,
                Math.min(lifetimeMillis, Long.MAX_VALUE / 4_000_000L)), 1_000_000L);
        synchronized (this) {
            pending.add(new Pending(attempt, end));
            if (running) {
                return;
            }
            running = true;
            threadsStarted++;
        }
        try {
            Thread t = new Thread(this::run, "locker-hbase-give-back");
            t.setDaemon(true);
            t.start();
        } catch (RuntimeException | Error e) {
            stopped(); // the next claim added starts one again
            throw e;
        }
    }

    private synchronized void drop(Pending p) {
        pending.remove(p);
    }

    private synchronized void stopped() {
        running = false;
    }

    /** How many claims wait to be tried: for tests. */
    synchronized int pending() {
        return pending.size();
    }

    /** How many threads this has started so far: for tests. */
    synchronized int threadsStarted() {
        return threadsStarted;
    }

    /** One try; a failure of any kind is a try that freed nothing, so the thread goes on with the others. */
    private static boolean freed(Attempt attempt) {
        try {
            return attempt.freed();
        } catch (RuntimeException e) {
            log.debug("A give-back failed; tried again after the pause: {}", e.toString());
            return false;
        }
    }

    private void run() {
        boolean ended = false;
        try {
            passes();
            ended = true; // passes cleared running itself, under the lock that add takes
        } finally {
            if (!ended) {
                stopped(); // after an Error: the next claim added starts a thread again
            }
        }
    }

    /** Passes over the pending claims, one every pause, until none is pending or the connection closed. */
    private void passes() {
        while (true) {
            Uninterruptible.sleep(pauseMillis);
            List<Pending> due;
            synchronized (this) {
                if (pending.isEmpty() || closed.getAsBoolean()) {
                    pending.clear();
                    running = false;
                    return;
                }
                due = new ArrayList<>(pending);
            }
            long now = System.nanoTime();
            List<Pending> done = new ArrayList<>();
            for (Pending p : due) {
                boolean freed;
                try {
                    freed = freed(p.attempt);
                } catch (Error e) {
                    drop(p); // the thread ends with the Error; the next one goes on without this claim
                    throw e;
                }
                if (freed || now - p.endNanos >= 0) {
                    done.add(p);
                }
            }
            synchronized (this) {
                pending.removeAll(done);
            }
        }
    }
}
