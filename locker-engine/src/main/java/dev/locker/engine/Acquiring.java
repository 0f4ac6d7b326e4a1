package dev.locker.engine;

import dev.locker.api.Acquisition;
import dev.locker.api.GrantedTooLateException;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LeaseOptions;
import dev.locker.api.LockProbe;
import dev.locker.api.LockStatus;
import dev.locker.api.LockTransaction;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.PermanentLockingException;
import dev.locker.api.TemporaryLockingException;
import dev.locker.api.TimeSource;
import dev.locker.spi.WaitQueue;
import dev.locker.spi.Waiting;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Leases, and the waiting for them. An attempt is all or nothing: it claims every lock, checks them and keeps them
 * alive, or releases what it claimed. Several locks are always claimed in one canonical order.
 *
 * @param <S> what the backend remembers of one claim
 */
final class Acquiring<S extends LockStatus> {

    /** The engine logs under one name, whichever of its classes writes the line. */
    private static final Logger log = LoggerFactory.getLogger(LockerEngine.class);

    /** The locker a lease is of: a lease's calls go to it. */
    private final Locker locker;
    private final LockerConfig config;
    private final TimeSource time;
    private final LockProbe probe;
    private final LocalLockMediator mediator;
    /** The driver's wait queue, or null: then a waiter sleeps its back-off on the time source. */
    private final WaitQueue queue;
    private final Claims<S> claims;
    private final Background background;
    private final Closing closing;

    Acquiring(Locker locker, LockerConfig config, LocalLockMediator mediator, WaitQueue queue, Claims<S> claims,
              Background background, Closing closing) {
        this.locker = locker;
        this.config = config;
        this.time = config.timeSource();
        this.probe = config.probe();
        this.mediator = mediator;
        this.queue = queue;
        this.claims = claims;
        this.background = background;
        this.closing = closing;
    }

    /** The locks in one canonical order (encoded bytes, unsigned), validated, without repeats. */
    List<KeyColumn> canonical(Collection<KeyColumn> locks) {
        if (locks == null || locks.isEmpty()) {
            throw new IllegalArgumentException("locks must not be empty");
        }
        TreeMap<byte[], KeyColumn> ordered = new TreeMap<>(Arrays::compareUnsigned);
        for (KeyColumn l : locks) {
            config.validate(l);
            ordered.put(l.encoded(), l);
        }
        return List.copyOf(ordered.values());
    }

    /**
     * One attempt of a new lease on {@code locks} (validated, canonical), for the wait {@code waiting} (null: none),
     * on the terms of {@code options} (validated; null: the locker's):
     * a single lock's lease is its hold ({@link #attemptOne}), several are claimed under a {@link LockTransaction}.
     */
    Lease attempt(List<KeyColumn> locks, String why, Waiting waiting, LeaseOptions options) {
        if (locks.size() == 1) {
            return new Lease(locker, locks, attemptOne(locks.get(0), why, waiting, options));
        }
        return attempt(locks, new LockTransaction(why), waiting, options);
    }

    /** One attempt: claims every lock for {@code tx}, checks them, keeps them alive; all or nothing. */
    private Lease attempt(List<KeyColumn> locks, LockTransaction tx, Waiting waiting, LeaseOptions options) {
        try {
            for (int i = 0, n = locks.size(); i < n; i++) { // no iterator per attempt
                closing.ensureOpen(); // as writeLock
                claims.claim(locks.get(i), tx, waiting, options);
            }
            claims.confirm(tx, false);
            closing.ensureOpen(); // as keepAlive
            background.keepAlive(tx, options == null || options.keepAlive());
        } catch (RuntimeException | Error e) { // an Error too: a failed attempt never leaves a claim behind
            rollBack(() -> claims.withdraw(tx), e);
            throw e;
        }
        return new Lease(locker, locks, tx);
    }

    /**
     * Withdraws a failed attempt's claims, never leaving one for a hold-at-least; a failure of the withdrawal stays
     * with the attempt's own failure.
     */
    private static void rollBack(Runnable withdraw, Throwable failure) {
        try {
            withdraw.run();
        } catch (RuntimeException | Error e) {
            failure.addSuppressed(e);
        }
    }

    /**
     * {@link #attempt} for one lock: the same steps (claim, check, keep alive; all or nothing), with a hold that is
     * its own transaction, so the lease costs no transaction object, no record of its holds and no map entry.
     */
    Hold attemptOne(KeyColumn lock, String why, Waiting waiting, LeaseOptions options) {
        closing.ensureOpen();
        Hold hold = claims.leaseHold(lock, why, options);
        try {
            claims.claim(hold, null, null, waiting);
            closing.ensureOpen(); // as checkLocks
            claims.confirmLocked(hold, false);
            closing.ensureOpen(); // as keepAlive
            KeepAlive k = background.started();
            if (options == null || options.keepAlive()) {
                k.start(hold);
            }
            k.watch(hold);
        } catch (RuntimeException | Error e) { // an Error too: a failed attempt never leaves a claim behind
            rollBack(() -> claims.withdraw(hold), e);
            throw e;
        }
        return hold;
    }

    /**
     * The one waiting loop: attempts of one transaction, which a queueing backend knows as one waiter, while they
     * fail temporarily and {@code maxWait} lasts; a permanent failure ends it at once. Between attempts it pauses
     * until the backend tells of a release, or else for a jittered back-off doubling from 5 to 200 ms, never past
     * the moment the holder's claim expires (when the refusal said) nor past {@code maxWait}. A refusal from another
     * transaction of this process waits for its release here, in the process. A grant that came too late is retried
     * like a refusal: the next one may be quicker.
     */
    Acquisition waitFor(List<KeyColumn> locks, String why, Duration maxWait, LeaseOptions options) {
        Acquisition acquisition = waitLoop(locks, why, maxWait, options);
        probe.waited(acquisition, config.rid());
        return acquisition;
    }

    private Acquisition waitLoop(List<KeyColumn> locks, String why, Duration maxWait, LeaseOptions options) {
        if (maxWait == null || maxWait.isNegative()) {
            throw new IllegalArgumentException("maxWait must be zero or positive, was " + maxWait);
        }
        closing.ensureOpen();
        long start = time.nanoTime();
        long deadline = start + LockerEngine.saturatedNanos(maxWait); // centuries mean "until granted", not overflow
        // several locks: one transaction for every attempt (one waiter to a backend that queues waiters); one lock:
        // a lease's own hold per attempt, the same waiter
        LockTransaction tx = locks.size() == 1 ? null : new LockTransaction(why);
        Waiting waiting = new Waiting(locks, maxWait.isZero());
        boolean acquired = false;
        try {
            if (!waiting.once() && queue != null) {
                queue.startWaiting(waiting);
            }
            long pauseMillis = 5;
            for (int attempts = 1; ; attempts++) {
                TemporaryLockingException last;
                try {
                    Lease lease = tx == null ? attempt(locks, why, waiting, options)
                            : attempt(locks, tx, waiting, options);
                    acquired = true;
                    return new Acquisition(Acquisition.Outcome.ACQUIRED, lease, null, attempts, since(start));
                } catch (PermanentLockingException e) {
                    return new Acquisition(Acquisition.Outcome.REFUSED, null, e, attempts, since(start));
                } catch (TemporaryLockingException e) {
                    last = e;
                }
                long left = deadline - time.nanoTime();
                boolean interrupted = false;
                if (left > 0) {
                    long jittered = ThreadLocalRandom.current().nextLong(pauseMillis / 2, pauseMillis + 1);
                    long pause = Math.min(left, Duration.ofMillis(jittered).toNanos());
                    Optional<Duration> expires = last.holderExpiresIn();
                    boolean local = last.lock() != null && mediator.holder(last.lock()).isPresent();
                    if (!local && queue != null && queue.toldOfReleases() && expires.isPresent()) {
                        // woken by a release before (saturated: a holder whose clock runs far ahead may report
                        // an expiry beyond the nanosecond range)
                        pause = Math.min(left, LockerEngine.saturatedNanos(expires.get()) + 1_000_000);
                    } else if (expires.isPresent()) {
                        pause = Math.min(pause, LockerEngine.saturatedNanos(expires.get()) + 1_000_000);
                    }
                    try {
                        if (local) {
                            mediator.awaitRelease(last.lock(), pause);
                        } else if (queue != null) {
                            queue.awaitRelease(waiting, last, pause);
                        } else {
                            time.sleep(Duration.ofNanos(pause));
                        }
                    } catch (InterruptedException ie) {
                        Thread.currentThread().interrupt();
                        interrupted = true;
                    }
                    pauseMillis = Math.min(pauseMillis * 2, 200);
                }
                if (left <= 0 || interrupted || closing.isClosed()) {
                    Acquisition.Outcome outcome = last instanceof GrantedTooLateException
                            ? Acquisition.Outcome.GRANTED_TOO_LATE
                            : last.holder() != null ? Acquisition.Outcome.BUSY : Acquisition.Outcome.UNREACHABLE;
                    return new Acquisition(outcome, null, last, attempts, since(start));
                }
            }
        } finally {
            if (!waiting.once() && queue != null) {
                try {
                    queue.stopWaiting(waiting, acquired);
                } catch (RuntimeException e) {
                    log.debug("Could not end the wait for {} cleanly (locker {}): {}", locks, config.rid(), e.toString());
                }
            }
        }
    }

    private Duration since(long startNanos) {
        return Duration.ofNanos(time.nanoTime() - startNanos);
    }
}
