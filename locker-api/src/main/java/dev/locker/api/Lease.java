package dev.locker.api;

import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One held lock, released by {@link #close()}: {@code try (Lease lease = locker.acquire(lock, "why")) { ... }}.
 * Closing twice is harmless. Not for sharing between threads that may close it concurrently with a renewal.
 */
public final class Lease implements AutoCloseable {

    private final Locker locker;
    private final KeyColumn lock;
    private final Object tx;
    private final AtomicBoolean closed = new AtomicBoolean();

    Lease(Locker locker, KeyColumn lock, Object tx) {
        this.locker = locker;
        this.lock = lock;
        this.tx = tx;
    }

    public KeyColumn lock() {
        return lock;
    }

    /** The lock's fencing token: pass it to the guarded resource along with every write. */
    public long fencingToken() {
        return locker.fencingToken(lock, tx);
    }

    /** The current status (expiry moves with each renewal). */
    public LockStatus status() {
        return locker.status(lock, tx).orElseThrow(() -> new IllegalStateException("lease on " + lock + " is closed"));
    }

    /**
     * Extends the lease in place, keeping its seniority and fencing token.
     *
     * @throws ExpiredLockException when it has already expired or was force-released
     */
    public void renew() {
        if (closed.get()) {
            throw new IllegalStateException("lease on " + lock + " is closed");
        }
        locker.renewLocks(tx);
    }

    /** Checks with the backend that this lease still holds its lock (by local expiry, then cached confirmation). */
    public void check() {
        locker.checkLocks(tx);
    }

    public boolean isClosed() {
        return closed.get();
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            locker.deleteLocks(tx);
        }
    }

    @Override
    public String toString() {
        return "Lease[" + lock + ", " + tx + (closed.get() ? ", closed" : "") + "]";
    }
}
