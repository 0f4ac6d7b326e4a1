package dev.locker.janusgraph;

import dev.locker.api.Locker;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * The keep-alive of the claims of the transactions that are committing, each with an end. A transaction's claims are
 * kept alive from its check ({@link JanusGraphLocker#checkLocks}) until its release, and at most {@code span}
 * ({@code storage.write-time} plus the expiry) after its check or its latest data write attempt: JanusGraph retries a
 * failed write for up to {@code storage.write-time}, and each attempt comes back through
 * {@link LockerStoreManager#mutateMany} (or a store's {@code mutate}), which extends the end. A transaction left
 * neither committed nor rolled back after its check, or a data write that hangs, therefore keeps its locks for at most
 * that span plus one expiry, never for the life of the process.
 *
 * <p>Invariant: a transaction has an end here exactly while its keep-alive is on because of this class. Every change
 * of a transaction's end and of its keep-alive happens under this object's monitor (the locker's keep-alive calls
 * make no I/O), so a keep-alive switched off at an end that a concurrent write attempt just extended cannot happen.
 */
final class CommitKeepAlive implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(CommitKeepAlive.class);

    private final Locker locker;
    private final long spanNanos;
    private final Duration span;
    /** Each kept-alive transaction's end, on the monotonic clock. Guarded by this. */
    private final Map<Object, Long> ends = new HashMap<>();
    private final ScheduledExecutorService timer;

    CommitKeepAlive(Locker locker, Duration span) {
        this.locker = locker;
        this.span = span;
        this.spanNanos = span.toNanos();
        this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "locker-janusgraph-keepalive-ends");
            t.setDaemon(true);
            return t;
        });
    }

    /**
     * Keeps {@code tx}'s claims alive until {@code span} from now (switching the keep-alive on again if an earlier end
     * switched it off and the claims are still held), unless extended again or ended.
     */
    synchronized void extend(Object tx) {
        try {
            locker.keepAlive(tx, true);
        } catch (IllegalStateException e) {
            // a transaction with no lock has nothing to keep alive; a closed locker fails the next check
            log.debug("no keep-alive for {}: {}", tx, e.getMessage());
            return;
        }
        if (ends.put(tx, System.nanoTime() + spanNanos) == null) {
            schedule(tx, spanNanos);
        }
    }

    /** Forgets {@code tx}: its locks are being released (which ends their keep-alive). */
    synchronized void end(Object tx) {
        ends.remove(tx);
    }

    private void schedule(Object tx, long delayNanos) {
        try {
            timer.schedule(() -> due(tx), delayNanos, TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException closing) {
            // closed: the locker's own close ends every keep-alive
        }
    }

    private synchronized void due(Object tx) {
        Long end = ends.get(tx);
        if (end == null) {
            return; // released meanwhile
        }
        long left = end - System.nanoTime();
        if (left > 0) {
            schedule(tx, left); // extended meanwhile
            return;
        }
        ends.remove(tx);
        try {
            locker.keepAlive(tx, false);
        } catch (IllegalStateException e) {
            return; // released or closed meanwhile
        }
        log.warn("Stopped keeping the locks of {} alive: no data write for {} (storage.write-time plus the expiry) "
                + "since its check or its last write attempt, and not released (a transaction neither committed nor "
                + "rolled back?); its claims now expire", tx, span);
    }

    /** Number of transactions kept alive (for tests). */
    synchronized int size() {
        return ends.size();
    }

    @Override
    public void close() {
        timer.shutdownNow();
        synchronized (this) {
            ends.clear();
        }
    }
}
