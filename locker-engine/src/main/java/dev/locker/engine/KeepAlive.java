package dev.locker.engine;

import dev.locker.api.LockLost;
import dev.locker.api.LockerConfig;
import dev.locker.api.LossReason;
import dev.locker.api.TimeSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * The background work of one locker, created the first time it is needed and stopped by the locker's close:
 * keep-alive renewals of the transactions that asked for them, the early lost signal of watched holds, and telling
 * lost-listeners (on threads of their own, so that a slow listener delays no renewal, no lock call and no other
 * transaction's lost signal).
 *
 * <p>A kept-alive transaction is renewed every third of its shortest lease's expiry, in place (same claim, same
 * token); a failed renewal is retried sooner. A watched hold (one with a listener, or kept alive) that reaches its
 * deadline less a margin (a tenth of its own expiry, at most 5 s) without a successful renewal is marked lost
 * ({@link LossReason#EXPIRED}) then, before its validity ends, so its holder can stop writing in time. Keep-alive
 * stops the moment the transaction is released: a renewal in flight then finds its hold released and withdraws
 * nothing of anybody else's.
 *
 * <h2>Renewing on a small pool</h2>
 * The keep-alive thread only tells when a renewal falls due; the renewal itself runs on one of {@value #RENEWERS}
 * threads. A renewal stalled on one server (a master that stays connected but never answers) then holds one thread,
 * and the locker's other transactions go on being renewed on the others. Past that many stalls at once, renewals
 * wait for a thread: the bound keeps a locker's threads few, and the watchdog still tells a late renewal's loss.
 *
 * <h2>Telling lost-listeners</h2>
 * A listener may block for as long as it likes, so no signal ever waits in a queue behind one. A signal goes to an
 * idle notifier thread (at most {@value #NOTIFIERS}, kept while in use). When all of them are busy, or the locker has
 * closed, it is told on a fresh daemon thread of its own. Those extra threads are bounded ({@value #EXTRA_TELLERS} per
 * locker), and past the bound a warning is logged and the signal is told on the caller's thread. The caller is then
 * delayed, never a signal: a loss is told late only when hundreds of listeners block at once.
 */
final class KeepAlive implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(KeepAlive.class);
    private static final AtomicLong THREADS = new AtomicLong();
    private static final long ONE_MS = TimeUnit.MILLISECONDS.toNanos(1);
    private static final long TEN_MS = TimeUnit.MILLISECONDS.toNanos(10);
    /** The most threads telling lost-listeners at once, per locker. */
    static final int NOTIFIERS = 8;
    /** The most renewals running at once, per locker: each stalled renewal holds one of these threads. */
    static final int RENEWERS = 4;
    /** The most extra threads telling lost-listeners at once, per locker, while every notifier thread is busy. */
    static final int EXTRA_TELLERS = 64;

    private final KeepAliveHost locker;
    private final TimeSource time;
    private final long periodNanos;
    private final long marginNanos;
    /**
     * Renewals ({@link Kept}) and backends' retries ({@link Later}): each entry is its own timer slot (no future, no
     * wrapper per schedule); a hold that is its own transaction uses its second slot here (its first is the watchdog's).
     */
    private final Timer<Timer.Timed> scheduler;
    /** The early lost signal: each watched hold is its own slot in this timer (no object per watched hold). */
    private final Timer<Hold> watchdogScheduler;
    /** Runs the renewals that fall due, so that one stalled renewal delays no other transaction's. */
    private final ThreadPoolExecutor renewers;
    /** Tells lost-listeners: up to {@value #NOTIFIERS} threads and no queue; see the class comment for the rest. */
    private final ExecutorService notifier;
    /** Extra threads telling a listener now, while every notifier thread is busy. */
    private final AtomicInteger extraTellers = new AtomicInteger();
    /** Names the threads that tell lost-listeners. */
    private final AtomicLong tellerNames = new AtomicLong();
    private final long number;
    /** The losses waiting to be told, per transaction (by identity) being told now: one thread tells them in turn. */
    private final Map<Object, java.util.ArrayDeque<Runnable>> telling = new IdentityHashMap<>();

    KeepAlive(KeepAliveHost locker, LockerConfig config, TimeSource time) {
        this.locker = locker;
        this.time = time;
        long expiry = LockerEngine.saturatedNanos(config.expiry());
        this.periodNanos = Math.max(1, expiry / 3);
        this.marginNanos = Math.max(1, Math.min(expiry / 10, Duration.ofSeconds(5).toNanos()));
        long n = THREADS.incrementAndGet();
        this.number = n;
        this.scheduler = new Timer<>("locker-keepalive-" + n, true, this::due);
        // apart from renewals: a renewal blocked on an unreachable backend must not delay the early lost signal
        this.watchdogScheduler = new Timer<>("locker-deadline-watch-" + n, this::fire);
        AtomicLong renewerNames = new AtomicLong();
        this.renewers = new ThreadPoolExecutor(RENEWERS, RENEWERS, 10, TimeUnit.SECONDS, new LinkedBlockingQueue<>(),
                r -> daemon(r, "locker-renewals-" + n + "-" + renewerNames.incrementAndGet()));
        renewers.allowCoreThreadTimeOut(true); // no thread kept while nothing is kept alive
        // a hand-off, no queue: a signal that finds no idle thread is refused at once and told elsewhere (tell)
        ThreadPoolExecutor pool = new ThreadPoolExecutor(NOTIFIERS, NOTIFIERS, 10, TimeUnit.SECONDS,
                new SynchronousQueue<>(), r -> daemon(r, tellerName()));
        pool.allowCoreThreadTimeOut(true); // no thread kept while nobody is told anything
        this.notifier = pool;
    }

    private String tellerName() {
        return "locker-lost-listeners-" + number + "-" + tellerNames.incrementAndGet();
    }

    private static Thread daemon(Runnable r, String name) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        return t;
    }

    /** Renews the holds of a transaction in the background until {@link #stop} (or none of them is live). */
    void start(Kept kept) {
        synchronized (kept) {
            if (kept.keptAlive()) {
                return;
            }
            kept.keptAlive(true);
        }
        schedule(kept, nextDelay(kept));
    }

    void stop(Kept kept) {
        kept.keptAlive(false);
        scheduler.cancel(kept);
    }

    /** Moves the next renewal of {@code kept} onto its holds' terms now: a renewal just changed an expiry. */
    void reschedule(Kept kept) {
        schedule(kept, nextDelay(kept));
    }

    private void schedule(Kept kept, long delayNanos) {
        if (!kept.keptAlive()) {
            return;
        }
        if (!scheduler.schedule(kept, Math.max(0, delayNanos))) {
            kept.keptAlive(false); // the locker is closing
        }
        if (!kept.keptAlive()) { // stopped while it was being scheduled: take it out again
            scheduler.cancel(kept);
        }
    }

    /** What the keep-alive thread does with an entry that fell due. */
    private void due(Timer.Timed e) {
        if (e instanceof Later) {
            ((Later) e).task.run();
        } else {
            Kept kept = (Kept) e;
            try {
                renewers.execute(() -> renew(kept));
            } catch (RejectedExecutionException closing) {
                kept.keptAlive(false); // the locker is closing: no renewal is promised any more
            } catch (Throwable t) { // NOPMD: no thread could be made (an OutOfMemoryError): renewed on this thread
                log.warn("Could not start a renewal thread; renewing on the keep-alive thread: {}", t.toString());
                renew(kept);
            }
        }
    }

    /** Runs {@code task} once after {@code delay} on the keep-alive thread (backends' background retries). */
    void later(Runnable task, Duration delay) {
        scheduler.schedule(new Later(task), delay.toNanos()); // refused (false) when the locker is closing
    }

    private boolean watched(Hold hold) {
        return hold.hasListeners() || locker.keptAlive(hold.tx);
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
        long delay = Math.max(ONE_MS, hold.deadlineOf(s) - marginOf(hold) - time.nanoTime());
        watchdogScheduler.schedule(hold, Math.max(0, delay)); // moves an earlier watch; refused when closing
    }

    /** Drops the early lost signal of a released hold, so the hold is not kept reachable until its deadline. */
    void unwatch(Hold hold) {
        watchdogScheduler.cancel(hold);
    }

    private void fire(Hold hold) {
        Hold.State s = hold.state();
        if (s.isFinal() || !watched(hold)) { // lost, released, or neither listened to nor kept alive any more
            return;
        }
        long left = hold.deadlineOf(s) - time.nanoTime();
        if (s.status() == null || left > marginOf(hold)) {
            watch(hold); // still being written, renewed meanwhile, or a virtual clock that has not moved: look again then
            return;
        }
        if (!hold.loseIf(s, LossReason.EXPIRED, "no successful renewal; the claim's validity ends in "
                + Duration.ofNanos(Math.max(0, left)) + " by this process's monotonic clock")) {
            watch(hold); // renewed (or lost) while we judged: judge the new state
        }
    }

    /**
     * Tells each listener of a loss, once, on a notifier thread. The losses of one transaction ({@code tx}) are told
     * in turn, in the order they came; those of different transactions on threads of their own, so that a listener
     * that blocks holds up only its own transaction's later losses.
     */
    void tell(Object tx, List<Consumer<LockLost>> listeners, LockLost loss) {
        log.debug("Telling {} listener(s): {}", listeners.size(), loss);
        Runnable told = () -> tellHere(listeners, loss);
        synchronized (telling) {
            java.util.ArrayDeque<Runnable> queue = telling.get(tx);
            if (queue != null) {
                queue.add(told); // the thread telling this transaction's earlier loss tells this one next
                return;
            }
            telling.put(tx, new java.util.ArrayDeque<>());
        }
        Runnable turn = () -> tellInTurn(tx, told);
        try {
            notifier.execute(turn);
            return;
        } catch (RejectedExecutionException busyOrClosed) {
            // every notifier thread tells a listener that has not returned yet, or the locker closed
        } catch (Throwable e) { // NOPMD: no thread could be made (an OutOfMemoryError); told elsewhere below
            log.warn("Could not start a thread to tell the loss of {}: {}", loss.lock(), e.toString());
        }
        tellApart(turn, loss);
    }

    /**
     * Tells {@code turn} on an extra daemon thread, within {@value #EXTRA_TELLERS} of them; else, or when no thread
     * can be made, on this thread. Either way it runs, so the transaction's entry in {@link #telling} is removed.
     */
    private void tellApart(Runnable turn, LockLost loss) {
        if (extraTellers.incrementAndGet() <= EXTRA_TELLERS) {
            try {
                daemon(() -> {
                    try {
                        turn.run();
                    } finally {
                        extraTellers.decrementAndGet();
                    }
                }, tellerName()).start();
                return;
            } catch (Throwable e) { // NOPMD: no thread could be made (an OutOfMemoryError); told on this thread
                extraTellers.decrementAndGet();
                log.warn("Could not start a thread to tell the loss of {}; telling it on this thread: {}",
                        loss.lock(), e.toString());
            }
        } else {
            extraTellers.decrementAndGet();
            log.warn("More than {} lost-listeners of this locker block; telling the loss of {} on this thread",
                    NOTIFIERS + EXTRA_TELLERS, loss.lock());
        }
        turn.run();
    }

    /** Tells {@code first}, then every loss of {@code tx} queued meanwhile, until none is left. */
    private void tellInTurn(Object tx, Runnable first) {
        VirtualMachineError fatal = null;
        for (Runnable next = first; next != null; ) {
            try {
                next.run();
            } catch (VirtualMachineError e) { // thrown again once this transaction's queue is empty (see tellHere)
                fatal = fatal == null ? e : fatal;
            }
            synchronized (telling) {
                next = telling.get(tx).poll();
                if (next == null) {
                    telling.remove(tx);
                }
            }
        }
        if (fatal != null) {
            throw fatal;
        }
    }

    /**
     * Tells every listener, whatever one of them throws: a listener's failure, even an Error or a checked exception
     * thrown undeclared (Kotlin, sneaky throws), is logged and never keeps the loss from the listeners after it (nor
     * kills the notifier thread). A VirtualMachineError is thrown again, after the others were told.
     */
    static void tellHere(List<Consumer<LockLost>> listeners, LockLost loss) {
        VirtualMachineError fatal = null;
        for (Consumer<LockLost> l : listeners) {
            try {
                l.accept(loss);
            } catch (Throwable e) { // NOPMD: see above
                log.warn("A lost-lock listener failed for {}: {}", loss.lock(), e.toString(), e);
                if (e instanceof VirtualMachineError && fatal == null) {
                    fatal = (VirtualMachineError) e;
                }
            }
        }
        if (fatal != null) {
            throw fatal;
        }
    }

    /** Stops renewals and watchdogs; listeners already told run to the end (briefly awaited). */
    @Override
    public void close() {
        scheduler.shutdownNow(); // drops every scheduled renewal
        watchdogScheduler.shutdownNow();
        renewers.shutdown(); // a renewal in flight ends on its own; renew() then finds the locker closed
        notifier.shutdown();
        try {
            notifier.awaitTermination(1, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** An entry of one timer: its two slot fields. */
    abstract static class Slot implements Timer.Timed {
        private int timerIndex = -1;
        private long timerDue;

        @Override
        public final int timerIndex() {
            return timerIndex;
        }

        @Override
        public final void timerIndex(int i) {
            timerIndex = i;
        }

        @Override
        public final long timerDue() {
            return timerDue;
        }

        @Override
        public final void timerDue(long due) {
            timerDue = due;
        }
    }

    /** A backend's task to run once (see {@link #later}). */
    private static final class Later extends Slot {
        private final Runnable task;

        Later(Runnable task) {
            this.task = task;
        }
    }

    /**
     * What the keep-alive keeps of a transaction: the locker's record of its holds is also its renewal's timer entry
     * (no task object and no map entry per kept-alive transaction). Its holds are read at each run (holds claimed
     * later count). A {@link Timer.TwoSlots} entry (a hold that is its own transaction) is kept in its second slot.
     */
    interface Kept extends Timer.Timed {
        /**
         * True from {@link #start} until {@link #stop}, or until a renewal finds none of its holds live or one of them
         * lost.
         */
        boolean keptAlive();

        void keptAlive(boolean on);

        /** The transaction's holds now. */
        Hold[] holds();
    }

    /**
     * Did the transaction lose a lock it held (taken over, gone, expired, force-released; released after a loss too)?
     * Then it is lost as a whole (a lease on several locks is invalid, a three-phase transaction fails its next check),
     * and keeping its other claims alive would only keep those locks from everybody else for a holder already told:
     * they are left to expire (the watchdog tells their loss in time). A hold lost while its claim was being written
     * (no status: never held) does not count: its writeLock fails, its claiming thread drops it, and the transaction's
     * other locks stay as they are.
     */
    private static boolean anyLost(Hold[] holds) {
        for (Hold hold : holds) {
            Hold.State s = hold.state();
            if ((s.phase() == Hold.Phase.LOST || s.reason() != null) && s.status() != null) {
                return true;
            }
        }
        return false;
    }

    /** One renewal of a kept-alive transaction, on a renewal thread. */
    private void renew(Kept kept) {
        if (!kept.keptAlive()) {
            return;
        }
        Hold[] holds = kept.holds();
        if (anyLost(holds)) {
            kept.keptAlive(false); // the transaction lost a lock: its other claims are not kept for it any longer
            return;
        }
        boolean anyLive = false;
        boolean failed = false;
        long soonest = Long.MAX_VALUE;
        for (Hold hold : holds) {
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
                    kept.keptAlive(false);
                    return;
                }
                anyLive = true;
                failed = true;
                soonest = Math.min(soonest, hold.deadlineOf(hold.state()) - time.nanoTime());
            } catch (VirtualMachineError e) {
                // the process itself may be failing: no renewal is promised any more, and the holder hears it now
                kept.keptAlive(false);
                hold.lose(LossReason.EXPIRED, "the keep-alive stopped renewing the claim after " + e);
                throw e;
            } catch (Throwable e) { // NOPMD: unreachable, slow, refused, busy, or a backend's Error (a missing class):
                // retried sooner all the same; the watchdog tells the holder if no renewal comes in time
                anyLive = true;
                failed = true;
                soonest = Math.min(soonest, hold.deadlineOf(hold.state()) - time.nanoTime());
                if (e instanceof RuntimeException) {
                    log.debug("Keep-alive renewal of {} failed, retrying: {}", hold.lock, e.toString());
                } else {
                    log.warn("Keep-alive renewal of {} failed with an Error, retrying: {}", hold.lock, e.toString(), e);
                }
            }
        }
        if (!anyLive || anyLost(holds)) {
            kept.keptAlive(false);
            return;
        }
        long period = periodOf(holds);
        schedule(kept, failed ? Math.max(Math.min(TEN_MS, period), Math.min(period / 3, soonest / 4))
                : nextDelay(kept));
    }

    /** A third of the shortest expiry among {@code holds}: each lease is renewed on its own expiry's terms. */
    private long periodOf(Hold[] holds) {
        long period = Long.MAX_VALUE;
        for (Hold h : holds) {
            Duration e = h.expiry();
            period = Math.min(period, e == null ? periodNanos : Math.max(1, LockerEngine.saturatedNanos(e) / 3));
        }
        return period == Long.MAX_VALUE ? periodNanos : period;
    }

    /** The early lost signal's margin for {@code hold}: a tenth of its own expiry, at most 5 s. */
    private long marginOf(Hold hold) {
        Duration e = hold.expiry();
        if (e == null) {
            return marginNanos;
        }
        return Math.max(1, Math.min(LockerEngine.saturatedNanos(e) / 10, Duration.ofSeconds(5).toNanos()));
    }

    /**
     * A third of the expiry, but never later than halfway to the earliest point where a hold of the transaction
     * would be declared lost (a short validity, as wait-and-read-back leaves after its lock-wait, needs it sooner).
     */
    private long nextDelay(Kept kept) {
        long now = time.nanoTime();
        Hold[] holds = kept.holds();
        long d = periodOf(holds);
        long floor = Math.min(TEN_MS, d); // a lease of a few milliseconds is renewed within its own expiry
        for (Hold h : holds) {
            Hold.State s = h.state();
            if (!s.isFinal() && s.status() != null) {
                d = Math.min(d, Math.max(floor, (h.deadlineOf(s) - marginOf(h) - now) / 2));
            }
        }
        return d;
    }
}
