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
 * <p>Invariant: while not released, exactly one scheduled release is pending, at the instant ShedLock set last.
 * That instant is lockAtMostUntil while the task runs, and lockAtLeastUntil once it unlocked early.
 * Once released, the lease is closed or lost, and nothing schedules or renews it again.
 */
final class Holding {

    private static final Logger log = LoggerFactory.getLogger(Holding.class);

    private final String name;
    private final KeyColumn lock;
    private final Lease lease;
    private final ScheduledExecutorService releases;
    private final Consumer<Holding> onReleased;
    private ScheduledFuture<?> release; // guarded by this
    private Instant until; // guarded by this
    private boolean unlocked; // guarded by this: the task called unlock
    private boolean released; // guarded by this
    /** Set by the locker's notifier thread, which must not wait for this monitor. */
    private volatile boolean lost;

    Holding(String name, KeyColumn lock, Lease lease, ScheduledExecutorService releases, Consumer<Holding> onReleased) {
        this.name = name;
        this.lock = lock;
        this.lease = lease;
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
        try {
            // the claim lives one locker expiry after its last renewal: keep it alive if it must outlive most of that
            Duration left = lease.remaining();
            lease.keepAlive(delay.compareTo(left.minus(left.dividedBy(10))) >= 0);
        } catch (IllegalStateException lostOrClosed) {
            releaseNow();
            return;
        }
        try {
            release = releases.schedule(this::onTime, delay.toNanos(), TimeUnit.NANOSECONDS);
        } catch (java.util.concurrent.RejectedExecutionException providerClosed) {
            releaseNow();
        }
    }

    /**
     * Extends the grant to {@code newUntil}: renews the lease in place (asking the backend), then moves the release.
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
            lease.renew();
        } catch (ExpiredLockException gone) {
            releaseNow();
            return false;
        } catch (LockingException unknown) {
            // the claim may still be ours: the release already scheduled gives it back at the old lockAtMostUntil
            log.warn("could not extend ShedLock lock {}: {}", lock.legible(), unknown.toString());
            return false;
        } catch (IllegalStateException closed) {
            releaseNow();
            return false;
        }
        releaseAt(newUntil);
        return true;
    }

    /** The task is done: gives the lease back at {@code atLeastUntil}, or at once when that has passed. */
    synchronized void unlock(Instant atLeastUntil) {
        unlocked = true;
        releaseAt(atLeastUntil);
    }

    /** True once the task unlocked or the lease was given back: a thread's record of it may be dropped. */
    synchronized boolean isDone() {
        return unlocked || released;
    }

    /** Gives the lease back now; harmless when it already was. */
    synchronized void releaseNow() {
        if (released) {
            return;
        }
        released = true;
        if (release != null) {
            release.cancel(false);
            release = null;
        }
        try {
            lease.close(); // never throws for a backend failure: an undeleted claim expires on its own
        } catch (RuntimeException e) {
            log.warn("could not give back ShedLock lock {}: {}", lock.legible(), e.toString());
        }
        onReleased.accept(this);
    }

    private synchronized void onTime() {
        if (released) {
            return;
        }
        if (!unlocked) {
            log.warn("ShedLock lock {} reached its lockAtMostFor while its task still runs: released, "
                    + "another process may start the task now", lock.legible());
        }
        releaseNow();
    }

    /**
     * The fencing token of the lease, while the grant lasts.
     *
     * @throws IllegalStateException once the lease was given back or lost
     */
    long fencingToken() {
        synchronized (this) {
            if (released) {
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
        return "Holding[" + lock.legible() + "]";
    }
}
