package dev.locker.spi;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.LockInfo;
import dev.locker.api.LockOwner;
import dev.locker.api.LockPage;
import dev.locker.api.LockStatus;
import dev.locker.api.LockingException;
import dev.locker.api.PermanentLockingException;
import dev.locker.api.TemporaryLockingException;

import java.time.Duration;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * What a backend implements: a few typed operations on the claims of one lock. The engine ({@code dev.locker.engine})
 * does everything else once for every backend: arbitration inside the JVM, the three phases, leases, waiting,
 * keep-alive, the lost signal, withdrawal of claims of unknown outcome, forced-release attribution and run-once.
 *
 * <h2>What the engine guarantees before each call</h2>
 * <ul>
 *   <li>Its arguments are validated: a lock is non-null and within the configured key size, a list's bounds are sane.</li>
 *   <li>A claim operation on a lock runs while this process's transaction holds the lock's local (in-JVM) entry, and
 *       the steps on one claim never overlap: a driver sees at most one write, verify, renew or release of a claim at
 *       a time.</li>
 *   <li>A claim passed back is one this driver returned, for the same lock, and not yet released.</li>
 *   <li>The locker is open; {@link #close()} is called once, after the engine stopped using the driver.</li>
 * </ul>
 *
 * <h2>What the driver guarantees</h2>
 * <ul>
 *   <li><b>Ownership</b>: only the claim's owner renews or releases it (compare by owner, never blind).</li>
 *   <li><b>Expiry</b>: a claim whose expiry passed on the clock that orders claims is dead, and never the holder.</li>
 *   <li><b>Fencing</b>: a claim that becomes the holder gets a token strictly above every token issued for the lock,
 *       decided in the same atomic step as its seniority.</li>
 *   <li><b>Deadline</b>: a returned claim's {@link LockStatus#deadlineNanos()} counts from one monotonic reading taken
 *       before the request that wrote or renewed it ({@link Deadlines#of}), less the margin the protocol needs.</li>
 *   <li><b>Errors</b>: a refusal is a {@link TemporaryLockingException} naming the holder; a claim found gone or taken
 *       over is an {@link ExpiredLockException}; anything else may be the backend's own exception, which
 *       {@link #translate} maps.</li>
 * </ul>
 *
 * <h2>Capabilities</h2>
 * A driver declares what it can do beyond the operations: {@link #waitQueue()} and {@link #records()}. The engine asks
 * once, when the locker is built; it never finds a capability by casting.
 *
 * @param <C> what the driver remembers of one claim; it is also the claim's status the engine keeps
 */
public interface LockDriver<C extends LockStatus> {

    /**
     * Writes a claim on {@code lock}. A driver that decides seniority in the same atomic step returns a held claim,
     * and refuses when another live claim holds the lock (having left no claim of its own behind). A
     * wait-and-read-back driver returns a claim not held yet, for {@link #verify} to confirm.
     *
     * @param lock    the lock
     * @param owner   who claims it: this locker's rid, host, process, thread and reason
     * @param expiry  how long the claim lives unless renewed, as the engine configured it for this claim
     * @param waiting the wait this attempt belongs to, or null; only a driver with a {@link WaitQueue} looks at it
     * @return the claim
     * @throws TemporaryLockingException when another claim holds the lock, naming it and when it expires
     */
    C write(KeyColumn lock, LockOwner owner, Duration expiry, Waiting waiting);

    /**
     * Asks whether {@code claim} holds the lock. A claim not held yet (wait-and-read-back) is confirmed: the driver
     * decides seniority and gives it a fencing token. A held claim is asked about again, in one round trip and
     * without changing anything. A driver whose {@link #write} always returns a held claim sees only held claims here.
     *
     * @param lock  the lock
     * @param claim a claim of this driver on {@code lock}
     * @return the claim held, with its token and the same deadline
     * @throws TemporaryLockingException when another claim is senior (only for a claim not held yet)
     * @throws ExpiredLockException      when our claim is dead, gone or taken over, naming the new holder where known
     */
    C verify(KeyColumn lock, C claim);

    /**
     * Extends the claim's expiry in place, only while it is still ours and alive: same seniority, same token.
     *
     * @param lock   the lock
     * @param claim  a claim of this driver on {@code lock}
     * @param expiry how long the claim lives from now, as the engine configured it for this claim
     * @return the claim with the deadline of this renewal
     * @throws ExpiredLockException when our claim is dead, gone or taken over
     */
    C renew(KeyColumn lock, C claim, Duration expiry);

    /**
     * Leaves our claim on the backend for {@code expiry} from now, then lets it expire: the release of a lease inside
     * its hold-at-least. The new expiry may be shorter than the claim's: it is set, not just extended. Only our own
     * live claim is touched, in place. The engine calls it once, as the claim's last step, instead of a release. The
     * default renews: a driver whose renewal never lowers an expiry overrides it.
     *
     * @param lock   the lock
     * @param claim  a held claim of this driver on {@code lock}
     * @param expiry how long the claim lives from now, the hold-at-least's time left
     * @return the claim with the deadline of this step
     * @throws ExpiredLockException when our claim is dead, gone or taken over
     */
    default C leave(KeyColumn lock, C claim, Duration expiry) {
        return renew(lock, claim, expiry);
    }

    /**
     * Removes our claim, only while it is still ours (compare-and-delete). A claim already gone is no failure.
     *
     * @param lock  the lock
     * @param claim a claim of this driver on {@code lock}
     */
    void release(KeyColumn lock, C claim);

    /**
     * Removes our claim like {@link #release}, saying whether it was still ours. This default asks first
     * ({@link #verify}, one round trip), then releases; a claim that ends between the two is reported ours. A driver
     * whose compare-and-delete can tell what it found answers from that instead.
     *
     * <p>When the ask fails otherwise (the store unreachable, an Error), the claim is released all the same. The ask's
     * failure is then rethrown, not answered false: false would say the claim was not ours, which nobody learned.
     * A failure of that release is suppressed in it.
     *
     * @param lock  the lock
     * @param claim a held claim of this driver on {@code lock}
     * @return true when our claim was there and is removed; false when it had expired, was gone or taken over
     */
    default boolean releaseOwned(KeyColumn lock, C claim) {
        boolean ours;
        try {
            verify(lock, claim);
            ours = true;
        } catch (ExpiredLockException gone) {
            ours = false;
        } catch (RuntimeException | Error askFailed) {
            try {
                release(lock, claim); // the delete never depends on the answer: a failed ask leaves no claim behind
            } catch (RuntimeException | Error releaseFailed) {
                if (releaseFailed != askFailed) {
                    askFailed.addSuppressed(releaseFailed);
                }
            }
            throw askFailed;
        }
        release(lock, claim);
        return ours;
    }

    /**
     * Refuses, before any claim is written, a claim expiry this driver cannot keep (beyond what the engine checks:
     * positive, at most {@link dev.locker.api.LockerConfig#MAX_EXPIRY}). It may measure what it judges by (MongoDB
     * measures its server clock again when one slow sample is all that stands in the way). The default accepts every
     * such expiry.
     *
     * @param expiry a lease's expiry
     * @throws IllegalArgumentException naming the expiry and the bound it breaks
     */
    default void checkExpiry(Duration expiry) {
    }

    /**
     * Reads the holder in one read: the senior live claim's owner, its fencing token (0 for a wait-and-read-back
     * claim not confirmed yet) and its expiry.
     *
     * @param lock the lock
     * @return the holder, or empty when the lock is free
     */
    Optional<LockInfo> readHolder(KeyColumn lock);

    /**
     * Removes claims for a forced release. With no expected token it removes every claim on the lock; the engine
     * wrote the release's record before, through {@link LockRecords}, and {@code record} is null. With one it removes
     * the holder's claim only if it carries that token, and leaves {@code record} as the record
     * {@link LockRecords#FORCED} only if it removed it. That check and removal are atomic where the backend can;
     * elsewhere the record goes in just before a removal conditional on that claim.
     *
     * @param lock          the lock
     * @param expectedToken the holder's fencing token, or empty for every claim
     * @param record        the forced release's record when a token is expected, else null
     * @return true when a claim was removed
     */
    boolean remove(KeyColumn lock, OptionalLong expectedToken, byte[] record);

    /**
     * One page of live held locks whose key starts with {@code keyPrefix}. Bounded: O(limit) entries in memory and a
     * bounded number of round trips; a page may be short, or empty, with a next cursor.
     *
     * @param keyPrefix the key prefix (a copy the driver may keep), empty for every lock
     * @param limit     the most locks on the page, 1 to {@link dev.locker.api.Locker#MAX_LIST_LIMIT}
     * @param cursor    null for the first page, else a cursor this driver issued
     * @return the page
     * @throws IllegalArgumentException before any I/O, when {@code cursor} is not one this driver issued
     */
    LockPage list(byte[] keyPrefix, int limit, String cursor);

    /** Releases the driver's connections and threads; called once, when the locker closes. */
    void close();

    /**
     * Maps a failure of this driver to the exception hierarchy, keeping it as the cause. A driver overrides it for its
     * client's exception types and delegates the rest here.
     *
     * @param e      the failure
     * @param lock   the lock the operation was on, or null
     * @param action what the engine was doing ("writing a claim"), for the message
     * @return the exception the caller gets
     */
    default LockingException translate(RuntimeException e, KeyColumn lock, String action) {
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
     * The driver's wait queue, if it has one. Without it the engine polls with back-off between attempts.
     *
     * @return the wait queue, or empty
     */
    default Optional<WaitQueue> waitQueue() {
        return Optional.empty();
    }

    /**
     * The driver's records, if it keeps any. Without them run-once is refused, and a forced release leaves no record.
     *
     * @return the records, or empty
     */
    default Optional<LockRecords<C>> records() {
        return Optional.empty();
    }
}
