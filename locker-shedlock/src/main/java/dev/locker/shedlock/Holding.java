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
 * Once released, the lease is closed or lost, and nothing schedules or renews it again.
 */
final class Holding {

    private static final Logger log = LoggerFactory.getLogger(Holding.class);

    /**
     * The shortest expiry a claim gets on the backend. A grant must reach this process within its expiry; a far
     * shorter one might never be confirmed. This process still gives the lease back at lockAtMostUntil.
     */
    static final Duration SHORTEST_CLAIM = Duration.ofSeconds(2);

    private final String name;
    private final KeyColumn lock;
    private final Lease lease;
    /** True when the lease carries lockAtMostFor as its expiry and lockAtLeastFor as its hold-at-least. */
    private final boolean onBackend;
    private final ScheduledExecutorService releases;
    private final Consumer<Holding> onReleased;
    private ScheduledFuture<?> release; // guarded by this
    private Instant until; // guarded by this
    private boolean extended; // guarded by this: the lease's own hold-at-least no longer is lockAtLeastFor
    private boolean unlocked; // guarded by this: the task called unlock
    private boolean released; // guarded by this
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
        try {
            release = releases.schedule(this::onTime, delay.toNanos(), TimeUnit.NANOSECONDS);
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
    synchronized boolean isDone() {
        return unlocked || released;
    }

    /** Gives the lease back now; harmless when it already was. A claim inside its hold-at-least stays until then. */
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
     * Gives the lease back when its last instant (lockAtMostUntil, or lockAtLeastUntil after an early unlock) has
     * passed on ShedLock's clock: the next lock of its name must not wait for a release scheduled late on a busy host.
     */
    synchronized void releaseIfDue() {
        if (!released && until != null && !ClockProvider.now().isBefore(until)) {
            onTime();
        }
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
