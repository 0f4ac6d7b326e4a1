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
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
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
 * <h2>Which clock ends a grant</h2>
 * ShedLock's instants (lockAtMostUntil, lockAtLeastUntil) are on its wall clock, which can step. This process ends a
 * grant only once an instant has passed on that clock and, counted from the grant, on the monotonic clock: a step of
 * the wall clock forward ends nothing early. The task's own view ({@link #fencingToken}, {@link #remaining}) ends at
 * the first of the two, the safe side for a writer.
 *
 * <p>Invariant: while not released, exactly one scheduled release is pending, at the instant ShedLock set last.
 * That instant is lockAtMostUntil while the task runs, and lockAtLeastUntil once it unlocked early.
 * Once released, the lease is closed or lost, and nothing schedules or renews it again. Releases run on a few
 * threads, so that one stalled on its backend holds up no other grant's release; a release thread never waits on a
 * grant whose task is extending or unlocking it (it looks again shortly).
 */
final class Holding {

    private static final Logger log = LoggerFactory.getLogger(Holding.class);

    /**
     * The shortest expiry a claim gets on the backend. A grant must reach this process within its expiry; a far
     * shorter one might never be confirmed. This process still gives the lease back at lockAtMostUntil.
     */
    static final Duration SHORTEST_CLAIM = Duration.ofSeconds(2);

    /** Times are counted within a century either way: the monotonic clock holds them, and no release is later. */
    private static final long LONGEST_NANOS = Duration.ofDays(36_500).toNanos();
    /** How soon the release thread looks again at a grant whose task is extending or unlocking it. */
    private static final long LOOK_AGAIN_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

    private final String name;
    private final KeyColumn lock;
    private final Lease lease;
    /** True when the lease carries lockAtMostFor as its expiry and lockAtLeastFor as its hold-at-least. */
    private final boolean onBackend;
    private final ScheduledExecutorService releases;
    private final Consumer<Holding> onReleased;
    /** ShedLock's clock and the monotonic clock at the grant: an instant on the one falls due on the other. */
    private final Instant grantedAt;
    private final long grantedNanos;
    private ScheduledFuture<?> release; // guarded by this
    private Instant until; // guarded by this
    private boolean extended; // guarded by this: the lease's own hold-at-least no longer is lockAtLeastFor
    /** Counts the scheduled releases (guarded by this): one that was moved since it was scheduled does nothing. */
    private long scheduled;
    private volatile boolean unlocked; // written under this: the task called unlock
    private volatile boolean released; // written under this
    /** True while the task extends or unlocks on the backend, under this monitor: others do not wait for it. */
    private volatile boolean busy;
    /** Set when the provider closes: a task busy on the backend then gives the lease back as that call returns. */
    private volatile boolean closing;
    /** Set by the locker's notifier thread, which must not wait for this monitor. */
    private volatile boolean lost;
    /** Opens once the released lease was given back on the backend (by whichever thread released it). */
    private final CountDownLatch givenBack = new CountDownLatch(1);

    Holding(String name, KeyColumn lock, Lease lease, boolean onBackend, ScheduledExecutorService releases,
            Consumer<Holding> onReleased) {
        this.name = name;
        this.lock = lock;
        this.lease = lease;
        this.onBackend = onBackend;
        this.releases = releases;
        this.onReleased = onReleased;
        this.grantedNanos = System.nanoTime();
        this.grantedAt = ClockProvider.now();
        lease.onLost(loss -> {
            lost = true;
            log.warn("ShedLock lock {} was lost before it was given back: {}", lock.legible(), loss);
        });
    }

    /** The ShedLock lock name. */
    String name() {
        return name;
    }

    /** Nanoseconds until ShedLock's instant {@code t} has passed on its clock and on the monotonic clock. */
    private long untilBoth(Instant t) {
        return Math.max(nanos(Duration.between(ClockProvider.now(), t)), monotonicUntil(t));
    }

    /** Nanoseconds until ShedLock's instant {@code t} has passed on its clock or on the monotonic clock. */
    private long untilEither(Instant t) {
        return Math.min(nanos(Duration.between(ClockProvider.now(), t)), monotonicUntil(t));
    }

    /** Nanoseconds until {@code t} falls due on the monotonic clock, counted from the grant. */
    private long monotonicUntil(Instant t) {
        return nanos(Duration.between(grantedAt, t)) - (System.nanoTime() - grantedNanos);
    }

    /** {@code d} in nanoseconds, within a century either way. */
    private static long nanos(Duration d) {
        if (d.compareTo(Duration.ofNanos(LONGEST_NANOS)) > 0) {
            return LONGEST_NANOS;
        }
        return d.compareTo(Duration.ofNanos(-LONGEST_NANOS)) < 0 ? -LONGEST_NANOS : d.toNanos();
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
        long delay = untilBoth(when);
        if (delay <= 0) {
            releaseNow();
            return;
        }
        if (!onBackend) {
            try {
                // the claim lives one locker expiry after its last renewal: keep it alive if it must outlive most of it
                Duration left = lease.remaining();
                lease.keepAlive(Duration.ofNanos(delay).compareTo(left.minus(left.dividedBy(10))) >= 0);
            } catch (IllegalStateException lostOrClosed) {
                releaseNow();
                return;
            }
        }
        long which = ++scheduled;
        try {
            release = releases.schedule(() -> onTime(which), delay, TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException providerClosed) {
            releaseNow();
        }
    }

    /**
     * Extends the grant to {@code newUntil}: renews the lease in place (asking the backend), then moves the release.
     * On the backend the lease is renewed to expire at {@code newUntil}.
     *
     * @return false when the grant has ended, its lockAtMostFor has passed, or the backend says the claim is gone
     */
    boolean extend(Instant newUntil) {
        boolean extendedNow;
        synchronized (this) {
            extendedNow = extendHeld(newUntil);
        }
        if (closing) {
            releaseNow();
        }
        awaitGiveBackIfReleased();
        return extendedNow && !released;
    }

    private boolean extendHeld(Instant newUntil) {
        if (released) {
            return false;
        }
        if (lost || untilBoth(until) <= 0 || !lease.isValid()) {
            releaseNow();
            return false;
        }
        busy = true;
        try {
            if (onBackend) {
                lease.renewFor(claimFor(Duration.ofNanos(untilBoth(newUntil))));
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
        } finally {
            busy = false;
        }
        extended = true;
        releaseAt(newUntil);
        return true;
    }

    /**
     * The task is done: the grant ends at {@code atLeastUntil}, or at once when that has passed. On the backend an
     * unextended lease is released at once, and the backend keeps its claim for lockAtLeastFor. An extended lease
     * is renewed to end at {@code atLeastUntil} instead, and given back then. Returns once a grant released by
     * then is given back on the backend.
     */
    void unlock(Instant atLeastUntil) {
        synchronized (this) {
            unlockHeld(atLeastUntil);
        }
        if (closing) {
            releaseNow();
        }
        awaitGiveBackIfReleased();
    }

    private void unlockHeld(Instant atLeastUntil) {
        unlocked = true;
        if (!onBackend) {
            releaseAt(atLeastUntil);
            return;
        }
        long left = untilBoth(atLeastUntil);
        busy = true;
        try {
            if (!extended || released || left <= 0) {
                // the lease's own hold-at-least (the first lockAtLeastFor) still applies to a claim released now
                releaseNow();
                return;
            }
            try {
                // a backend whose renewal never shortens a claim keeps it until the last lockAtMostUntil
                lease.renewFor(claimFor(Duration.ofNanos(left)));
            } catch (ExpiredLockException | IllegalStateException goneOrClosed) {
                releaseNow();
                return;
            } catch (LockingException | IllegalArgumentException unknownOrRefused) {
                log.warn("could not keep ShedLock lock {} for its lockAtLeastFor after the process ends: {}",
                        lock.legible(), unknownOrRefused.toString());
            }
        } finally {
            busy = false;
        }
        releaseAt(atLeastUntil);
    }

    /**
     * The task's extend or unlock answers after its grant's give-back, should a release thread be giving it back:
     * a grant the task was told has ended is off the backend. An interrupt ends the wait.
     */
    private void awaitGiveBackIfReleased() {
        if (!released) {
            return;
        }
        try {
            givenBack.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** The expiry a claim gets on the backend for {@code d}: at least {@link #SHORTEST_CLAIM}. */
    static Duration claimFor(Duration d) {
        return d.compareTo(SHORTEST_CLAIM) < 0 ? SHORTEST_CLAIM : d;
    }

    /** True once the task unlocked or the lease was given back: a thread's record of it may be dropped. */
    boolean isDone() {
        return unlocked || released;
    }

    /**
     * The provider closes: gives the lease back now, or, while its task is on the backend under this monitor, as that
     * call returns (on the task's thread), so that close waits for no backend call of a task.
     */
    void closeNow() {
        closing = true;
        if (!busy) {
            releaseNow();
        }
    }

    /** Gives the lease back now, on this thread; harmless when it already was. A hold-at-least keeps the claim. */
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
            giveBackOnBackend();
        } finally {
            givenBack.countDown();
        }
    }

    private void giveBackOnBackend() {
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

    /** The release thread's turn for release number {@code which}: a moved one does nothing. */
    private void onTime(long which) {
        if (busy) { // the task is on the backend under this monitor: the release thread does not wait for it
            try {
                releases.schedule(() -> onTime(which), LOOK_AGAIN_NANOS, TimeUnit.NANOSECONDS);
                return;
            } catch (RejectedExecutionException providerClosed) {
                // closing: the provider gives every grant back itself
                return;
            }
        }
        if (!takeForRelease(which)) {
            return;
        }
        try {
            lease.keepAlive(false); // at once, should the backend stall on the release
        } catch (IllegalStateException lostOrClosed) {
            // nothing to stop
        }
        giveBack();
    }

    /**
     * Marks the grant released for release number {@code which}, unless a later one was scheduled since.
     *
     * @return true when this caller must give the lease back
     */
    private boolean takeForRelease(long which) {
        boolean stillRunning;
        synchronized (this) {
            if (released || which != scheduled) {
                return false;
            }
            stillRunning = !unlocked;
            markReleased();
        }
        if (stillRunning) {
            log.warn("ShedLock lock {} reached its lockAtMostFor while its task still runs: released, "
                    + "another process may start the task now", lock.legible());
        }
        return true;
    }

    /**
     * The fencing token of the lease, while the grant lasts.
     *
     * @throws IllegalStateException once the lease was given back, its lockAtMostFor passed, or it was lost
     */
    long fencingToken() {
        synchronized (this) {
            if (released || untilEither(until) <= 0) {
                throw new IllegalStateException("ShedLock lock " + lock.legible()
                        + " was given back (its lockAtMostFor passed or it was unlocked): stop writing under it");
            }
        }
        try {
            return lease.fencingToken();
        } catch (ExpiredLockException lost) {
            throw new IllegalStateException("ShedLock lock " + lock.legible() + " was lost: stop writing under it",
                    lost);
        }
    }

    /** How long this process may still act under the grant: zero once given back, lost or past lockAtMostUntil. */
    Duration remaining() {
        long left;
        synchronized (this) {
            if (released || unlocked) {
                return Duration.ZERO;
            }
            left = untilEither(until);
        }
        Duration leaseLeft = lease.remaining();
        Duration least = Duration.ofNanos(left).compareTo(leaseLeft) < 0 ? Duration.ofNanos(left) : leaseLeft;
        return least.isNegative() ? Duration.ZERO : least;
    }

    @Override
    public String toString() {
        return "Holding[" + lock.legible() + (onBackend ? "" : ", durations kept by this process") + "]";
    }
}
