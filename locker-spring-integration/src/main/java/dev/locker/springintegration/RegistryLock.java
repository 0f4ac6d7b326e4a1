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
 */
final class RegistryLock implements Lock {

    /** A century: Locker reads a wait this long as "until granted", and a loop renews it after an interrupt. */
    private static final Duration UNTIL_GRANTED = Duration.ofDays(36_500);

    private final KeyColumn lock;
    private final Locker locker;
    private final String why;
    private final LeaseOptions options;
    private final TimeSource time;
    private final ReentrantLock local = new ReentrantLock();

    /** Set by the owning thread when it takes the lease, cleared by it when it releases the lease. */
    private volatile Lease lease;
    /** When this lock was obtained or last taken, on the locker's monotonic clock. */
    private volatile long lastUsedNanos;

    RegistryLock(KeyColumn lock, Locker locker, String why, LeaseOptions options) {
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
        Acquisition a = locker.acquireWithin(lock, why, maxWait, options);
        if (took(a)) {
            return true;
        }
        // an interrupt ends the wait early with the flag set: the caller reports that instead
        if (a.outcome() == Acquisition.Outcome.UNREACHABLE && !Thread.currentThread().isInterrupted()) {
            throw new CannotAcquireLockException("could not reach the backend to lock " + lock.legible(),
                    a.failure().orElse(null));
        }
        return false;
    }

    /** True when the current thread held this lock already: the hold count rose, and no lease is needed. */
    private boolean reentered() {
        return local.getHoldCount() > 1;
    }

    /** Keeps the lease of a granted wait; a refusal for good is thrown, and any other end is "not yet". */
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
        if (reentered()) {
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

    /** Whether no thread of this process holds or waits for this lock, and it was last used before {@code cutoff}. */
    boolean unusedSince(long cutoffNanos) {
        return !local.isLocked() && !local.hasQueuedThreads() && lastUsedNanos - cutoffNanos < 0;
    }

    @Override
    public String toString() {
        return "LockerLock[" + lock.legible() + (local.isLocked() ? ", held here" : "") + "]";
    }
}
