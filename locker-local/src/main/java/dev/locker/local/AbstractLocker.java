package dev.locker.local;

import dev.locker.api.Acquisition;
import dev.locker.api.ExpiredLockException;
import dev.locker.api.ForcedRelease;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LocalArbitration;
import dev.locker.api.LockInfo;
import dev.locker.api.LockLost;
import dev.locker.api.LockOwner;
import dev.locker.api.LockPage;
import dev.locker.api.LockStatus;
import dev.locker.api.LockTransaction;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockingException;
import dev.locker.api.PermanentLockingException;
import dev.locker.api.Run;
import dev.locker.api.RunRecord;
import dev.locker.api.TemporaryLockingException;
import dev.locker.api.TimeSource;
import dev.locker.spi.StoreException;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * The three-phase template every backend shares. It arbitrates the transactions of this JVM through a
 * {@link LocalLockMediator}, keeps one {@link Hold} per claimed lock, and calls the backend only through a few hooks.
 * It keeps the public calls and the hooks; each job is done by one package-private collaborator, which reaches the
 * backend through {@link Backend}: {@link Claims} (the three phases on each hold), {@link Acquiring} (leases and
 * waiting), {@link RunOnce}, {@link Operations} (the operator's calls), {@link Transactions} (the registry of
 * transactions), {@link Background} (keep-alive and the lost signal) and {@link Closing}.
 *
 * <p>Invariants kept, for every backend:
 * <ul>
 *   <li>one record per claimed lock: the hold is the mediator's entry and the transaction's bookkeeping at once, and
 *       its state (the backend's status, the deadline) is the only truth about whether this process holds the lock;</li>
 *   <li>one clock for validity: a hold's deadline is on the monotonic clock, computed by the backend from one reading
 *       taken before the request that wrote or renewed the claim ({@link #deadline}); it is compared before a step
 *       and again after the step's I/O, so a step that outlived the claim never reports it held;</li>
 *   <li>a hold lost once (taken over locally after its deadline, told by the backend, released, or its locker closed)
 *       stays lost: a write or renewal that completes after that withdraws its claim and fails;</li>
 *   <li>{@link #writeLock} is idempotent per (transaction, lock): the second call does no I/O and does not extend;</li>
 *   <li>{@link #deleteLocks} tries to delete every claim, always frees the mediator, and never throws for a backend
 *       failure (it logs it once; the claim then expires);</li>
 *   <li>every backend failure reaches the caller as a {@link TemporaryLockingException} or
 *       {@link PermanentLockingException} naming the lock, with the original failure as its cause.</li>
 * </ul>
 *
 * @param <S> what the backend remembers of one claim
 */
public abstract class AbstractLocker<S extends LockStatus> implements Locker {

    /** The name of the record a finished run leaves with its job's lock. */
    protected static final String DONE = "done";
    /** The name of the record a forced release leaves. */
    protected static final String FORCED = "forced";

    protected final LockerConfig config;
    protected final TimeSource time;
    protected final LocalLockMediator mediator;
    /**
     * Told once by each hold when it is lost: one instance for every hold, not a method reference per claim. It names
     * this locker's clock, on which a shared mediator judges our holds' deadlines.
     */
    private final Consumer<Hold> lostSink = new Hold.ClockedSink() {
        @Override
        public void accept(Hold hold) {
            background.lost(hold);
        }

        @Override
        public TimeSource time() {
            return time;
        }
    };
    private final Transactions transactions;
    private final Closing closing;
    private final Background background;
    private final Claims<S> claims;
    private final Acquiring<S> acquiring;
    private final RunOnce<S> runOnce;
    private final Operations<S> operations;

    /**
     * @param config   the settings; the locker runs with {@link LockerConfig#forNewInstance()} of it, so its rid is its own
     * @param mediator the JVM-local arbitration to share with other lockers of this process on the same backend, or
     *                 null for a mediator of this locker's own
     */
    protected AbstractLocker(LockerConfig config, LocalLockMediator mediator) {
        this.config = Objects.requireNonNull(config, "config must not be null").forNewInstance();
        this.time = this.config.timeSource();
        this.mediator = mediator != null ? mediator : mediatorOf(this.config);
        Backend<S> backend = new HookCalls<>(this);
        Steps<S> steps = new Steps<>(backend, this.config);
        this.transactions = new Transactions(lostSink);
        this.closing = new Closing(this::toString, this.mediator, lostSink, this.config.rid());
        KeepAliveHost host = new KeepAliveHost() {
            @Override
            public boolean keptAlive(Object tx) {
                return transactions.keptAlive(tx);
            }

            @Override
            public boolean renewQuietly(Hold hold) {
                return claims.renewQuietly(hold);
            }

            @Override
            public boolean isClosed() {
                return closing.isClosed();
            }
        };
        this.background = new Background(() -> new KeepAlive(host, this.config, time), closing, transactions,
                this.config.probe(), this.config.rid());
        this.claims = new Claims<>(this.config, this.mediator, lostSink, backend, steps, transactions, background,
                closing);
        this.acquiring = new Acquiring<>(this, this.config, this.mediator, backend, claims, background, closing);
        this.runOnce = new RunOnce<>(this, this.config, backend, steps, transactions, acquiring, closing);
        this.operations = new Operations<>(this.config, backend, closing);
    }

    /** From a backend's builder: its effective configuration and mediator. */
    protected AbstractLocker(LockerBuilder<?> builder) {
        this(builder.effectiveConfig(), builder.mediator);
    }

    /**
     * {@code d} in nanoseconds, saturated at a quarter of the long range (~73 years) either way, so that a monotonic
     * reading plus it cannot overflow (an expiry may be up to {@link LockerConfig#MAX_EXPIRY}, 100 years, beyond it; a
     * holder then believes in its claim for ~73 years, never longer than the claim lives).
     */
    protected static long saturatedNanos(Duration d) {
        try {
            return Math.max(Long.MIN_VALUE / 4, Math.min(Long.MAX_VALUE / 4, d.toNanos()));
        } catch (ArithmeticException overflow) {
            return d.isNegative() ? Long.MIN_VALUE / 4 : Long.MAX_VALUE / 4;
        }
    }

    private static LocalLockMediator mediatorOf(LockerConfig config) {
        LocalArbitration shared = config.localArbitration();
        if (shared == null) {
            return LocalLockMediator.standalone("locker-" + config.rid(), config.timeSource());
        }
        if (!(shared instanceof LocalLockMediator)) {
            throw new IllegalArgumentException("localArbitration must come from another locker of this library "
                    + "(Locker.arbitration()), was " + shared.getClass().getName());
        }
        return (LocalLockMediator) shared;
    }

    @Override
    public LocalArbitration arbitration() {
        return mediator;
    }

    // ---- the backend's hooks ---------------------------------------------------------------------------------

    /**
     * Writes a claim on {@code lock} in the backend. An atomic backend decides seniority in the same step and returns a
     * held status (then the first checkLocks costs no I/O); when it sees another live holder it removes its own claim
     * and throws {@link TemporaryLockingException} naming that holder. The status's deadline comes from
     * {@link #deadline} with a monotonic reading taken before the request that wrote the claim.
     */
    protected abstract S writeSingleLock(KeyColumn lock, LockOwner owner);

    /**
     * Confirms that the claim {@code status} is the senior live claim on {@code lock}; returns the held status with
     * its fencing token (and the same deadline). Throws {@link TemporaryLockingException} naming the holder when
     * another claim is senior, and {@link ExpiredLockException} when our own claim is dead or gone. Atomic backends,
     * whose {@link #writeSingleLock} always returns a held status or throws, never reach it and need not override it.
     */
    protected S checkSingleLock(KeyColumn lock, S status) {
        throw new IllegalStateException(getClass().getSimpleName() + " grants a claim when it writes it, so a claim that "
                + "is not held cannot be checked: " + status);
    }

    /**
     * For {@link #verifyLocks}: asks the backend, in one round trip and without changing anything, whether the held
     * claim {@code status} is still ours and alive; returns the status (the same deadline) or throws {@link ExpiredLockException} naming the
     * new holder where known.
     */
    protected abstract S verifySingleLock(KeyColumn lock, S status);

    /**
     * Extends the claim's expiry in place (same seniority, same token), only if it is still ours and alive; the
     * returned status carries the new deadline from a reading taken before the renewing request.
     */
    protected abstract S renewSingleLock(KeyColumn lock, S status);

    /** Deletes our claim, only if it is still ours (compare-and-delete). */
    protected abstract void deleteSingleLock(KeyColumn lock, S status);

    /** The owner of the senior live claim on {@code lock}, or empty when it is free. */
    protected abstract Optional<LockOwner> readHolder(KeyColumn lock);

    /** Removes every claim on {@code lock}; true if there was any. */
    protected abstract boolean deleteAllClaims(KeyColumn lock);

    /**
     * For {@link #holding} and a conditional forced release: the senior live claim on {@code lock} as
     * {@link #readHolder} decides it, with its fencing token (0 for a wait-and-read-back claim not confirmed yet) and
     * expiry; empty when the lock is free.
     */
    protected abstract Optional<LockInfo> readHolding(KeyColumn lock);

    /**
     * For a conditional forced release: removes the claim on {@code lock} that carries fencing token {@code token},
     * and no other, and writes {@code record} as the record {@link #FORCED} only if that claim is there; true if it
     * removed it. Atomic with the check where the backend can (then the record is written exactly when the claim is
     * removed); elsewhere the record is written just before a removal conditional on that claim, and may then name a
     * claim that ended on its own in between (never another one).
     */
    protected abstract boolean deleteClaimWithToken(KeyColumn lock, long token, byte[] record);

    /**
     * For {@link #list}: up to {@code limit} live held locks whose key starts with {@code keyPrefix}, after
     * {@code cursor} (null: from the start; else a cursor this backend issued, decoded before any I/O, an
     * {@link IllegalArgumentException} when it is not one). Bounded: O(limit) entries in memory and a bounded number of
     * round trips per call; a page may be short, or empty, with a next cursor. Arguments are validated already.
     */
    protected abstract LockPage listHeld(byte[] keyPrefix, int limit, String cursor);

    /**
     * Writes a claim like {@link #writeSingleLock(KeyColumn, LockOwner)}, for an attempt of the wait {@code waiting}
     * (null for an attempt that does not wait). A backend that queues waiters (Redis) overrides it to put a refused
     * waiter in the lock's queue and to grant no one who arrived later while it waits.
     */
    protected S writeSingleLock(KeyColumn lock, LockOwner owner, Waiting waiting) {
        return writeSingleLock(lock, owner);
    }

    /** A wait begins, before its first attempt: a backend that tells of releases starts listening for them here. */
    protected void startWaiting(Waiting waiting) {
    }

    /**
     * Pauses a waiter after the backend refused {@code refusal}, for at most {@code maxNanos}: returns early where the
     * backend tells of a release. The default sleeps {@code maxNanos} on the time source.
     */
    protected void awaitRelease(Waiting waiting, TemporaryLockingException refusal, long maxNanos)
            throws InterruptedException {
        time.sleep(Duration.ofNanos(maxNanos));
    }

    /**
     * A wait ended ({@code acquired}: with a grant). A backend that queued it removes what is left of it (best
     * effort: a queue entry nobody refreshes lapses on its own).
     */
    protected void stopWaiting(Waiting waiting, boolean acquired) {
    }

    /**
     * True when {@link #awaitRelease} wakes on a release, so a waiter may pause until the holder's claim expires
     * instead of polling with back-off.
     */
    protected boolean toldOfReleases() {
        return false;
    }

    /**
     * Reads the record {@code name} kept with {@code lock}, or empty. A record is not a claim: releases, expiry and
     * forced releases leave it alone; it is gone only when the backend loses the lock's data. {@code name} is one of
     * this library's constants (lower-case letters), never a user's string.
     */
    protected abstract Optional<byte[]> readRecord(KeyColumn lock, String name);

    /**
     * Writes the record {@code name} of {@code lock}, only while {@code holding} (a held status of this locker on
     * {@code lock}) is still the holder, and never over a record written under a higher fencing token; false when
     * the claim no longer holds the lock (nothing written). Atomic with that check where the backend can (Redis,
     * HBase); elsewhere checked just before, with the token guard against a late writer.
     */
    protected abstract boolean writeRecord(KeyColumn lock, String name, byte[] value, S holding);

    /** Writes the record {@code name} of {@code lock} whoever holds it (an operator's record: a forced release). */
    protected abstract void putRecord(KeyColumn lock, String name, byte[] value);

    /** Releases connections and threads of the backend; called once by {@link #close()}. */
    protected void closeBackend() {
    }

    /**
     * Maps a backend's own failure to the exception hierarchy. Backends override it for their client's exception
     * types and call {@code super} for the rest.
     */
    protected LockingException translate(RuntimeException e, KeyColumn lock, String action) {
        if (e instanceof LockingException) {
            return (LockingException) e;
        }
        if (e instanceof StoreException) {
            return ((StoreException) e).isTemporary()
                    ? new TemporaryLockingException(action + " failed temporarily: " + e.getMessage(), lock, null, e)
                    : new PermanentLockingException(action + " failed: " + e.getMessage(), lock, null, e);
        }
        return new PermanentLockingException(action + " failed unexpectedly: " + e, lock, null, e);
    }

    /**
     * The deadline of a claim whose lifetime on the deciding clock is {@code validity}, counted from {@code startNanos},
     * a monotonic reading of this locker's time source taken before the request that wrote or renewed the claim. One
     * percent of the validity is kept back for the rate at which two hosts' clocks may drift apart meanwhile.
     */
    protected final long deadline(long startNanos, Duration validity) {
        long nanos = saturatedNanos(validity);
        return startNanos + Math.max(0, nanos - nanos / 100);
    }


    // ---- the contract -----------------------------------------------------------------------------------------

    @Override
    public void writeLock(KeyColumn lock, Object tx) {
        config.validate(lock);
        if (tx == null) {
            throw new IllegalArgumentException("tx must not be null");
        }
        if (transactions.leaseHold(tx) != null) {
            throw new IllegalArgumentException("transaction " + tx + " belongs to a single-lock lease, which holds its "
                    + "one lock only; claim locks under a transaction of your own");
        }
        closing.ensureOpen();
        claims.claim(lock, tx, null);
    }

    @Override
    public void checkLocks(Object tx) {
        claims.confirm(tx, false);
    }

    @Override
    public void verifyLocks(Object tx) {
        claims.confirm(tx, true);
    }

    @Override
    public void renewLocks(Object tx) {
        claims.renew(tx);
    }

    @Override
    public void deleteLocks(Object tx) {
        claims.deleteLocks(tx);
    }

    @Override
    public Optional<LockStatus> status(KeyColumn lock, Object tx) {
        closing.ensureOpen();
        return claims.status(lock, tx);
    }

    @Override
    public long fencingToken(KeyColumn lock, Object tx) {
        closing.ensureOpen();
        return claims.fencingToken(lock, tx);
    }

    // ---- leases, waiting and run-once ----------------------------------------------------------------------------

    @Override
    public Lease acquire(KeyColumn lock, String why) {
        config.validate(lock);
        return acquiring.attempt(List.of(lock), why, null);
    }

    @Override
    public Lease acquireAll(Collection<KeyColumn> locks, String why) {
        return acquiring.attempt(acquiring.canonical(locks), why, null);
    }

    @Override
    public Optional<Lease> tryAcquire(KeyColumn lock, String why, Duration maxWait) {
        return acquireWithin(lock, why, maxWait).leaseOrThrowRefusal();
    }

    @Override
    public Acquisition acquireWithin(KeyColumn lock, String why, Duration maxWait) {
        config.validate(lock);
        return acquiring.waitFor(List.of(lock), why, maxWait);
    }

    @Override
    public Optional<Lease> tryAcquireAll(Collection<KeyColumn> locks, String why, Duration maxWait) {
        return acquiring.waitFor(acquiring.canonical(locks), why, maxWait).leaseOrThrowRefusal();
    }

    @Override
    public Run runOnce(KeyColumn job, String why, Consumer<Lease> task) {
        return runOnce.run(job, why, null, task);
    }

    @Override
    public Run runAtMostOncePer(KeyColumn job, Duration period, String why, Consumer<Lease> task) {
        if (period == null || period.isZero() || period.isNegative()) {
            throw new IllegalArgumentException("period must be positive, was " + period);
        }
        return runOnce.run(job, why, period, task);
    }

    /**
     * One wait of {@link #tryAcquire}, {@link #acquireWithin} or {@link #tryAcquireAll}: its attempts, under one
     * transaction, are one waiter to a backend that queues waiters. {@link #id()} is unique in this JVM; a backend
     * adds its own instance id to make it unique across processes. It is compared by identity: a backend that keeps
     * something for a wait between its hooks keys it by the Waiting.
     */
    protected static final class Waiting {
        private static final AtomicLong SEQ = new AtomicLong();

        private final long id = SEQ.incrementAndGet();
        private final List<KeyColumn> locks;
        private final boolean once;

        Waiting(List<KeyColumn> locks, boolean once) {
            this.locks = locks;
            this.once = once;
        }

        public long id() {
            return id;
        }

        /** The locks waited for, in canonical order. */
        public List<KeyColumn> locks() {
            return locks;
        }

        /** True when the wait makes one attempt only (no time to wait): nothing needs to be queued. */
        public boolean once() {
            return once;
        }
    }

    // ---- keep-alive and the lost signal ---------------------------------------------------------------------------

    @Override
    public void whenLost(KeyColumn lock, Object tx, Consumer<LockLost> listener) {
        Objects.requireNonNull(listener, "listener must not be null");
        closing.ensureOpen();
        Hold hold = transactions.holdOf(lock, tx);
        if (hold == null) {
            throw new IllegalStateException("transaction " + tx + " has not claimed lock " + lock);
        }
        background.whenLost(hold, listener);
    }

    @Override
    public void keepAlive(Object tx, boolean on) {
        closing.ensureOpen();
        background.keepAlive(tx, on);
    }

    /** Runs {@code task} once after {@code delay} on this locker's background thread (backends' retries). */
    protected final void later(Runnable task, Duration delay) {
        background.later(task, delay);
    }

    // ---- the operator's calls -------------------------------------------------------------------------------------

    @Override
    public Optional<LockOwner> holder(KeyColumn lock) {
        return operations.holder(lock);
    }

    @Override
    public Optional<LockInfo> holding(KeyColumn lock) {
        return operations.holding(lock);
    }

    /**
     * Reads the holder, writes the record of the release, then removes every claim: a failure before the removal
     * leaves the lock as it was. Not atomic: a holder that came in between is released too, and learns GONE.
     */
    @Override
    public boolean forceRelease(KeyColumn lock, String reason) {
        return operations.forceRelease(lock, reason, null);
    }

    /** The conditional form: see {@link #deleteClaimWithToken} for what is atomic. */
    @Override
    public boolean forceRelease(KeyColumn lock, String reason, long expectedToken) {
        if (expectedToken < 1) {
            throw new IllegalArgumentException("expectedToken must be a holder's fencing token (positive), was "
                    + expectedToken);
        }
        return operations.forceRelease(lock, reason, Long.valueOf(expectedToken));
    }

    @Override
    public Optional<ForcedRelease> lastForcedRelease(KeyColumn lock) {
        return operations.lastForcedRelease(lock);
    }

    @Override
    public Optional<RunRecord> lastRun(KeyColumn job) {
        return operations.lastRun(job);
    }

    /**
     * Validates the arguments (before any I/O), checks that the locker is open, and asks the backend's
     * {@link #listHeld}; a backend failure is translated like every other call's.
     */
    @Override
    public final LockPage list(byte[] keyPrefix, int limit, String cursor) {
        return operations.list(keyPrefix, limit, cursor);
    }

    @Override
    public String rid() {
        return config.rid();
    }

    @Override
    public LockerConfig config() {
        return config;
    }

    // ---- close ----------------------------------------------------------------------------------------------------

    /**
     * Marks every open hold lost ("the locker was closed"), deletes their claims (best effort), waits a bounded time
     * for other threads' operations in flight, then closes the backend. Idempotent.
     */
    @Override
    public void close() {
        if (!closing.begin()) {
            return;
        }
        claims.loseAll();
        closing.awaitOperationsInFlight();
        background.close(); // after the losses above were handed to it: their listeners are told, then it stops
        closeBackend();
    }

    protected boolean isClosed() {
        return closing.isClosed();
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "[rid=" + config.rid() + "]";
    }

    // ---- helpers for backends -------------------------------------------------------------------------------------

    /**
     * {@link ClaimStatus#granted} without copying {@code claimId}, for a backend on a hot path that made the bytes for
     * this claim alone and never changes them afterwards.
     */
    protected static ClaimStatus grantedOwning(byte[] claimId, long fencingToken, long deadlineNanos) {
        return ClaimStatus.grantedOwning(claimId, fencingToken, deadlineNanos);
    }

    /**
     * A granted claim whose id is {@link #countedClaimId countedClaimId(sharedPrefix, counter)}, kept without bytes of
     * its own (see {@link ClaimStatus}): {@code sharedPrefix} is never changed afterwards.
     */
    protected static ClaimStatus grantedCounted(byte[] sharedPrefix, long counter, long fencingToken,
                                                long deadlineNanos) {
        return ClaimStatus.grantedCounted(sharedPrefix, counter, fencingToken, deadlineNanos);
    }

    /** The claim id {@code prefix} followed by {@code counter} as 16 lower-case hex digits (a new array). */
    protected static byte[] countedClaimId(byte[] prefix, long counter) {
        return ClaimStatus.countedId(prefix, counter);
    }

    /**
     * {@link ClaimStatus#claimId} without the copy where it can, for a backend that only sends the bytes (and never
     * changes them).
     */
    protected static byte[] claimIdOf(ClaimStatus status) {
        return status.claimIdShared();
    }

    /**
     * The reason recorded with a transaction's claims: the {@link LockTransaction}'s (or a single-lock lease's), or the
     * configured default.
     */
    protected static String whyOf(Object tx) {
        return Claims.whyOf(tx);
    }
}
