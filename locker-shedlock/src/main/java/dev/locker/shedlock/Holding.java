package dev.locker.shedlock;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockingException;
import net.javacrumbs.shedlock.core.ClockProvider;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * One grant of a ShedLock lock, from {@code lock} until the lease is given back, across its extensions.
 *
 * <h2>Who keeps the durations</h2>
 * Normally the backend keeps them: the lease expires at lockAtMostUntil and is never kept alive. Its hold-at-least is
 * lockAtLeastFor, so an early unlock leaves the claim on the backend until lockAtLeastUntil. An extension renews the
 * lease to its new lockAtMostFor. Both durations then hold after this process died, as ShedLock's lock_until does.
 * When the backend cannot keep a claim for lockAtMostFor, the lease has the locker's expiry instead. This process
 * then keeps both durations, renewing the lease while it must outlive its claim.
 *
 * <p>Invariant: while not released, exactly one scheduled release is pending, at the instant ShedLock set last.
 * That instant is lockAtMostUntil while the task runs, and lockAtLeastUntil once it unlocked early.
 * Once released, the lease is closed or lost, and nothing schedules or renews it again. A scheduled or late release
 * gives the lease back outside this object's monitor: a backend that stalls on it holds up no other caller.
 */
final class Holding {

    private static final Logger log = LoggerFactory.getLogger(Holding.class);

    /**
     * The shortest expiry a claim gets on the backend. A grant must reach this process within its expiry; a far
     * shorter one might never be confirmed. This process still gives the lease back at lockAtMostUntil.
     */
    static final Duration SHORTEST_CLAIM = Duration.ofSeconds(2);

    /** The longest a release is scheduled ahead: a century, within the monotonic clock's range. */
    private static final Duration LONGEST_DELAY = Duration.ofDays(36_500);

    private final String name;
    private final KeyColumn lock;
    private final Lease lease;
    /** True when the lease carries lockAtMostFor as its expiry and lockAtLeastFor as its hold-at-least. */
    private final boolean onBackend;
    private final ScheduledExecutorService releases;
    private final Consumer<Holding> onReleased;
    private ScheduledFuture<?> release; // guarded by this
    private Instant until; // guarded by this
    private long dueNanos; // guarded by this: when the scheduled release falls due, on the monotonic clock
    private boolean extended; // guarded by this: the lease's own hold-at-least no longer is lockAtLeastFor
    private volatile boolean unlocked; // written under this: the task called unlock
    private volatile boolean released; // written under this
    /** Counts the scheduled releases (guarded by this): one that was moved since it was scheduled does nothing. */
    private long scheduled;
    /** Set by the locker's notifier thread, which must not wait for this monitor. */
    private volatile boolean lost;

    Holding(String name, KeyColumn lock, Lease lease, boolean onBackend, ScheduledExecutorService releases,
            Consumer<Holding> onReleased) {
        this.name = name;
        this.lock = lock;
        this.lease = lease;
        this.onBackend = onBackend;
        this.releases = releases;
        this.onReleased = onReleased;
        lease.onLost(loss -> {
            lost = true;
            log.warn("ShedLock lock {} was lost before it was given back: {}", lock.legible(), loss);
        });
    }

    /** The ShedLock lock name. */
    String name() {
        return name;
    }

    /** Gives the lease back at {@code when}, instead of at any instant set before; at once if it has passed. */
    synchronized void releaseAt(Instant when) {
        if (released) {
            return;
        }
        until = when;
        if (release != null) {
            release.cancel(false);
        }
        Duration delay = Duration.between(ClockProvider.now(), when);
        if (delay.isNegative() || delay.isZero()) {
            releaseNow();
            return;
        }
        if (!onBackend) {
            try {
                // the claim lives one locker expiry after its last renewal: keep it alive if it must outlive most of it
                Duration left = lease.remaining();
                lease.keepAlive(delay.compareTo(left.minus(left.dividedBy(10))) >= 0);
            } catch (IllegalStateException lostOrClosed) {
                releaseNow();
                return;
            }
        }
        long delayNanos = delay.compareTo(LONGEST_DELAY) > 0 ? LONGEST_DELAY.toNanos() : delay.toNanos();
        dueNanos = System.nanoTime() + delayNanos;
        long which = ++scheduled;
        try {
            release = releases.schedule(() -> onTime(which), delayNanos, TimeUnit.NANOSECONDS);
        } catch (java.util.concurrent.RejectedExecutionException providerClosed) {
            releaseNow();
        }
    }

    /**
     * Extends the grant to {@code newUntil}: renews the lease in place (asking the backend), then moves the release.
     * On the backend the lease is renewed to expire at {@code newUntil}.
     *
     * @return false when the grant has ended, its lockAtMostFor has passed, or the backend says the claim is gone
     */
    synchronized boolean extend(Instant newUntil) {
        if (released) {
            return false;
        }
        if (lost || !ClockProvider.now().isBefore(until) || !lease.isValid()) {
            releaseNow();
            return false;
        }
        try {
            if (onBackend) {
                lease.renewFor(claimFor(Duration.between(ClockProvider.now(), newUntil)));
            } else {
                lease.renew();
            }
        } catch (ExpiredLockException gone) {
            releaseNow();
            return false;
        } catch (LockingException | IllegalArgumentException unknownOrRefused) {
            // the claim may still be ours: the release already scheduled gives it back at the old lockAtMostUntil
            log.warn("could not extend ShedLock lock {}: {}", lock.legible(), unknownOrRefused.toString());
            return false;
        } catch (IllegalStateException closed) {
            releaseNow();
            return false;
        }
        extended = true;
        releaseAt(newUntil);
        return true;
    }

    /**
     * The task is done: the grant ends at {@code atLeastUntil}, or at once when that has passed. On the backend an
     * unextended lease is released at once, and the backend keeps its claim for lockAtLeastFor. An extended lease
     * is renewed to end at {@code atLeastUntil} instead, and given back then.
     */
    synchronized void unlock(Instant atLeastUntil) {
        unlocked = true;
        if (!onBackend) {
            releaseAt(atLeastUntil);
            return;
        }
        Duration left = Duration.between(ClockProvider.now(), atLeastUntil);
        if (!extended || released || left.isNegative() || left.isZero()) {
            // the lease's own hold-at-least (the first lockAtLeastFor) still applies to a claim released now
            releaseNow();
            return;
        }
        try {
            // a backend whose renewal never shortens a claim keeps it until the last lockAtMostUntil
            lease.renewFor(claimFor(left));
        } catch (ExpiredLockException | IllegalStateException goneOrClosed) {
            releaseNow();
            return;
        } catch (LockingException | IllegalArgumentException unknownOrRefused) {
            log.warn("could not keep ShedLock lock {} for its lockAtLeastFor after the process ends: {}",
                    lock.legible(), unknownOrRefused.toString());
        }
        releaseAt(atLeastUntil);
    }

    /** The expiry a claim gets on the backend for {@code d}: at least {@link #SHORTEST_CLAIM}. */
    static Duration claimFor(Duration d) {
        return d.compareTo(SHORTEST_CLAIM) < 0 ? SHORTEST_CLAIM : d;
    }

    /** True once the task unlocked or the lease was given back: a thread's record of it may be dropped. */
    boolean isDone() {
        return unlocked || released;
    }

    /** Gives the lease back now; harmless when it already was. A claim inside its hold-at-least stays until then. */
    void releaseNow() {
        if (markReleased()) {
            giveBack();
        }
    }

    /** Marks the grant released and cancels its scheduled release; false when it already was released. */
    private synchronized boolean markReleased() {
        if (released) {
            return false;
        }
        released = true;
        if (release != null) {
            release.cancel(false);
            release = null;
        }
        return true;
    }

    /** The backend part of a release, once {@link #markReleased} said this caller does it. */
    private void giveBack() {
        try {
            // never throws for a backend failure: an undeleted claim expires on its own
            if (!lease.release()) {
                log.debug("ShedLock lock {} had already expired or been taken over when given back", lock.legible());
            }
        } catch (RuntimeException e) {
            log.warn("could not give back ShedLock lock {}: {}", lock.legible(), e.toString());
        }
        onReleased.accept(this);
    }

    /**
     * Gives the lease back when its scheduled release is late: its last instant (lockAtMostUntil, or lockAtLeastUntil
     * after an early unlock) has passed on ShedLock's clock, and its delay on the monotonic clock. The next lock of
     * its name must not wait for a release thread held up on a busy host. A step of the wall clock alone ends nothing.
     */
    void releaseIfDue() {
        onTime(0);
    }

    /** The scheduled release number {@code which} (while no later one was scheduled), or (0) a late one, if due. */
    private void onTime(long which) {
        boolean stillRunning;
        synchronized (this) {
            boolean due = which == 0
                    ? until != null && !ClockProvider.now().isBefore(until) && System.nanoTime() - dueNanos >= 0
                    : which == scheduled;
            if (released || !due) {
                return;
            }
            stillRunning = !unlocked;
            markReleased();
        }
        if (stillRunning) {
            log.warn("ShedLock lock {} reached its lockAtMostFor while its task still runs: released, "
                    + "another process may start the task now", lock.legible());
        }
        giveBack();
    }

    /**
     * The fencing token of the lease, while the grant lasts.
     *
     * @throws IllegalStateException once the lease was given back, its lockAtMostFor passed, or it was lost
     */
    long fencingToken() {
        synchronized (this) {
            if (released || !ClockProvider.now().isBefore(until)) {
                throw new IllegalStateException("ShedLock lock " + lock.legible()
                        + " was given back (its lockAtMostFor passed or it was unlocked): stop writing under it");
            }
        }
        return lease.fencingToken();
    }

    /** How long this process may still act under the grant: zero once given back, lost or past lockAtMostUntil. */
    Duration remaining() {
        Instant end;
        synchronized (this) {
            if (released || unlocked) {
                return Duration.ZERO;
            }
            end = until;
        }
        Duration left = Duration.between(ClockProvider.now(), end);
        Duration leaseLeft = lease.remaining();
        Duration least = left.compareTo(leaseLeft) < 0 ? left : leaseLeft;
        return least.isNegative() ? Duration.ZERO : least;
    }

    @Override
    public String toString() {
        return "Holding[" + lock.legible() + (onBackend ? "" : ", durations kept by this process") + "]";
    }
}
