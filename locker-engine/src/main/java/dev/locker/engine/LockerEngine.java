package dev.locker.engine;

import dev.locker.api.Acquisition;
import dev.locker.api.ForcedRelease;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LeaseOptions;
import dev.locker.api.LocalArbitration;
import dev.locker.api.LockInfo;
import dev.locker.api.LockLost;
import dev.locker.api.LockOwner;
import dev.locker.api.LockPage;
import dev.locker.api.LockStatus;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.PermanentLockingException;
import dev.locker.api.Run;
import dev.locker.api.RunRecord;
import dev.locker.api.TemporaryLockingException;
import dev.locker.api.TimeSource;
import dev.locker.spi.Deadlines;
import dev.locker.spi.LockDriver;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * The engine: one for every backend, over that backend's {@link LockDriver}. It arbitrates the transactions of this
 * JVM through a {@link LocalLockMediator}, keeps one {@link Hold} per claimed lock, and reaches the backend only
 * through the driver. Each job is done by one package-private collaborator, which holds the driver itself:
 * {@link Claims} (the three phases on each hold), {@link Acquiring} (leases and waiting), {@link RunOnce},
 * {@link Operations} (the operator's calls), {@link Transactions} (the registry of transactions), {@link Background}
 * (keep-alive and the lost signal) and {@link Closing}. A backend's public locker class extends it, adding only its
 * builder and accessors of its own.
 *
 * <p>Invariants kept, for every backend:
 * <ul>
 *   <li>one record per claimed lock: the hold is the mediator's entry and the transaction's bookkeeping at once, and
 *       its state (the driver's claim, the deadline) is the only truth about whether this process holds the lock;</li>
 *   <li>one clock for validity: a hold's deadline is on the monotonic clock, computed by the driver from one reading
 *       taken before the request that wrote or renewed the claim ({@link Deadlines#of}); it is compared before a step
 *       and again after the step's I/O, so a step that outlived the claim never reports it held;</li>
 *   <li>a hold lost once (taken over locally after its deadline, told by the driver, released, or its locker closed)
 *       stays lost: a write or renewal that completes after that withdraws its claim and fails;</li>
 *   <li>{@link #writeLock} is idempotent per (transaction, lock): the second call does no I/O and does not extend;</li>
 *   <li>{@link #deleteLocks} tries to delete every claim, always frees the mediator, and never throws for a backend
 *       failure (it logs it once; the claim then expires);</li>
 *   <li>every backend failure reaches the caller as a {@link TemporaryLockingException} or
 *       {@link PermanentLockingException} naming the lock, with the original failure as its cause.</li>
 * </ul>
 *
 * @param <C> what the driver remembers of one claim
 */
public abstract class LockerEngine<C extends LockStatus> implements Locker {

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
    /** The backend: the collaborators call its operations, and close() closes it. */
    private final LockDriver<C> driver;
    private final Transactions transactions;
    private final Closing closing;
    private final Background background;
    private final Claims<C> claims;
    private final Acquiring<C> acquiring;
    private final RunOnce<C> runOnce;
    private final Operations<C> operations;

    /**
     * @param config    the settings; the locker runs with {@link LockerConfig#forNewInstance()} of it, so its rid is
     *                  its own
     * @param mediator  the JVM-local arbitration to share with other lockers of this process on the same backend, or
     *                  null for a mediator of this locker's own
     * @param driverFor makes the driver from the configuration the locker runs with (its rid is the locker's)
     */
    protected LockerEngine(LockerConfig config, LocalLockMediator mediator,
                           Function<LockerConfig, ? extends LockDriver<C>> driverFor) {
        this.config = Objects.requireNonNull(config, "config must not be null").forNewInstance();
        this.time = this.config.timeSource();
        this.mediator = mediator != null ? mediator : mediatorOf(this.config);
        LockDriver<C> backend = Objects.requireNonNull(driverFor.apply(this.config), "the driver must not be null");
        this.driver = backend;
        Steps<C> steps = new Steps<>(backend, this.config);
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
        // capabilities are asked for once: the driver declares them, nothing finds them by casting
        this.acquiring = new Acquiring<>(this, this.config, this.mediator, backend.waitQueue().orElse(null), claims,
                background, closing);
        this.runOnce = new RunOnce<>(this, this.config, backend.records().orElse(null), steps, transactions, acquiring,
                closing);
        this.operations = new Operations<>(this.config, backend, closing);
    }

    /** From a backend's builder: its effective configuration and mediator, and the driver made for it. */
    protected LockerEngine(LockerBuilder<?> builder, Function<LockerConfig, ? extends LockDriver<C>> driverFor) {
        this(builder.effectiveConfig(), builder.mediator, driverFor);
    }

    /**
     * {@code d} in nanoseconds, saturated at a quarter of the long range (about 73 years) either way: see
     * {@link Deadlines#saturatedNanos}.
     */
    protected static long saturatedNanos(Duration d) {
        return Deadlines.saturatedNanos(d);
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
        claims.claim(lock, tx, null, null);
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
        claims.renew(tx, null);
    }

    @Override
    public void renewLocks(Object tx, Duration expiry) {
        checkExpiry(expiry);
        claims.renew(tx, expiry);
    }

    @Override
    public boolean releaseLocks(Object tx) {
        return claims.release(tx, true);
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
        return acquiring.attempt(List.of(lock), why, null, null);
    }

    @Override
    public Lease acquire(KeyColumn lock, String why, LeaseOptions options) {
        config.validate(lock);
        return acquiring.attempt(List.of(lock), why, null, checked(options));
    }

    @Override
    public Lease acquireAll(Collection<KeyColumn> locks, String why) {
        return acquiring.attempt(acquiring.canonical(locks), why, null, null);
    }

    @Override
    public Lease acquireAll(Collection<KeyColumn> locks, String why, LeaseOptions options) {
        LeaseOptions terms = checked(options);
        return acquiring.attempt(acquiring.canonical(locks), why, null, terms);
    }

    @Override
    public Optional<Lease> tryAcquire(KeyColumn lock, String why, Duration maxWait) {
        return acquireWithin(lock, why, maxWait).leaseOrThrowRefusal();
    }

    @Override
    public Optional<Lease> tryAcquire(KeyColumn lock, String why, Duration maxWait, LeaseOptions options) {
        return acquireWithin(lock, why, maxWait, options).leaseOrThrowRefusal();
    }

    @Override
    public Acquisition acquireWithin(KeyColumn lock, String why, Duration maxWait) {
        config.validate(lock);
        return acquiring.waitFor(List.of(lock), why, maxWait, null);
    }

    @Override
    public Acquisition acquireWithin(KeyColumn lock, String why, Duration maxWait, LeaseOptions options) {
        config.validate(lock);
        return acquiring.waitFor(List.of(lock), why, maxWait, checked(options));
    }

    @Override
    public Optional<Lease> tryAcquireAll(Collection<KeyColumn> locks, String why, Duration maxWait) {
        return acquiring.waitFor(acquiring.canonical(locks), why, maxWait, null).leaseOrThrowRefusal();
    }

    @Override
    public Optional<Lease> tryAcquireAll(Collection<KeyColumn> locks, String why, Duration maxWait,
                                         LeaseOptions options) {
        LeaseOptions terms = checked(options);
        return acquiring.waitFor(acquiring.canonical(locks), why, maxWait, terms).leaseOrThrowRefusal();
    }

    /**
     * {@code options} when this locker can keep them, checked before any I/O: not null, an expiry within
     * {@link LockerConfig#MAX_EXPIRY} and the driver's bounds, a hold-at-least no longer than the expiry.
     */
    private LeaseOptions checked(LeaseOptions options) {
        if (options == null) {
            throw new IllegalArgumentException("options must not be null (use LeaseOptions.DEFAULTS)");
        }
        Duration expiry = options.expiryOr(config.expiry());
        checkExpiry(expiry);
        if (options.holdAtLeast().compareTo(expiry) > 0) {
            throw new IllegalArgumentException("holdAtLeast " + options.holdAtLeast() + " must not exceed the lease's "
                    + "expiry " + expiry + ": the claim would expire before it");
        }
        return options;
    }

    /** Refuses, before any I/O, an expiry that is not positive, over the maximum, or one the driver cannot keep. */
    private void checkExpiry(Duration expiry) {
        if (expiry == null || expiry.isZero() || expiry.isNegative()) {
            throw new IllegalArgumentException("expiry must be positive, was " + expiry);
        }
        if (expiry.compareTo(LockerConfig.MAX_EXPIRY) > 0) {
            throw new IllegalArgumentException("expiry must be at most 100 years (" + LockerConfig.MAX_EXPIRY.toDays()
                    + " days), was " + expiry);
        }
        driver.checkExpiry(expiry);
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

    /** The conditional form: see {@link LockDriver#remove} for what is atomic. */
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
     * Validates the arguments (before any I/O), checks that the locker is open, and asks the driver's
     * {@link LockDriver#list}; a backend failure is translated like every other call's.
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
     * for other threads' operations in flight, then closes the driver. Idempotent. It runs with the caller's interrupt
     * flag cleared and sets it again at the end: an interrupt shortens none of its waits.
     */
    @Override
    public void close() {
        if (!closing.begin()) {
            return;
        }
        closing.uninterrupted(() -> {
            long end = Closing.waitEnd(); // one bound for every wait of close
            Failures failures = new Failures(); // a failure of one step skips none of the later ones
            failures.run(() -> claims.loseAll(end));
            failures.run(() -> closing.awaitOperationsInFlight(end));
            failures.run(background::close); // after the losses were handed to it: listeners are told, then it stops
            failures.run(driver::close);
            failures.rethrow();
        });
    }

    protected boolean isClosed() {
        return closing.isClosed();
    }

    /** Fails clearly when this locker is closed. */
    final void ensureOpen() {
        closing.ensureOpen();
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "[rid=" + config.rid() + "]";
    }
}
