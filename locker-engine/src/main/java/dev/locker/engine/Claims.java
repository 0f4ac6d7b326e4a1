package dev.locker.engine;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.GrantedTooLateException;
import dev.locker.api.KeyColumn;
import dev.locker.api.LeaseOptions;
import dev.locker.api.LockOwner;
import dev.locker.api.LockProbe;
import dev.locker.api.LockStatus;
import dev.locker.api.LockTransaction;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockingException;
import dev.locker.api.LossReason;
import dev.locker.api.TemporaryLockingException;
import dev.locker.api.TimeSource;
import dev.locker.spi.LockDriver;
import dev.locker.spi.Waiting;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * The three phases on each claimed lock: claim (the mediator entry, then the backend's write), check or verify,
 * renew, and release. A hold's steps are serialised by its steps lock.
 *
 * <p>A hold's state is the one truth about whether this process holds its lock. Its deadline is compared before a
 * step and again after the step's I/O, so a step that outlived the claim never reports it held. A hold lost once
 * stays lost: a write or renewal that completes after that withdraws its claim and fails.
 *
 * @param <S> what the backend remembers of one claim
 */
final class Claims<S extends LockStatus> {

    /** The engine logs under one name, whichever of its classes writes the line. */
    private static final Logger log = LoggerFactory.getLogger(LockerEngine.class);

    private final LockerConfig config;
    private final TimeSource time;
    private final LockProbe probe;
    private final LocalLockMediator mediator;
    private final Consumer<Hold> sink;
    private final LockDriver<S> driver;
    private final Steps<S> steps;
    private final Transactions transactions;
    private final Background background;
    private final Closing closing;
    private final HoldAtLeast<S> holdAtLeast;

    Claims(LockerConfig config, LocalLockMediator mediator, Consumer<Hold> sink, LockDriver<S> driver, Steps<S> steps,
           Transactions transactions, Background background, Closing closing) {
        this.driver = driver;
        this.config = config;
        this.time = config.timeSource();
        this.probe = config.probe();
        this.mediator = mediator;
        this.sink = sink;
        this.steps = steps;
        this.transactions = transactions;
        this.background = background;
        this.closing = closing;
        this.holdAtLeast = new HoldAtLeast<>(config, driver, steps);
    }

    /**
     * The reason recorded with a transaction's claims: the {@link LockTransaction}'s (or a single-lock lease's), or
     * none.
     */
    static String whyOf(Object tx) {
        if (tx instanceof LockTransaction) {
            return ((LockTransaction) tx).why();
        }
        return tx instanceof Hold && ((Hold) tx).ownTransaction() ? ((Hold) tx).why : "";
    }

    // ---- claim ----------------------------------------------------------------------------------------------------

    /**
     * A writeLock of a validated lock, for an attempt of the wait {@code waiting} (null: no wait), on the terms of
     * {@code options} (validated; null: the locker's).
     */
    void claim(KeyColumn lock, Object tx, Waiting waiting, LeaseOptions options) {
        Object key = Transactions.keyOf(tx);
        TxHolds holds = transactions.recordOf(key);
        if (holds.find(lock) != null) {
            return; // idempotent: no I/O, no extension
        }
        Duration expiry = expiryOf(options);
        long now = time.nanoTime();
        Hold hold = new Hold(lock, tx, now + LockerEngine.saturatedNanos(expiry), sink, time.now());
        terms(hold, expiry, options, now);
        claim(hold, key, holds, waiting);
    }

    /** A new hold on {@code lock} that is its own transaction: a single-lock lease's, on {@code options}' terms. */
    Hold leaseHold(KeyColumn lock, String why, LeaseOptions options) {
        Duration expiry = expiryOf(options);
        long now = time.nanoTime();
        Hold hold = Hold.forLease(lock, why, now + LockerEngine.saturatedNanos(expiry), sink, time.now());
        terms(hold, expiry, options, now);
        return hold;
    }

    private Duration expiryOf(LeaseOptions options) {
        return options == null ? config.expiry() : options.expiryOr(config.expiry());
    }

    /** A hold-at-least counts from this reading, taken before the claim is written. */
    private static void terms(Hold hold, Duration expiry, LeaseOptions options, long now) {
        long least = options == null ? 0 : LockerEngine.saturatedNanos(options.holdAtLeast());
        hold.terms(expiry, least > 0, now + least);
    }

    /**
     * The steps of a writeLock once the hold is made: takes the mediator entry, writes the claim, records the status.
     * {@code holds} is null for a hold that is its own transaction (it is in no transaction's record).
     */
    void claim(Hold hold, Object key, TxHolds holds, Waiting waiting) {
        KeyColumn lock = hold.lock;
        Object tx = hold.tx;
        if (!takeLocal(hold)) {
            if (holds != null) {
                transactions.forgetIfEmpty(key, holds);
            }
            Object other = mediator.holder(lock).orElse("another transaction");
            LockOwner localHolder = new LockOwner(config.rid(), config.host(), config.pid(), "", whyOf(other), null);
            throw new TemporaryLockingException("lock is held by " + other + " in this process (local contention, "
                    + "no store I/O done)", lock, localHolder, null);
        }
        if (holds != null) {
            holds.add(hold);
        }
        // deleteLocks of this transaction, or close, ran meanwhile (close finds a lease's own hold by its mediator
        // entry, taken above: it either saw the entry or closed before this read)
        if ((holds != null && !transactions.isCurrent(key, holds)) || closing.isClosed()) {
            hold.release();
            mediator.release(hold);
            throw new IllegalStateException(closing.isClosed() ? closing.name() + " was closed while " + tx
                    + " claimed " + lock : "transaction " + tx + " was released while it claimed " + lock);
        }
        Hold.State claiming = hold.state();
        long started = time.nanoTime();
        S status;
        try {
            status = steps.write(lock, whyOf(tx), hold.expiry(), waiting);
        } catch (RuntimeException | Error e) { // a locking failure, a probe's, a backend's Error: the entry goes too
            drop(key, holds, hold);
            throw e;
        }
        long answered = time.nanoTime();
        String problem = null;
        ExpiredLockException refusal = null;
        if (status.isHeld() && answered - status.deadlineNanos() >= 0) {
            problem = LATE;
            refusal = tooLate(lock, "write", answered - started, hold.expiry());
        } else if (!hold.update(claiming, status, false)) {
            problem = "while our claim was written, " + hold.state().lostWhy();
            refusal = new ExpiredLockException(problem + "; our claim was withdrawn", lock, null, null);
        }
        if (refusal != null) {
            hold.lose(LossReason.EXPIRED, problem);
            steps.withdraw(lock, status, problem);
            drop(key, holds, hold);
            throw refusal;
        }
        if (status.isHeld()) {
            probe.acquired(lock, config.rid());
        }
        background.watch(hold); // a listener added while the claim was written watched the provisional deadline
    }

    /** Why a hold whose grant came too late is lost. */
    private static final String LATE = "the grant reached us after the lease's validity ended";

    /**
     * The late-grant rule's refusal: the backend made our claim the holder, but its answer came after the claim's
     * validity ended, so the claim was withdrawn and the lease never existed.
     */
    private static GrantedTooLateException tooLate(KeyColumn lock, String step, long tookNanos, Duration expiry) {
        String took = step == null ? "" : "the " + step + " took " + Duration.ofNanos(tookNanos) + ", ";
        return new GrantedTooLateException("the lock was granted, but the grant reached us after the lease's validity "
                + "ended (" + took + "the expiry is " + expiry + "); our claim was withdrawn: a longer expiry avoids "
                + "this", lock);
    }

    /** Takes the mediator entry, waiting up to {@code localWait} (on the monotonic clock) for another transaction. */
    private boolean takeLocal(Hold hold) {
        if (mediator.take(hold)) {
            return true; // the common case reads no clock
        }
        long deadline = time.nanoTime() + LockerEngine.saturatedNanos(config.localWait());
        long pauseMillis = 1;
        while (true) {
            long left = deadline - time.nanoTime();
            if (left <= 0) {
                return false;
            }
            try {
                time.sleep(Duration.ofNanos(Math.min(left, Duration.ofMillis(pauseMillis).toNanos())));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
            pauseMillis = Math.min(pauseMillis * 2, 50);
            // the hold's deadline counts from the take that makes it the entry, not from before the wait: a hold
            // that waited longer than the expiry would be the entry already past it, and taken over at once
            hold.restartProvisionalDeadline(time.nanoTime() + LockerEngine.saturatedNanos(hold.expiry()));
            if (mediator.take(hold)) {
                return true;
            }
        }
    }

    /** Gives up a hold whose claim was not written (or was withdrawn); {@code holds} null for a lease's own hold. */
    private void drop(Object key, TxHolds holds, Hold hold) {
        hold.release();
        mediator.release(hold);
        if (holds != null) {
            holds.remove(hold);
            transactions.forgetIfEmpty(key, holds);
        }
    }

    // ---- check and verify -----------------------------------------------------------------------------------------

    /** checkLocks (confirmed claims cost no I/O) or verifyLocks (they are asked about again). */
    void confirm(Object tx, boolean askAgain) {
        closing.ensureOpen();
        for (Hold hold : transactions.holdsOf(tx)) { // a snapshot: the array is never changed in place
            confirmLocked(hold, askAgain);
        }
    }

    /** Checks one hold, its steps serialised. */
    void confirmLocked(Hold hold, boolean askAgain) {
        hold.lockSteps();
        try {
            confirm(hold, askAgain);
        } finally {
            hold.unlockSteps();
        }
    }

    private void confirm(Hold hold, boolean askAgain) {
        Hold.State s = hold.state();
        S status;
        try {
            status = steps.requireLive(hold, s, "checking");
        } catch (ExpiredLockException e) {
            if (!s.isFinal() && s.status() != null && s.status().isHeld() && !s.reported()) {
                throw tooLate(hold.lock, null, 0, hold.expiry()); // granted at the write, expired before reported
            }
            throw e;
        }
        if (status.isHeld() && !askAgain) {
            if (!s.reported() && !hold.update(s, status, true)) {
                steps.requireLive(hold, hold.state(), "checking");
            }
            return; // confirmed (or granted when written): no I/O
        }
        long started = time.nanoTime();
        S checked = status.isHeld()
                ? steps.step(LockProbe.Step.VERIFY, hold.lock, "verifying a claim",
                        () -> driver.verify(hold.lock, status), hold)
                : steps.step(LockProbe.Step.CHECK, hold.lock, "checking a claim",
                        () -> driver.verify(hold.lock, status), hold);
        String problem = null;
        long answered = time.nanoTime();
        boolean late = answered - hold.deadlineOf(s) >= 0;
        if (late) {
            problem = "our claim's validity ended while it was checked";
        } else if (!hold.update(s, checked, true)) { // only a final state gets in between (steps are serialised)
            problem = "while our claim was checked, " + hold.state().lostWhy();
        }
        if (problem != null) {
            // a check that made our claim the holder only now is a grant, and this one came too late
            ExpiredLockException refusal = late && !status.isHeld() && checked.isHeld()
                    ? tooLate(hold.lock, "check", answered - started, hold.expiry())
                    : null;
            hold.lose(LossReason.EXPIRED, refusal != null ? LATE : problem);
            if (!status.isHeld()) {
                steps.withdraw(hold.lock, checked, problem); // the check may have (re)written our claim with a token
            }
            if (refusal != null) {
                throw refusal;
            }
            throw new ExpiredLockException(problem + "; release the transaction's locks and start again", hold.lock,
                    null, null, hold.state().reason());
        }
        if (!status.isHeld() && checked.isHeld()) {
            probe.acquired(hold.lock, config.rid());
        }
        failIfReleasing(hold, "checked");
    }

    // ---- renew ----------------------------------------------------------------------------------------------------

    /** renewLocks: to each hold's own expiry, or to {@code newExpiry} (validated) when it is not null. */
    void renew(Object tx, Duration newExpiry) {
        closing.ensureOpen();
        try {
            for (Hold hold : transactions.holdsOf(tx)) {
                hold.lockSteps();
                try {
                    renewLocked(hold, newExpiry);
                } finally {
                    hold.unlockSteps();
                }
            }
        } finally {
            if (newExpiry != null) {
                // a shorter expiry must not wait for a tick timed on the old one, even for the holds renewed before
                // one failed
                background.expiryChanged(tx);
            }
        }
    }

    /** For the keep-alive: renews one hold; false when it is lost (the hold then told its listeners). */
    boolean renewQuietly(Hold hold) {
        if (!hold.tryLockSteps()) { // a step is in flight on this hold: never block the keep-alive of other holds
            throw new TemporaryLockingException("a step is in flight on this hold; renewal postponed", hold.lock);
        }
        try {
            renewLocked(hold, null);
            return true;
        } catch (ExpiredLockException e) {
            return false;
        } finally {
            hold.unlockSteps();
        }
    }

    private void renewLocked(Hold hold, Duration newExpiry) {
        Hold.State s = hold.state();
        S status = steps.requireLive(hold, s, "renewing");
        Duration expiry = newExpiry != null ? newExpiry : hold.expiry();
        S renewed;
        try {
            renewed = steps.step(LockProbe.Step.RENEW, hold.lock, "renewing a claim",
                    () -> driver.renew(hold.lock, status, expiry), hold);
        } catch (RuntimeException | Error e) {
            if (e instanceof ExpiredLockException || expiry.compareTo(hold.expiry()) >= 0) {
                throw e; // a longer or equal term that may have landed leaves our former deadline the earlier one
            }
            // a shorter term may have landed: the claim may die before our former deadline, so we hold no longer
            String problem = "a renewal for a shorter term (" + expiry + ") failed, and may have been written";
            hold.lose(LossReason.EXPIRED, problem);
            steps.withdraw(hold.lock, status, problem);
            if (e instanceof Error error) {
                throw error; // the hold is lost all the same
            }
            throw new ExpiredLockException(problem + "; release the transaction's locks and start again", hold.lock,
                    null, e, LossReason.EXPIRED);
        }
        String problem = null;
        long now = time.nanoTime();
        if (now - hold.deadlineOf(s) >= 0) {
            // Answered after our former deadline: the claim may have been judged dead meanwhile (and a claimant may be
            // about to scrub it), so the renewal cannot count, even if the backend accepted it. A renewal that answers
            // before it landed while the claim was alive on every clock that agrees with ours.
            problem = "the renewal answered after our former deadline";
        } else if (now - renewed.deadlineNanos() >= 0) {
            problem = "the renewal's validity ended before its answer reached us";
        } else if (!hold.update(s, renewed, s.reported())) { // only a final state gets in between (steps are serialised)
            problem = "while our claim was renewed, " + hold.state().lostWhy();
        }
        if (problem != null) {
            hold.lose(LossReason.EXPIRED, problem);
            steps.withdraw(hold.lock, renewed, problem);
            throw new ExpiredLockException(problem + "; release the transaction's locks and start again", hold.lock,
                    null, null, LossReason.EXPIRED);
        }
        if (newExpiry != null) {
            hold.expiry(newExpiry); // under the steps lock: the keep-alive's next renewal keeps it
        }
        failIfReleasing(hold, "renewed");
        background.watch(hold);
    }

    /**
     * Fails a step whose status is recorded when a release began meanwhile. That release waits for this step, then
     * deletes (or leaves) the claim the step recorded.
     */
    private void failIfReleasing(Hold hold, String step) {
        if (transactions.holdOf(hold.lock, hold.tx) != hold) {
            throw new ExpiredLockException("the lock was released while it was " + step + "; the release ends our "
                    + "claim", hold.lock, null, null);
        }
    }

    // ---- release --------------------------------------------------------------------------------------------------

    /**
     * How a claim ends: released (left for its hold-at-least), released saying whether it was still ours, or
     * withdrawn (always deleted).
     */
    private enum Ending { RELEASE, ASK, WITHDRAW }

    void deleteLocks(Object tx) {
        release(tx, Ending.RELEASE);
    }

    /**
     * Releases every claim of {@code tx}; when {@code ask}, says whether each was still ours (else the answer is
     * false and no I/O beyond the deletes is done). False for a transaction released before.
     */
    boolean release(Object tx, boolean ask) {
        return release(tx, ask ? Ending.ASK : Ending.RELEASE);
    }

    /**
     * Rolls back a failed attempt: deletes every claim of {@code tx}, and leaves none for a hold-at-least. There never
     * was a lease, so nothing may keep the locks from others.
     */
    void withdraw(Object tx) {
        release(tx, Ending.WITHDRAW);
    }

    private boolean release(Object tx, Ending ending) {
        if (tx == null) {
            return false;
        }
        Hold own = transactions.leaseHold(tx);
        if (own != null) {
            boolean ours = false;
            if (own.markDone()) { // as the removal of a transaction's record below: once
                background.stop(own);
                try {
                    ours = finish(own, ending);
                } finally {
                    transactions.leaseFinished(own);
                }
            }
            return ours;
        }
        TxHolds holds = transactions.remove(tx);
        if (holds == null) {
            return false;
        }
        background.stop(holds);
        boolean ours = true;
        Failures failures = new Failures();
        for (Hold hold : holds.all()) {
            try {
                ours &= finish(hold, ending);
            } catch (RuntimeException | Error e) { // one claim's failure strands none of the others
                ours = false;
                failures.add(e);
            }
        }
        failures.rethrow();
        return ours;
    }

    /**
     * For close: marks every open hold lost ("the locker was closed") and deletes their claims (best effort). The
     * holds of single-lock leases are found as their locks' mediator entries, or among the lost leases.
     */
    void loseAll(long endNanos) {
        Failures failures = new Failures(); // an Error on one claim strands none of the others
        transactions.removeEach(holds -> {
            for (Hold hold : holds.all()) {
                failures.run(() -> finishWithin(hold, endNanos));
            }
        });
        // each live lease hold is its lock's mediator entry (a claim under way saw the closed flag after taking its
        // entry, or took it before this looks); a lost one may be among the lost leases instead
        mediator.forEachHold(hold -> {
            if (hold.ownTransaction() && hold.reportsTo(sink)) {
                failures.run(() -> closeLease(hold, endNanos));
            }
        });
        for (Hold hold : transactions.lostLeases()) {
            failures.run(() -> closeLease(hold, endNanos));
        }
        failures.rethrow();
    }

    /** Close for a hold that is its own transaction, unless a release or close finishes it already. */
    private void closeLease(Hold hold, long endNanos) {
        if (hold.markDone()) {
            try {
                finishWithin(hold, endNanos);
            } finally {
                transactions.leaseFinished(hold);
            }
        }
    }

    /**
     * {@link #finish} for close, which marks the hold lost ("the locker was closed"). It waits for a step in flight
     * until {@code endNanos} (System.nanoTime), whatever interrupts come. A step stuck in the backend past that finds the hold final when
     * it returns, and the claim expires if it never does.
     */
    private void finishWithin(Hold hold, long endNanos) {
        if (!closing.lockSteps(hold, endNanos)) {
            hold.lose(LossReason.LOCKER_CLOSED, CLOSED);
            log.warn("Locker {} closed while a step on {} was still in the backend; its claim is left to that step or "
                    + "to its expiry", config.rid(), hold.lock);
            return;
        }
        try {
            releaseHold(hold, hold.lose(LossReason.LOCKER_CLOSED, CLOSED), Ending.RELEASE);
        } finally {
            hold.unlockSteps();
        }
    }

    /** Why close marks a hold lost. */
    private static final String CLOSED = "the locker was closed";

    /**
     * Marks a hold released and deletes its claim. A step in flight on it (a keep-alive renewal, a check) ends first.
     * So a rewrite it sends cannot land after our delete and revive the claim. The hold is marked only then: that
     * step records its status, fails, and leaves the claim this release answers for to this release.
     */
    private boolean finish(Hold hold, Ending ending) {
        hold.lockSteps();
        try {
            return releaseHold(hold, hold.release(), ending);
        } finally {
            hold.unlockSteps();
        }
    }

    /**
     * Deletes the claim a hold had (if any) and frees its mediator entry, unless its claim is still being written (then
     * the claiming thread frees it); logs a backend failure. A held claim inside its hold-at-least is renewed to the
     * time left instead, and left on the backend to expire then (see {@link HoldAtLeast}), unless it is withdrawn.
     * Returns whether the claim was still ours, when asked (a claim left for its hold-at-least always answers);
     * otherwise false. A claim released lost, or past its deadline by this process's monotonic clock, was not ours:
     * one rule for every backend.
     */
    @SuppressWarnings("unchecked")
    private boolean releaseHold(Hold hold, Hold.State before, Ending ending) {
        boolean ours = false;
        try {
            if (before.status() != null && before.phase() != Hold.Phase.RELEASED) {
                S status = (S) before.status();
                long now = time.nanoTime();
                // past its deadline a claim is not ours, whatever the backend still shows: isValid said so already
                boolean live = before.phase() == Hold.Phase.CLAIMED && status.isHeld()
                        && now - status.deadlineNanos() < 0;
                long least = ending != Ending.WITHDRAW && HoldAtLeast.mayLeave(before, status)
                        ? hold.holdAtLeastLeft(now) : 0;
                if (least > 0) {
                    ours = holdAtLeast.leave(hold, status, least) && live;
                } else if (ending == Ending.ASK && live) {
                    ours = steps.deleteOwned(hold.lock, status);
                } else {
                    steps.delete(hold.lock, status);
                }
            }
        } catch (LockingException ex) {
            log.warn("Could not delete our claim on {} (locker {}); it expires on its own: {}", hold.lock, config.rid(),
                    ex.getMessage(), ex);
        } finally {
            if (before.phase() != Hold.Phase.CLAIMING) {
                mediator.release(hold);
            } // else its claim is being written: the claiming thread drops the entry once the write answered (after
              // withdrawing what it wrote), and a close waits for that (Closing.awaitOperationsInFlight)
            background.unwatch(hold); // without a keep-alive nothing watches this hold
        }
        return ours;
    }

    // ---- what a transaction holds ---------------------------------------------------------------------------------

    Optional<LockStatus> status(KeyColumn lock, Object tx) {
        Hold hold = transactions.holdOf(lock, tx);
        if (hold == null) {
            return Optional.empty();
        }
        Hold.State s = hold.state();
        return s.isFinal() ? Optional.empty() : Optional.ofNullable(s.status());
    }

    long fencingToken(KeyColumn lock, Object tx) {
        Hold hold = transactions.holdOf(lock, tx);
        if (hold == null) {
            throw new IllegalStateException("transaction " + tx + " has not claimed lock " + lock);
        }
        S status = steps.requireLive(hold, hold.state(), "reading the fencing token of");
        if (!status.isHeld()) {
            throw new IllegalStateException("lock " + lock + " is claimed but not checked yet: call checkLocks first");
        }
        return status.fencingToken();
    }
}
