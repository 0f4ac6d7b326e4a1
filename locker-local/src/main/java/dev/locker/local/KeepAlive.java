package dev.locker.local;

import dev.locker.api.LockLost;
import dev.locker.api.LockerConfig;
import dev.locker.api.LossReason;
import dev.locker.api.TimeSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The background work of one locker, created the first time it is needed and stopped by the locker's close:
 * keep-alive renewals of the transactions that asked for them, the early lost signal of watched holds, and telling
 * lost-listeners (on a thread of their own, so that a slow listener delays no renewal and no lock call).
 *
 * <p>A kept-alive transaction is renewed every third of the expiry, in place (same claim, same token); a failed
 * renewal is retried sooner. A watched hold (one with a listener, or kept alive) that reaches its deadline less a
 * margin (a tenth of the expiry, at most 5 s) without a successful renewal is marked lost ({@link LossReason#EXPIRED})
 * then, before its validity ends, so its holder can stop writing in time. Keep-alive stops the moment the transaction
 * is released: a renewal in flight then finds its hold released and withdraws nothing of anybody else's.
 */
final class KeepAlive implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(KeepAlive.class);
    private static final AtomicLong THREADS = new AtomicLong();

    private final AbstractLocker<?> locker;
    private final TimeSource time;
    private final long periodNanos;
    private final long marginNanos;
    private final ScheduledThreadPoolExecutor scheduler;
    private final ScheduledThreadPoolExecutor watchdogScheduler;
    private final ExecutorService notifier;
    private final ConcurrentHashMap<Identity, Task> tasks = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<Hold, ScheduledFuture<?>> watchdogs = new ConcurrentHashMap<>();

    KeepAlive(AbstractLocker<?> locker, LockerConfig config, TimeSource time) {
        this.locker = locker;
        this.time = time;
        long expiry = config.expiry().toNanos();
        this.periodNanos = Math.max(1, expiry / 3);
        this.marginNanos = Math.max(1, Math.min(expiry / 10, Duration.ofSeconds(5).toNanos()));
        long n = THREADS.incrementAndGet();
        this.scheduler = new ScheduledThreadPoolExecutor(1, r -> daemon(r, "locker-keepalive-" + n));
        this.scheduler.setRemoveOnCancelPolicy(true);
        // apart from renewals: a renewal blocked on an unreachable backend must not delay the early lost signal
        this.watchdogScheduler = new ScheduledThreadPoolExecutor(1, r -> daemon(r, "locker-deadline-watch-" + n));
        this.watchdogScheduler.setRemoveOnCancelPolicy(true);
        this.notifier = new ThreadPoolExecutor(1, 1, 0, TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(),
                r -> daemon(r, "locker-lost-listeners-" + n));
    }

    private static Thread daemon(Runnable r, String name) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        return t;
    }

    /** Renews {@code tx}'s holds in the background until {@link #stop} (or they are lost). */
    void start(Object tx, Supplier<List<Hold>> holds) {
        Identity id = new Identity(tx);
        Task task = new Task(id, holds);
        if (tasks.putIfAbsent(id, task) == null) {
            task.schedule(task.nextDelay());
        }
    }

    void stop(Object tx) {
        Task t = tasks.remove(new Identity(tx));
        if (t != null) {
            t.cancel();
        }
    }

    /** Runs {@code task} once after {@code delay} on the keep-alive thread (backends' background retries). */
    void later(Runnable task, Duration delay) {
        try {
            scheduler.schedule(task, delay.toNanos(), TimeUnit.NANOSECONDS);
        } catch (java.util.concurrent.RejectedExecutionException closed) {
            // the locker is closing
        }
    }

    private boolean watched(Hold hold) {
        return hold.hasListeners() || tasks.containsKey(new Identity(hold.tx));
    }

    /** Arms (again) the early lost signal of {@code hold}, if it has listeners or is kept alive. */
    void watch(Hold hold) {
        if (!watched(hold)) {
            return;
        }
        Hold.State s = hold.state();
        if (s.isFinal() || watchdogScheduler.isShutdown()) {
            return;
        }
        // at least 1 ms apart: a virtual clock standing just outside the margin must not spin this thread
        long delay = Math.max(Duration.ofMillis(1).toNanos(), s.deadlineNanos() - marginNanos - time.nanoTime());
        try {
            ScheduledFuture<?> f = watchdogScheduler.schedule(() -> fire(hold), Math.max(0, delay), TimeUnit.NANOSECONDS);
            ScheduledFuture<?> old = watchdogs.put(hold, f);
            if (old != null) {
                old.cancel(false);
            }
        } catch (java.util.concurrent.RejectedExecutionException closed) {
            // the locker is closing
        }
    }

    private void fire(Hold hold) {
        Hold.State s = hold.state();
        if (s.isFinal() || !watched(hold)) { // lost, released, or neither listened to nor kept alive any more
            watchdogs.remove(hold);
            return;
        }
        long left = s.deadlineNanos() - time.nanoTime();
        if (s.status() == null || left > marginNanos) {
            watch(hold); // still being written, renewed meanwhile, or a virtual clock that has not moved: look again then
            return;
        }
        watchdogs.remove(hold);
        if (!hold.loseIf(s, LossReason.EXPIRED, "no successful renewal; the claim's validity ends in "
                + Duration.ofNanos(Math.max(0, left)) + " by this process's monotonic clock")) {
            watch(hold); // renewed (or lost) while we judged: judge the new state
        }
    }

    /** Tells each listener of a loss, once, on the notifier thread. */
    void tell(List<Consumer<LockLost>> listeners, LockLost loss) {
        log.debug("Telling {} listener(s): {}", listeners.size(), loss);
        try {
            notifier.execute(() -> tellHere(listeners, loss));
        } catch (java.util.concurrent.RejectedExecutionException closed) {
            tellHere(listeners, loss); // the notifier is gone (the locker closed meanwhile): a loss is never dropped
        }
    }

    static void tellHere(List<Consumer<LockLost>> listeners, LockLost loss) {
        for (Consumer<LockLost> l : listeners) {
            try {
                l.accept(loss);
            } catch (RuntimeException e) {
                log.warn("A lost-lock listener failed for {}: {}", loss.lock(), e.toString(), e);
            }
        }
    }

    /** Stops renewals and watchdogs; listeners already told run to the end (briefly awaited). */
    @Override
    public void close() {
        tasks.values().forEach(Task::cancel);
        tasks.clear();
        scheduler.shutdownNow();
        watchdogScheduler.shutdownNow();
        notifier.shutdown();
        try {
            notifier.awaitTermination(1, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** One kept-alive transaction. */
    private final class Task implements Runnable {
        final Identity id;
        final Supplier<List<Hold>> holds;
        volatile ScheduledFuture<?> next;
        volatile boolean cancelled;

        Task(Identity id, Supplier<List<Hold>> holds) {
            this.id = id;
            this.holds = holds;
        }

        void schedule(long delayNanos) {
            if (cancelled) {
                return;
            }
            try {
                next = scheduler.schedule(this, Math.max(0, delayNanos), TimeUnit.NANOSECONDS);
            } catch (java.util.concurrent.RejectedExecutionException closed) {
                cancelled = true;
            }
        }

        void cancel() {
            cancelled = true;
            ScheduledFuture<?> f = next;
            if (f != null) {
                f.cancel(false);
            }
        }

        @Override
        public void run() {
            if (cancelled) {
                return;
            }
            boolean anyLive = false;
            boolean failed = false;
            long soonest = Long.MAX_VALUE;
            for (Hold hold : holds.get()) {
                Hold.State state = hold.state();
                if (state.isFinal()) {
                    continue;
                }
                if (state.status() == null) { // still being written: nothing to renew yet
                    anyLive = true;
                    continue;
                }
                try {
                    if (locker.renewQuietly(hold)) {
                        anyLive = true;
                    }
                } catch (IllegalStateException e) {
                    if (locker.isClosed()) {
                        cancelled = true;
                        tasks.remove(id, this);
                        return;
                    }
                    anyLive = true;
                    failed = true;
                    soonest = Math.min(soonest, hold.state().deadlineNanos() - time.nanoTime());
                } catch (RuntimeException e) { // unreachable, slow, refused, busy: retry sooner; the watchdog tells if too late
                    anyLive = true;
                    failed = true;
                    soonest = Math.min(soonest, hold.state().deadlineNanos() - time.nanoTime());
                    log.debug("Keep-alive renewal of {} failed, retrying: {}", hold.lock, e.toString());
                }
            }
            if (!anyLive) {
                tasks.remove(id, this);
                return;
            }
            schedule(failed ? Math.max(Duration.ofMillis(10).toNanos(), Math.min(periodNanos / 3, soonest / 4)) : nextDelay());
        }

        /**
         * A third of the expiry, but never later than halfway to the earliest point where a hold of the transaction
         * would be declared lost (a short validity, as wait-and-read-back leaves after its lock-wait, needs it sooner).
         */
        long nextDelay() {
            long now = time.nanoTime();
            long d = periodNanos;
            for (Hold h : holds.get()) {
                Hold.State s = h.state();
                if (!s.isFinal() && s.status() != null) {
                    d = Math.min(d, Math.max(Duration.ofMillis(10).toNanos(), (s.deadlineNanos() - marginNanos - now) / 2));
                }
            }
            return d;
        }
    }

    /** A transaction compared by identity. */
    private record Identity(Object tx) {
        @Override
        public boolean equals(Object o) {
            return o instanceof Identity && ((Identity) o).tx == tx;
        }

        @Override
        public int hashCode() {
            return System.identityHashCode(tx);
        }
    }
}
