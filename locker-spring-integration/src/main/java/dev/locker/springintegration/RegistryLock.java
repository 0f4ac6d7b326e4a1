package dev.locker.springintegration;

import dev.locker.api.Acquisition;
import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LeaseOptions;
import dev.locker.api.Locker;
import dev.locker.api.LockingException;
import dev.locker.api.TimeSource;
import org.springframework.dao.CannotAcquireLockException;
import org.springframework.dao.DataAccessResourceFailureException;

import java.time.Duration;
import java.util.ConcurrentModificationException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.UnaryOperator;

/**
 * One key's lock from a {@link LockerLockRegistry}: a thread-owned, reentrant {@link Lock} over one Locker lease.
 *
 * <h2>Invariant</h2>
 * The lease is held exactly while the local {@link ReentrantLock} is held, and by the same thread.
 * The local lock's hold count is the lock's hold count: only the first hold takes a lease.
 * Threads of this process queue on the local lock, so only one of them at a time waits on the backend.
 *
 * <h2>Waiting</h2>
 * Every wait on the backend is Locker's own ({@link Locker#acquireWithin}): a release wakes a Redis waiter at once.
 * An interrupt ends that wait early, and the acquisition then reports the lock busy with the flag set.
 * A backend client that clears an interrupt during its call hides it: HBase's does, and the wait goes on.
 * {@code lock()} and {@code lockInterruptibly()} wait out an outage as they wait out a holder: Locker's wait treats
 * a temporary failure as "not yet" (a contended grant fails temporarily too). A bounded wait ({@code tryLock}) that
 * ends on a backend it could not reach throws {@link CannotAcquireLockException}, never a plain false.
 *
 * <h2>Re-entry and the registry</h2>
 * The owner re-enters only while its lease is valid: a lost lease (expired, taken, its locker closed) refuses the
 * re-entry with an {@link IllegalStateException}, never a second holder. A lock the registry forgot
 * ({@link LockerLockRegistry#expireUnusedOlderThan}) rejoins it when locked, unless the key has a new lock by then.
 */
final class RegistryLock implements Lock {

    /** A century: Locker reads a wait this long as "until granted", and a loop renews it after an interrupt. */
    private static final Duration UNTIL_GRANTED = Duration.ofDays(36_500);

    private final String key;
    private final KeyColumn lock;
    private final Locker locker;
    private final String why;
    private final LeaseOptions options;
    private final TimeSource time;
    private final ReentrantLock local = new ReentrantLock();
    /** Puts this lock back as its key's lock in the registry; answers the key's lock then (this one, or a newer). */
    private final UnaryOperator<RegistryLock> rejoin;

    /** Set by the owning thread when it takes the lease, cleared by it when it releases the lease. */
    private volatile Lease lease;
    /** When this lock was obtained or last taken, on the locker's monotonic clock. */
    private volatile long lastUsedNanos;
    /** Set while the registry has forgotten this lock: written under {@link #local}. */
    private volatile boolean retired;

    RegistryLock(String key, KeyColumn lock, Locker locker, String why, LeaseOptions options,
                 UnaryOperator<RegistryLock> rejoin) {
        this.key = key;
        this.rejoin = rejoin;
        this.lock = lock;
        this.locker = locker;
        this.why = why;
        this.options = options;
        this.time = locker.config().timeSource();
        this.lastUsedNanos = time.nanoTime();
    }

    @Override
    public void lock() {
        local.lock();
        if (reentered()) {
            return;
        }
        boolean acquired = false;
        boolean interrupted = false;
        try {
            while (!acquired) {
                // lock() ignores interrupts; a pending one would end Locker's wait at once, so it is kept aside
                interrupted |= Thread.interrupted();
                acquired = took(locker.acquireWithin(lock, why, UNTIL_GRANTED, options));
            }
        } finally {
            if (!acquired) {
                local.unlock();
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public void lockInterruptibly() throws InterruptedException {
        local.lockInterruptibly();
        if (reentered()) {
            return;
        }
        boolean acquired = false;
        try {
            while (!acquired) {
                if (Thread.interrupted()) {
                    throw new InterruptedException("interrupted while waiting for " + lock.legible());
                }
                acquired = took(locker.acquireWithin(lock, why, UNTIL_GRANTED, options));
            }
        } finally {
            if (!acquired) {
                local.unlock();
            }
        }
    }

    @Override
    public boolean tryLock() {
        if (!local.tryLock()) {
            return false;
        }
        if (reentered()) {
            return true;
        }
        boolean acquired = false;
        try {
            acquired = tookWithin(Duration.ZERO);
            return acquired;
        } finally {
            if (!acquired) {
                local.unlock();
            }
        }
    }

    @Override
    public boolean tryLock(long waitTime, TimeUnit unit) throws InterruptedException {
        long start = System.nanoTime();
        if (!local.tryLock(waitTime, unit)) {
            return false;
        }
        if (reentered()) {
            return true;
        }
        long left = Math.max(0, unit.toNanos(waitTime) - (System.nanoTime() - start));
        boolean acquired = false;
        try {
            acquired = tookWithin(Duration.ofNanos(left));
            if (!acquired && Thread.interrupted()) {
                throw new InterruptedException("interrupted while waiting for " + lock.legible());
            }
            return acquired;
        } finally {
            if (!acquired) {
                local.unlock();
            }
        }
    }

    /** One bounded wait on the backend; an outage is thrown, so that it never looks like a busy lock. */
    private boolean tookWithin(Duration maxWait) {
        return took(locker.acquireWithin(lock, why, maxWait, options));
    }

    /**
     * True when the current thread held this lock already, with a lease still valid: the hold count rose, and no lease
     * is needed. On a first hold, a lock the registry forgot rejoins it first.
     *
     * @throws IllegalStateException (the hold undone) when the lease was lost, or the registry has a newer lock
     */
    private boolean reentered() {
        if (local.getHoldCount() == 1) {
            if (retired) {
                rejoinOrRefuse();
            }
            return false;
        }
        Lease l = lease;
        if (l != null && l.isValid()) {
            return true;
        }
        local.unlock();
        throw new IllegalStateException("the lock " + lock.legible() + ", which the current thread holds, lost its "
                + "lease (it expired, was taken or its locker closed): unlock it; the data it guards may have changed");
    }

    private void rejoinOrRefuse() {
        if (rejoin.apply(this) == this) {
            retired = false;
            return;
        }
        local.unlock();
        throw new IllegalStateException("the lock " + lock.legible() + " was forgotten by expireUnusedOlderThan and "
                + "its key obtained anew: obtain it again");
    }

    /** The registry key of this lock. */
    String key() {
        return key;
    }

    /** Counts as a use for {@link #retireIfUnused}: the lock was obtained. */
    void touch() {
        lastUsedNanos = time.nanoTime();
    }

    /**
     * Marks this lock forgotten when no thread of this process holds or waits for it, and it was last used before
     * {@code cutoffNanos}. A thread that locks it afterwards puts it back ({@link #reentered}).
     *
     * @return true when the registry may forget it
     */
    boolean retireIfUnused(long cutoffNanos) {
        if (!local.tryLock()) {
            return false;
        }
        try {
            if (local.getHoldCount() > 1 || local.hasQueuedThreads() || lastUsedNanos - cutoffNanos >= 0) {
                return false;
            }
            retired = true;
            return true;
        } finally {
            local.unlock();
        }
    }

    /**
     * Keeps the lease of a granted wait; a refusal for good, or a backend that cannot be reached (unless an interrupt
     * ended the wait: the caller reports that), is thrown, and any other end is "not yet".
     */
    private boolean took(Acquisition a) {
        if (a.acquired()) {
            lease = a.lease().orElseThrow();
            lastUsedNanos = time.nanoTime();
            return true;
        }
        if (a.outcome() == Acquisition.Outcome.REFUSED) {
            throw new CannotAcquireLockException("the backend refused to lock " + lock.legible(),
                    a.failure().orElse(null));
        }
        if (a.outcome() == Acquisition.Outcome.UNREACHABLE && !Thread.currentThread().isInterrupted()) {
            throw new CannotAcquireLockException("could not reach the backend to lock " + lock.legible(),
                    a.failure().orElse(null));
        }
        return false;
    }

    /**
     * Releases one hold; the last one releases the lease.
     *
     * @throws IllegalStateException when the current thread does not hold this lock
     * @throws ConcurrentModificationException when the lease had expired or been taken before this release
     */
    @Override
    public void unlock() {
        if (!local.isHeldByCurrentThread()) {
            throw new IllegalStateException("the current thread does not hold the lock " + lock.legible());
        }
        if (local.getHoldCount() > 1) { // an inner hold: the last unlock reports a lost lease
            local.unlock();
            return;
        }
        Lease l = lease;
        lease = null;
        try {
            if (!l.release()) {
                throw new ConcurrentModificationException("the lock " + lock.legible() + " was no longer held when "
                        + "it was unlocked: its lease expired or was taken. The data it guards may have been changed.");
            }
        } finally {
            local.unlock();
        }
    }

    /** Conditions need a monitor shared by every waiter, which a cross-process lock does not have. */
    @Override
    public Condition newCondition() {
        throw new UnsupportedOperationException("conditions are not supported by cross-process locks");
    }

    /**
     * Extends the held lease in place: to its own expiry when {@code ttl} is null, else to {@code ttl} from now.
     *
     * @throws IllegalStateException when the current thread does not hold this lock, or the lease was lost
     * @throws DataAccessResourceFailureException when the backend could not be asked (the lease may still hold)
     */
    void renew(Duration ttl) {
        if (!local.isHeldByCurrentThread()) {
            throw new IllegalStateException("the current thread does not hold the lock " + lock.legible());
        }
        try {
            if (ttl == null) {
                lease.renew();
            } else {
                lease.renewFor(ttl);
            }
            lastUsedNanos = time.nanoTime();
        } catch (ExpiredLockException e) {
            throw new IllegalStateException("could not renew the lock " + lock.legible() + ": " + e.getMessage(), e);
        } catch (LockingException e) {
            throw new DataAccessResourceFailureException("could not renew the lock " + lock.legible(), e);
        }
    }

    /**
     * The held lease's fencing token.
     *
     * @throws IllegalStateException when the current thread does not hold this lock
     */
    long fencingToken() {
        if (!local.isHeldByCurrentThread()) {
            throw new IllegalStateException("the current thread does not hold the lock " + lock.legible());
        }
        return lease.fencingToken();
    }

    @Override
    public String toString() {
        return "LockerLock[" + lock.legible() + (local.isLocked() ? ", held here" : "") + "]";
    }
}
