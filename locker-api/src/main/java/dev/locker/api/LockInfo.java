package dev.locker.api;

import java.time.Instant;
import java.util.Objects;

/**
 * One held lock as a listing sees it ({@link Locker#list}): the lock, its holder, the holder's fencing token and when
 * the holder's claim expires unless renewed.
 *
 * <p>A snapshot for operators, tools and metrics, never a basis for acting on the lock: by the time it is read the claim
 * may have been renewed, released or taken over. {@link #expiresAt()} is on the clock that decides the claim's expiry
 * (the server's clock for Redis, MongoDB and HBase; the claim's own timestamp plus the expiry for wait-and-read-back),
 * so compare it with that clock, not with this process's. Immutable.
 */
public final class LockInfo {

    private final KeyColumn lock;
    private final LockOwner holder;
    private final long fencingToken;
    private final Instant expiresAt;

    /**
     * @param lock the lock
     * @param holder who holds the lock, where known, else null
     * @param expiresAt when the claim expires unless renewed, or null when unknown
     * @param fencingToken the holder's token; 0 for a wait-and-read-back claim that is the senior live claim but was not
     *                     confirmed (checkLocks) yet
     */
    public LockInfo(KeyColumn lock, LockOwner holder, long fencingToken, Instant expiresAt) {
        this.lock = Objects.requireNonNull(lock, "lock must not be null");
        this.holder = Objects.requireNonNull(holder, "holder must not be null");
        this.fencingToken = fencingToken;
        this.expiresAt = Objects.requireNonNull(expiresAt, "expiresAt must not be null");
    }

    /** {@return the held lock} */
    public KeyColumn lock() {
        return lock;
    }

    /**
     * Who holds the lock: rid (what ownership is decided on), host, pid, thread, why, since.
     *
     * @return who holds the lock: rid (what ownership is decided on), host, pid, thread, why, since
     */
    public LockOwner holder() {
        return holder;
    }

    /**
     * The holder's fencing token (0: a wait-and-read-back claim not confirmed yet).
     *
     * @return the holder's fencing token (0: a wait-and-read-back claim not confirmed yet)
     */
    public long fencingToken() {
        return fencingToken;
    }

    /**
     * When the holder's claim expires unless renewed, on the clock that decides it; for display only.
     *
     * @return when the holder's claim expires unless renewed, on the clock that decides it; for display only
     */
    public Instant expiresAt() {
        return expiresAt;
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) {
            return true;
        }
        if (!(o instanceof LockInfo)) {
            return false;
        }
        LockInfo other = (LockInfo) o;
        return fencingToken == other.fencingToken && lock.equals(other.lock) && holder.equals(other.holder)
                && expiresAt.equals(other.expiresAt);
    }

    @Override
    public int hashCode() {
        return Objects.hash(lock, holder, fencingToken, expiresAt);
    }

    @Override
    public String toString() {
        return lock + " held by " + holder + " token=" + fencingToken + " until " + expiresAt;
    }
}
