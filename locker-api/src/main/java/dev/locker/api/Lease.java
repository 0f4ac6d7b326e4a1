package dev.locker.api;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.List;
import java.util.Objects;


/**
 * One held lock (or one set of locks held together, from {@link Locker#acquireAll}), released by {@link #close()}:
 * {@code try (Lease lease = locker.acquire(lock, "why")) { ... }}.
 * Closing twice is harmless; closing stops the keep-alive at once. Any thread may use it.
 *
 * <p>While it is valid ({@link #isValid()}: not closed, not known lost, before its deadline on this process's
 * monotonic clock) the holder may act, passing {@link #fencingToken()} to what it writes. When it is lost, the
 * listeners given to {@link #onLost} are told once, with the reason.
 *
 * <p>A loss the holder did not cause (a forced release, a takeover after a server lost the claim) is learnt at the
 * next step that asks the backend: a renewal (the keep-alive renews every third of the expiry, or {@link #renew()}),
 * or {@link #check()}. A lease that is not kept alive and never checked learns it at its deadline at the latest.
 * {@link #isValid()} does no I/O, so it turns false only once the loss is learnt or the deadline passed.
 */
public final class Lease implements AutoCloseable {

    // Three fields (24 bytes): a lease is kept per held lock, and applications may hold very many.
    private final Locker locker;
    /** The lock ({@link KeyColumn}) of a lease on one lock (the common case keeps no list), else the list of them. */
    private final Object locks;
    /** The transaction that holds the locks; null once {@link #close()} was called (so no closed flag is kept). */
    private volatile Object tx;

    private static final VarHandle TX;

    static {
        try {
            TX = MethodHandles.lookup().findVarHandle(Lease.class, "tx", Object.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /**
     * For {@link Locker} implementations: the lease on {@code locks}, which {@code tx} holds (claimed and checked) on
     * {@code locker}. Applications get leases from {@link Locker#acquire} and its kin.
     *
     * @param locker the locker that holds them
     * @param locks  the locks held, in canonical order
     * @param tx     the transaction that holds them
     */
    public Lease(Locker locker, List<KeyColumn> locks, Object tx) {
        this.locker = locker;
        if (locks.size() == 1) {
            this.locks = Objects.requireNonNull(locks.get(0), "locks must not contain null");
        } else {
            this.locks = List.copyOf(locks);
            if (locks.isEmpty()) {
                throw new IllegalArgumentException("locks must not be empty");
            }
        }
        this.tx = Objects.requireNonNull(tx, "tx");
    }

    /** The locks of a lease on several, else null. */
    @SuppressWarnings("unchecked")
    private List<KeyColumn> several() {
        return locks instanceof KeyColumn ? null : (List<KeyColumn>) locks;
    }

    /** The transaction, or an {@link IllegalStateException} when the lease is closed. */
    private Object openTx() {
        Object t = tx;
        if (t == null) {
            throw new IllegalStateException("lease on " + lock() + " is closed");
        }
        return t;
    }

    /**
     * The lock (for a set of locks: the first in their canonical order).
     *
     * @return the lock (for a set of locks: the first in their canonical order)
     */
    public KeyColumn lock() {
        return locks instanceof KeyColumn ? (KeyColumn) locks : several().get(0);
    }

    /**
     * Every lock this lease holds, in canonical order.
     *
     * @return every lock this lease holds, in canonical order
     */
    public List<KeyColumn> locks() {
        List<KeyColumn> several = several();
        return several != null ? several : List.of((KeyColumn) locks);
    }

    /**
     * The lock's fencing token: pass it to the guarded resource along with every write.
     *
     * @throws IllegalStateException for a lease on several locks (each has its own token: {@link #fencingToken(KeyColumn)})
     * @return the lock's fencing token: pass it to the guarded resource along with every write
     */
    public long fencingToken() {
        List<KeyColumn> several = several();
        if (several != null) {
            throw new IllegalStateException("this lease holds " + several.size() + " locks, each with its own token: "
                    + "call fencingToken(lock)");
        }
        return fencingToken((KeyColumn) locks);
    }

    /**
     * The fencing token of one of this lease's locks.
     *
     * @param which one of {@link #locks()}
     * @return the fencing token of one of this lease's locks
     */
    public long fencingToken(KeyColumn which) {
        List<KeyColumn> several = several();
        if (several != null ? !several.contains(which) : !locks.equals(which)) {
            throw new IllegalArgumentException("this lease does not hold " + which);
        }
        return locker.fencingToken(which, openTx());
    }

    /**
     * The current status (expiry moves with each renewal).
     *
     * @return the current status (expiry moves with each renewal)
     */
    public LockStatus status() {
        return locker.status(lock(), openTx())
                .orElseThrow(() -> new IllegalStateException("lease on " + lock() + " is closed"));
    }

    /**
     * Calls {@code listener} once when this lease is lost (taken over, gone, expired without a successful renewal, or
     * its locker closed), before its validity ends where that can be foreseen; at once if it already is.
     *
     * @param listener told once, with the loss
     * @throws IllegalStateException when the lease is closed
     * @return calls {@code listener} once when this lease is lost (taken over, gone, expired without a successful
     * renewal, or its locker closed), before its validity ends where that can be foreseen; at once if it already is
     */
    public Lease onLost(java.util.function.Consumer<LockLost> listener) {
        Objects.requireNonNull(listener, "listener");
        Object t = openTx();
        List<KeyColumn> locks = locks();
        if (locks.size() == 1) {
            locker.whenLost(locks.get(0), t, listener);
            return this;
        }
        // a lease on several locks is lost with its first lost lock: the listener hears of that one only
        java.util.concurrent.atomic.AtomicBoolean told = new java.util.concurrent.atomic.AtomicBoolean();
        java.util.function.Consumer<LockLost> once = loss -> {
            if (told.compareAndSet(false, true)) {
                listener.accept(loss);
            }
        };
        for (KeyColumn l : locks) {
            locker.whenLost(l, t, once);
        }
        return this;
    }

    /**
     * Turns background renewal on or off (on by default for leases from {@link Locker#acquire}).
     *
     * @param on true to turn it on, false to turn it off
     * @return this lease
     */
    public Lease keepAlive(boolean on) {
        locker.keepAlive(openTx(), on);
        return this;
    }

    /**
     * Extends the lease in place, keeping its seniority and fencing token. Asks the backend, so it also finds a
     * forced release or a takeover.
     *
     * @throws ExpiredLockException when it has already expired, was force-released or taken over
     */
    public void renew() {
        locker.renewLocks(openTx());
    }

    // Not an overload of renew(): that would make executor.submit(lease::renew) ambiguous in callers' code.
    /**
     * Extends the lease in place to {@code expiry} from now, keeping its claim, seniority and fencing token. Later
     * renewals (the keep-alive's too) keep that expiry.
     *
     * @param expiry the new expiry; positive, within the locker's maximum
     * @throws ExpiredLockException when it has already expired, was force-released or taken over
     * @throws IllegalArgumentException for an expiry the locker cannot keep, before any I/O
     */
    public void renewFor(Duration expiry) {
        locker.renewLocks(openTx(), expiry);
    }

    /**
     * Asks the backend (one round trip) whether this lease still holds its lock.
     *
     * @throws ExpiredLockException when it expired, was force-released or taken over
     * @throws IllegalStateException when the lease or its locker is closed
     */
    public void check() {
        locker.verifyLocks(openTx());
    }

    /**
     * True while this process may act under the lease: not closed, not known to be lost, and before its deadline on
     * the monotonic clock. No I/O: a loss the backend has not reported yet is seen by {@link #check()} or by the
     * next renewal.
     *
     * @return true while this process may act under the lease: not closed, not known to be lost, and before its
     * deadline on the monotonic clock
     */
    public boolean isValid() {
        return !remaining().isZero();
    }

    /**
     * How long this process may still act under the lease (zero when it is closed, lost or past its deadline).
     *
     * @return how long this process may still act under the lease (zero when it is closed, lost or past its deadline)
     */
    public Duration remaining() {
        Object t = tx;
        if (t == null) {
            return Duration.ZERO;
        }
        long now = locker.config().timeSource().nanoTime();
        List<KeyColumn> several = several();
        long least = several == null ? leftOn((KeyColumn) locks, t, now) : Long.MAX_VALUE;
        if (several != null) {
            for (KeyColumn l : several) {
                least = Math.min(least, leftOn(l, t, now));
                if (least <= 0) {
                    break;
                }
            }
        }
        return least > 0 ? Duration.ofNanos(least) : Duration.ZERO;
    }

    /** Nanoseconds left on one lock at {@code now}; 0 when it is not held (or the locker is closed). */
    private long leftOn(KeyColumn l, Object t, long now) {
        LockStatus s;
        try {
            s = locker.status(l, t).orElse(null);
        } catch (IllegalStateException closedLocker) {
            return 0;
        }
        if (s == null || !s.isHeld()) {
            return 0;
        }
        return s.deadlineNanos() - now;
    }

    /** {@return whether {@link #close()} was called} */
    public boolean isClosed() {
        return tx == null;
    }

    /**
     * Releases the lease like {@link #close()}, saying whether our claim was still ours. A claim inside its
     * hold-at-least is left on the backend until then, and counts as ours.
     *
     * @return true when our claim was there and removed (or left for its hold-at-least); false when it had already
     *         expired, been taken over or force-released, or the lease was closed before
     */
    public boolean release() {
        Object t = tx;
        if (t != null && TX.compareAndSet(this, t, null)) {
            return locker.releaseLocks(t);
        }
        return false;
    }

    @Override
    public void close() {
        Object t = tx;
        if (t != null && TX.compareAndSet(this, t, null)) { // once: the transaction is forgotten as it is released
            locker.deleteLocks(t);
        }
    }

    @Override
    public String toString() {
        Object t = tx;
        return "Lease[" + locks + ", " + (t == null ? "closed" : t) + "]";
    }
}
