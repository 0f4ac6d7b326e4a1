package dev.locker.local;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.LockOwner;
import dev.locker.api.LockStatus;
import dev.locker.api.LockTransaction;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockingException;
import dev.locker.api.PermanentLockingException;
import dev.locker.api.StoreException;
import dev.locker.api.TemporaryLockingException;
import dev.locker.api.TimeSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The three-phase template every backend shares. It arbitrates the transactions of this JVM through a
 * {@link LocalLockMediator}, keeps each transaction's claims, and calls the backend only through a few small hooks.
 *
 * <p>Invariants kept here, for every backend:
 * <ul>
 *   <li>a lock is in the store for a transaction only while that transaction holds the mediator record for it;</li>
 *   <li>{@link #writeLock} is idempotent per (transaction, lock): the second call does no I/O and does not extend;</li>
 *   <li>{@link #checkLocks} asks the backend only about claims not yet confirmed, and fails with
 *       {@link ExpiredLockException} for a claim past its local expiry without asking anyone;</li>
 *   <li>{@link #deleteLocks} tries to delete every claim, always frees the mediator, and never throws for a backend
 *       failure (it logs it once; the claim then expires);</li>
 *   <li>every backend failure reaches the caller as a {@link TemporaryLockingException} or
 *       {@link PermanentLockingException} naming the lock, with the original failure as its cause.</li>
 * </ul>
 *
 * @param <S> what the backend remembers of one claim
 */
public abstract class AbstractLocker<S extends LockStatus> implements Locker {

    private static final Logger log = LoggerFactory.getLogger(AbstractLocker.class);

    protected final LockerConfig config;
    protected final TimeSource time;
    protected final LocalLockMediator mediator;

    /** Claims per transaction, keyed by the transaction's identity, in the order they were written. */
    private final ConcurrentHashMap<TxKey, Map<KeyColumn, Tracked<S>>> txs = new ConcurrentHashMap<>();
    private volatile boolean closed;

    /**
     * @param mediator the JVM-local arbitration to share with other lockers of this process on the same backend, or
     *                 null for a mediator of this locker's own
     */
    protected AbstractLocker(LockerConfig config, LocalLockMediator mediator) {
        this.config = Objects.requireNonNull(config, "config must not be null");
        this.time = config.timeSource();
        this.mediator = mediator != null ? mediator : LocalLockMediator.standalone("locker-" + config.rid(), time);
    }

    /** From a backend's builder: its effective configuration and mediator. */
    protected AbstractLocker(LockerBuilder<?> builder) {
        this(builder.effectiveConfig(), builder.mediator);
    }

    // ---- the backend's hooks ---------------------------------------------------------------------------------

    /**
     * Writes a claim on {@code lock} in the backend. An atomic backend may decide seniority in the same step and
     * return a held status (then checkLocks costs no I/O); when it sees another live holder it should remove its own
     * claim and throw {@link TemporaryLockingException} naming that holder.
     */
    protected abstract S writeSingleLock(KeyColumn lock, LockOwner owner);

    /**
     * Confirms that the claim {@code status} is the senior live claim on {@code lock}; returns the held status with
     * its fencing token. Throws {@link TemporaryLockingException} naming the holder when another claim is senior,
     * and {@link ExpiredLockException} when our own claim is dead or gone. Atomic backends, whose
     * {@link #writeSingleLock} always returns a held status or throws, never reach it and need not override it.
     */
    protected S checkSingleLock(KeyColumn lock, S status) {
        throw new IllegalStateException(getClass().getSimpleName() + " grants a claim when it writes it, so a claim that "
                + "is not held cannot be checked: " + status);
    }

    /** Extends the claim's expiry in place (same seniority, same token), only if it is still ours and alive. */
    protected abstract S renewSingleLock(KeyColumn lock, S status);

    /** Deletes our claim, only if it is still ours (compare-and-delete). */
    protected abstract void deleteSingleLock(KeyColumn lock, S status);

    /** The owner of the senior live claim on {@code lock}, or empty when it is free. */
    protected abstract Optional<LockOwner> readHolder(KeyColumn lock);

    /** Removes every claim on {@code lock}; true if there was any. */
    protected abstract boolean deleteAllClaims(KeyColumn lock);

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

    // ---- the contract -----------------------------------------------------------------------------------------

    @Override
    public void writeLock(KeyColumn lock, Object tx) {
        config.validate(lock);
        if (tx == null) {
            throw new IllegalArgumentException("tx must not be null");
        }
        ensureOpen();
        TxKey key = new TxKey(tx);
        Map<KeyColumn, Tracked<S>> claims = txs.computeIfAbsent(key, k -> new LinkedHashMap<>());
        synchronized (claims) {
            if (claims.containsKey(lock)) {
                return; // idempotent: no I/O, no extension
            }
        }
        if (!takeLocal(lock, tx)) {
            forgetIfEmpty(key, claims);
            Object other = mediator.holder(lock).orElse("another transaction");
            LockOwner localHolder = new LockOwner(config.rid(), config.host(), config.pid(), "", whyOf(other), null);
            throw new TemporaryLockingException("lock is held by " + other + " in this process (local contention, "
                    + "no store I/O done)", lock, localHolder, null);
        }
        S status;
        Instant wallBefore = time.now();
        long nanosBefore = time.nanoTime();
        try {
            status = writeSingleLock(lock, config.owner(whyOf(tx)));
        } catch (RuntimeException e) {
            mediator.unlock(lock, tx);
            forgetIfEmpty(key, claims);
            throw translate(e, lock, "writing a claim");
        }
        mediator.lock(lock, tx, recordExpiry(status)); // the record outlives the claim: see recordExpiry
        synchronized (claims) {
            claims.put(lock, new Tracked<>(status, deadline(status, wallBefore, nanosBefore)));
        }
        if (txs.get(key) != claims) { // deleteLocks ran concurrently and dropped our map: give the claim back
            releaseOne(lock, status, tx);
        }
    }

    @Override
    public void checkLocks(Object tx) {
        Map<KeyColumn, Tracked<S>> claims = claimsOf(tx);
        if (claims == null) {
            return;
        }
        for (Map.Entry<KeyColumn, Tracked<S>> e : snapshot(claims)) {
            KeyColumn lock = e.getKey();
            Tracked<S> tracked = e.getValue();
            S status = tracked.status;
            // measured on the monotonic clock: a wall-clock step on this host cannot stretch our belief that we hold it
            if (time.nanoTime() - tracked.deadlineNanos > 0) {
                throw new ExpiredLockException("our claim expired (due at " + status.expiry() + " by this locker's "
                        + "clock); release the transaction's locks and start again", lock, null, null);
            }
            if (status.isHeld()) {
                continue; // confirmed before: no second I/O
            }
            S checked;
            try {
                checked = checkSingleLock(lock, status);
            } catch (RuntimeException ex) {
                throw translate(ex, lock, "checking a claim");
            }
            synchronized (claims) {
                claims.replace(lock, new Tracked<>(checked, tracked.deadlineNanos));
            }
        }
    }

    @Override
    public void renewLocks(Object tx) {
        Map<KeyColumn, Tracked<S>> claims = claimsOf(tx);
        if (claims == null) {
            return;
        }
        for (Map.Entry<KeyColumn, Tracked<S>> e : snapshot(claims)) {
            KeyColumn lock = e.getKey();
            S renewed;
            Instant wallBefore = time.now();
            long nanosBefore = time.nanoTime();
            // our JVM-local record lapsed and another transaction of this process took it: that one may be in the
            // store now, so we must not renew into a second holder
            if (!mediator.lock(lock, tx, wallBefore.plus(config.expiry().multipliedBy(2)))) {
                throw new ExpiredLockException("our claim lapsed in this process and another transaction ("
                        + mediator.holder(lock).orElse("?") + ") has taken the lock locally; release and start again",
                        lock, null, null);
            }
            try {
                renewed = renewSingleLock(lock, e.getValue().status);
            } catch (RuntimeException ex) {
                throw translate(ex, lock, "renewing a claim");
            }
            mediator.lock(lock, tx, recordExpiry(renewed));
            synchronized (claims) {
                claims.replace(lock, new Tracked<>(renewed, deadline(renewed, wallBefore, nanosBefore)));
            }
        }
    }

    @Override
    public void deleteLocks(Object tx) {
        if (tx == null) {
            return;
        }
        Map<KeyColumn, Tracked<S>> claims = txs.remove(new TxKey(tx));
        if (claims == null) {
            return;
        }
        for (Map.Entry<KeyColumn, Tracked<S>> e : snapshot(claims)) {
            releaseOne(e.getKey(), e.getValue().status, tx);
        }
    }

    private void releaseOne(KeyColumn lock, S status, Object tx) {
        try {
            deleteSingleLock(lock, status);
        } catch (RuntimeException ex) {
            log.warn("Could not delete claim {} on {} of locker {}; it will expire at {}: {}",
                    status, lock, config.rid(), status.expiry(), ex.toString(), ex);
        } finally {
            mediator.unlock(lock, tx);
        }
    }

    @Override
    public Optional<LockStatus> status(KeyColumn lock, Object tx) {
        Map<KeyColumn, Tracked<S>> claims = claimsOf(tx);
        if (claims == null || lock == null) {
            return Optional.empty();
        }
        synchronized (claims) {
            Tracked<S> t = claims.get(lock);
            return Optional.ofNullable(t == null ? null : t.status);
        }
    }

    @Override
    public Optional<LockOwner> holder(KeyColumn lock) {
        config.validate(lock);
        ensureOpen();
        try {
            return readHolder(lock);
        } catch (RuntimeException e) {
            throw translate(e, lock, "reading the holder");
        }
    }

    @Override
    public boolean forceRelease(KeyColumn lock) {
        config.validate(lock);
        ensureOpen();
        try {
            boolean any = deleteAllClaims(lock);
            log.warn("Force-released lock {} (claims found: {}) by locker {}", lock, any, config.rid());
            return any;
        } catch (RuntimeException e) {
            throw translate(e, lock, "force-releasing");
        }
    }

    @Override
    public String rid() {
        return config.rid();
    }

    @Override
    public LockerConfig config() {
        return config;
    }

    /** Releases the claims of transactions still open (best effort), then the backend. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (TxKey key : new ArrayList<>(txs.keySet())) {
            deleteLocks(key.tx);
        }
        closeBackend();
    }

    protected boolean isClosed() {
        return closed;
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "[rid=" + config.rid() + "]";
    }

    // ---- helpers ------------------------------------------------------------------------------------------------

    /** The reason recorded with a transaction's claims: the {@link LockTransaction}'s, or the configured default. */
    protected static String whyOf(Object tx) {
        return tx instanceof LockTransaction ? ((LockTransaction) tx).why() : "";
    }

    private boolean takeLocal(KeyColumn lock, Object tx) {
        Duration wait = config.localWait();
        long deadline = time.nanoTime() + wait.toNanos();
        long pauseMillis = 1;
        while (true) {
            if (mediator.lock(lock, tx, time.now().plus(config.expiry().multipliedBy(2)))) {
                return true;
            }
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
        }
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException(this + " is closed");
        }
    }

    private Map<KeyColumn, Tracked<S>> claimsOf(Object tx) {
        return tx == null ? null : txs.get(new TxKey(tx));
    }

    private void forgetIfEmpty(TxKey key, Map<KeyColumn, Tracked<S>> claims) {
        synchronized (claims) {
            if (claims.isEmpty()) {
                txs.remove(key, claims);
            }
        }
    }

    private List<Map.Entry<KeyColumn, Tracked<S>>> snapshot(Map<KeyColumn, Tracked<S>> claims) {
        synchronized (claims) {
            List<Map.Entry<KeyColumn, Tracked<S>>> out = new ArrayList<>(claims.size());
            for (Map.Entry<KeyColumn, Tracked<S>> e : claims.entrySet()) {
                out.add(Map.entry(e.getKey(), e.getValue()));
            }
            return out;
        }
    }

    /**
     * The local deadline of a claim on the monotonic clock: the status's expiry, read against the wall/monotonic pair
     * taken just before the request that produced it (so it errs early, never late).
     */
    private static long deadline(LockStatus status, Instant wallBefore, long nanosBefore) {
        Duration left = Duration.between(wallBefore, status.expiry());
        long leftNanos;
        try {
            leftNanos = left.toNanos();
        } catch (ArithmeticException overflow) {
            leftNanos = left.isNegative() ? Long.MIN_VALUE / 4 : Long.MAX_VALUE / 4;
        }
        return nanosBefore + leftNanos;
    }

    /**
     * How long the JVM-local record of a claim lives if its transaction never releases it: one expiry past the claim's
     * own. A record that lapsed before the claim would let a second transaction of this process reach the store
     * while the first still believes it holds (same rid: the store could not tell them apart).
     */
    private Instant recordExpiry(LockStatus status) {
        return status.expiry().plus(config.expiry());
    }

    /** A claim's status and its local deadline. */
    private static final class Tracked<S> {
        final S status;
        final long deadlineNanos;

        Tracked(S status, long deadlineNanos) {
            this.status = status;
            this.deadlineNanos = deadlineNanos;
        }
    }

    /** A transaction compared by identity, whatever its own equals says. */
    private static final class TxKey {
        final Object tx;

        TxKey(Object tx) {
            this.tx = tx;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof TxKey && ((TxKey) o).tx == tx;
        }

        @Override
        public int hashCode() {
            return System.identityHashCode(tx);
        }
    }
}
