package dev.locker.engine;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.ForcedRelease;
import dev.locker.api.KeyColumn;
import dev.locker.api.LockProbe;
import dev.locker.api.LockStatus;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockingException;
import dev.locker.api.TemporaryLockingException;
import dev.locker.api.LossReason;
import dev.locker.api.TimeSource;
import dev.locker.spi.LockDriver;
import dev.locker.spi.LockRecords;
import dev.locker.spi.Waiting;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Optional;
import java.util.function.Supplier;

/**
 * One backend step on one claim: the probe is told before and after it, and its failure reaches the caller as a
 * {@link LockingException} naming the lock, with the original failure as its cause. A claim the backend finds gone
 * or taken over is attributed to a forced release when the release's record names it.
 *
 * @param <S> what the driver remembers of one claim
 */
final class Steps<S extends LockStatus> {

    /** The engine logs under one name, whichever of its classes writes the line. */
    private static final Logger log = LoggerFactory.getLogger(LockerEngine.class);

    private final LockDriver<S> driver;
    /** The driver's records, or null: a forced release's record attributes a loss only where there are any. */
    private final LockRecords<S> records;
    private final LockerConfig config;
    private final TimeSource time;
    private final LockProbe probe;

    Steps(LockDriver<S> driver, LockerConfig config) {
        this.driver = driver;
        this.records = driver.records().orElse(null);
        this.config = config;
        this.time = config.timeSource();
        this.probe = config.probe();
    }

    /** The write step of a claim: {@link #step} written out, so the hot path makes no lambda per claim. */
    S write(KeyColumn lock, String why, java.time.Duration expiry, Waiting waiting) {
        probe.before(LockProbe.Step.WRITE, lock, config.rid());
        try {
            S result = driver.write(lock, config.owner(why), expiry, waiting);
            probe.after(LockProbe.Step.WRITE, lock, config.rid(), null);
            return result;
        } catch (RuntimeException e) {
            LockingException t = driver.translate(e, lock, "writing a claim");
            probe.after(LockProbe.Step.WRITE, lock, config.rid(), t);
            throw t;
        } catch (Error e) {
            probe.after(LockProbe.Step.WRITE, lock, config.rid(), asFailure(e, lock, "writing a claim"));
            throw e;
        }
    }

    /** The delete step of a release: {@link #step} written out, so a release makes no capturing lambda. */
    void delete(KeyColumn lock, S status) {
        probe.before(LockProbe.Step.RELEASE, lock, config.rid());
        try {
            driver.release(lock, status);
            probe.after(LockProbe.Step.RELEASE, lock, config.rid(), null);
        } catch (RuntimeException e) {
            LockingException t = driver.translate(e, lock, "deleting a claim");
            probe.after(LockProbe.Step.RELEASE, lock, config.rid(), t);
            throw t;
        } catch (Error e) {
            probe.after(LockProbe.Step.RELEASE, lock, config.rid(), asFailure(e, lock, "deleting a claim"));
            throw e;
        }
    }

    /** The delete step of a release that says whether the claim was still ours ({@link LockDriver#releaseOwned}). */
    boolean deleteOwned(KeyColumn lock, S status) {
        return step(LockProbe.Step.RELEASE, lock, "deleting a claim", () -> driver.releaseOwned(lock, status));
    }

    /** Runs one backend step between the probe's two calls, translating its failure. */
    <T> T step(LockProbe.Step step, KeyColumn lock, String action, Supplier<T> op) {
        probe.before(step, lock, config.rid());
        try {
            T result = op.get();
            probe.after(step, lock, config.rid(), null);
            return result;
        } catch (RuntimeException e) {
            LockingException t = driver.translate(e, lock, action);
            probe.after(step, lock, config.rid(), t);
            throw t;
        } catch (Error e) {
            probe.after(step, lock, config.rid(), asFailure(e, lock, action));
            throw e;
        }
    }

    /**
     * An Error as the probe sees it: a temporary failure, since the keep-alive retries it like one. The caller still
     * gets the Error itself.
     */
    private static RuntimeException asFailure(Error e, KeyColumn lock, String action) {
        return new TemporaryLockingException(action + " failed: " + e, lock, null, e);
    }

    /** Like {@link #step(LockProbe.Step, KeyColumn, String, Supplier)}; an {@link ExpiredLockException} loses the hold. */
    <T> T step(LockProbe.Step step, KeyColumn lock, String action, Supplier<T> op, Hold hold) {
        try {
            return step(step, lock, action, op);
        } catch (ExpiredLockException e) {
            ExpiredLockException told = forcedAway(hold, e);
            hold.lose(told.reason(), told.getMessage(), told.holder());
            throw told;
        }
    }

    /** Deletes a claim this process will not use (compare-and-delete); if that fails, it expires. */
    void withdraw(KeyColumn lock, S status, String why) {
        try {
            step(LockProbe.Step.RELEASE, lock, "withdrawing a claim", () -> {
                driver.release(lock, status);
                return status;
            });
        } catch (LockingException e) {
            log.warn("Could not withdraw our claim on {} ({}); it expires on its own: {}", lock, why, e.getMessage());
        }
    }

    /** The status of a hold that is neither lost nor past its deadline; otherwise marks it lost and throws. */
    @SuppressWarnings("unchecked")
    S requireLive(Hold hold, Hold.State s, String action) {
        if (s.isFinal()) {
            throw new ExpiredLockException("lock lost before " + action + " it: " + s.lostWhy()
                    + "; release the transaction's locks and start again", hold.lock, null, null);
        }
        if (s.status() == null) {
            throw new IllegalStateException("the claim on " + hold.lock + " is still being written by another thread");
        }
        if (time.nanoTime() - hold.deadlineOf(s) >= 0) {
            throw lost(hold, "our claim's validity ended (by this process's monotonic clock)");
        }
        return (S) s.status();
    }

    private ExpiredLockException lost(Hold hold, String why) {
        hold.lose(LossReason.EXPIRED, why);
        return new ExpiredLockException(why + "; release the transaction's locks and start again", hold.lock, null, null,
                LossReason.EXPIRED);
    }

    /**
     * A claim found gone or taken over: if the record of the last forced release took this claim, the loss is
     * {@link LossReason#FORCE_RELEASED}, naming who and why. One read, on this path only.
     */
    private ExpiredLockException forcedAway(Hold hold, ExpiredLockException e) {
        if (records == null || (e.reason() != LossReason.GONE && e.reason() != LossReason.TAKEN_OVER)) {
            return e;
        }
        try {
            Optional<ForcedRelease> forced = Operations.forcedRecord(records, hold.lock);
            if (forced.isPresent() && tookThisClaim(forced.get(), hold)) {
                return new ExpiredLockException("our claim was " + forced.get(), hold.lock, e.holder(), e,
                        LossReason.FORCE_RELEASED);
            }
        } catch (RuntimeException ignored) {
            // the loss stands as the backend reported it
        }
        return e;
    }

    /**
     * Did the forced release {@code forced} take {@code hold}'s claim? It did when it names this locker as the holder
     * and the claim's fencing token. A record without a token, or a hold whose token is not known, matches by time
     * instead: not older than this claim, less one expiry for the operator's clock.
     */
    private boolean tookThisClaim(ForcedRelease forced, Hold hold) {
        if (!forced.released().map(o -> o.rid().equals(config.rid())).orElse(false)) {
            return false;
        }
        LockStatus status = hold.state().status();
        long ours = status == null ? 0 : status.fencingToken();
        if (forced.releasedToken().isPresent() && ours > 0) {
            return forced.releasedToken().getAsLong() == ours;
        }
        java.time.Instant claimed = hold.claimedAt();
        return claimed == null || forced.at().isAfter(claimed.minus(config.expiry()));
    }
}
