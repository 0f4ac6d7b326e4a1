package dev.locker.api;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * A cross-process lock service with JanusGraph's three-phase contract.
 *
 * <ol>
 *   <li>{@link #writeLock} claims a lock for a transaction: first against other transactions of this JVM, then in
 *       the backend. It may already fail with {@link TemporaryLockingException} when the lock is visibly taken.</li>
 *   <li>{@link #checkLocks} confirms that every claim of the transaction is the holder; after it succeeds the
 *       transaction may mutate what the locks protect, until the claims expire (see {@link #renewLocks}).</li>
 *   <li>{@link #deleteLocks} releases every lock of the transaction. It never throws for a backend failure: a claim
 *       it could not delete expires on its own.</li>
 * </ol>
 *
 * <p>A transaction is any object the caller chooses (its own store transaction, or a {@link LockTransaction}); it is
 * compared by identity. Every lock of a transaction must be released through {@link #deleteLocks}. Application code
 * that wants one lock at a time uses {@link #acquire} and a try-with-resources {@link Lease} instead.
 *
 * <p>All methods are thread-safe; one transaction should be driven by one thread at a time.
 */
public interface Locker extends AutoCloseable {

    /**
     * Claims {@code lock} for {@code tx}. Calling it again for a lock the transaction already claimed does nothing
     * (and does not extend the claim). Argument errors are thrown as {@link IllegalArgumentException} before any I/O.
     *
     * @param lock the lock
     * @param tx the transaction: any object of the caller's, compared by identity
     * @throws TemporaryLockingException when another transaction (here or elsewhere) holds the lock, or the backend
     *                                   is unreachable; the message names the holder where known
     * @throws PermanentLockingException when the backend refuses for good (permissions, missing table...)
     */
    void writeLock(KeyColumn lock, Object tx);

    /**
     * Confirms that {@code tx} holds every lock it claimed, with JanusGraph's economy: a claim not confirmed yet is
     * confirmed (the wait-and-read-back protocol waits lockWait and reads its row; an atomic backend decided it when it
     * was written, so that costs no I/O), and a claim confirmed before costs no I/O again.
     *
     * <p>What it detects: a senior claim of another transaction, a claim that expired or was found gone while being
     * confirmed, a claim past its deadline on this process's monotonic clock, and a claim already known lost (by an
     * earlier {@link #verifyLocks}, {@link #renewLocks}, a takeover inside this process, or {@link #close}). What it does
     * not detect, because it does not ask the backend again: a confirmed claim that was force-released, taken over
     * after a server lost it, or lost in a failover since. Call {@link #verifyLocks} (one round trip per lock) for that.
     *
     * @param tx the transaction: any object of the caller's, compared by identity
     * @throws ExpiredLockException when a claim expired, was taken away or is gone: the lock may be someone else's
     * @throws TemporaryLockingException when another claim is senior (naming its holder) or the backend is unreachable
     * @throws IllegalStateException when the locker is closed
     */
    void checkLocks(Object tx);

    /**
     * Asks the backend, one round trip per lock, whether every claim of {@code tx} is still ours and alive (claims not
     * confirmed yet are confirmed as {@link #checkLocks} does). Detects a force release, a takeover, and a server that
     * lost the claim (a restart without persistence, a failover). A claim found lost stays lost.
     *
     * @param tx the transaction: any object of the caller's, compared by identity
     * @throws ExpiredLockException when a claim is no longer ours, naming the new holder where known
     * @throws TemporaryLockingException when the backend cannot be asked now (the claim may still be ours)
     * @throws IllegalStateException when the locker is closed
     */
    void verifyLocks(Object tx);

    /**
     * Extends the expiry of every lock {@code tx} holds, in place: the claims keep their seniority and fencing tokens.
     *
     * @param tx the transaction: any object of the caller's, compared by identity
     * @throws ExpiredLockException when a claim has expired, was taken away or force-released (then the lock may be
     *         someone else's)
     */
    void renewLocks(Object tx);

    /**
     * Releases every lock {@code tx} claimed. Never throws for a backend failure; a transaction unknown here, or any
     * transaction once the locker is closed (closing released them), is a no-op.
     *
     * @param tx the transaction: any object of the caller's, compared by identity
     */
    void deleteLocks(Object tx);

    /**
     * What this locker knows of {@code lock} for {@code tx}, or empty when {@code tx} has not claimed it.
     *
     * @param lock the lock
     * @param tx the transaction: any object of the caller's, compared by identity
     * @return the status, or empty when {@code tx} has not claimed {@code lock}
     */
    Optional<LockStatus> status(KeyColumn lock, Object tx);

    /**
     * The fencing token of a checked lock: strictly greater than every token issued before for this lock. Pass it to
     * the resource the lock protects so that a paused former holder is refused there.
     *
     * @param lock the lock
     * @param tx the transaction: any object of the caller's, compared by identity
     * @throws IllegalStateException when {@code tx} does not hold {@code lock} (not claimed, or not checked yet)
     * @return the token
     */
    default long fencingToken(KeyColumn lock, Object tx) {
        LockStatus s = status(lock, tx).orElseThrow(() -> new IllegalStateException(
                "transaction " + tx + " has not claimed lock " + lock));
        if (!s.isHeld()) {
            throw new IllegalStateException("lock " + lock + " is claimed but not checked yet: call checkLocks first");
        }
        return s.fencingToken();
    }

    /**
     * Calls {@code listener} once when {@code tx}'s claim on {@code lock} is lost (taken over, gone, expired without a
     * successful renewal, or the locker closed), on the locker's notifier thread; at once if it already is. A release
     * is no loss. A watched claim that nears its deadline without a successful renewal is declared lost before the
     * deadline (a tenth of the expiry before, at most 5 s), so the holder can stop in time.
     *
     * @param lock the lock
     * @param tx the transaction: any object of the caller's, compared by identity
     * @param listener told once, with the loss
     * @throws IllegalStateException when {@code tx} has not claimed {@code lock}, or the locker is closed
     */
    void whenLost(KeyColumn lock, Object tx, java.util.function.Consumer<LockLost> listener);

    /**
     * Renews every claim of {@code tx} in the background (a third of the expiry apart, in place: same claim, same
     * token) until {@code tx} is released or a claim is lost, from a thread this locker owns and stops on close;
     * {@code on=false} stops it.
     *
     * @param tx the transaction: any object of the caller's, compared by identity
     * @param on true to turn it on, false to turn it off
     * @throws IllegalStateException when {@code tx} holds no lock, or the locker is closed
     */
    void keepAlive(Object tx, boolean on);

    /**
     * Who holds {@code lock} now, as the backend sees it (any locker, any process), or empty when it is free.
     *
     * @param lock the lock
     * @return the holder, or empty when the lock is free
     */
    Optional<LockOwner> holder(KeyColumn lock);

    /**
     * Like {@link #holder}, with the holder's fencing token and expiry (as {@link #list} shows them): what an operator
     * names in {@link #forceRelease(KeyColumn, String, long)}. One read of the lock.
     *
     * @param lock the lock
     * @return the holder, its token (0 for a wait-and-read-back claim not confirmed yet) and expiry, or empty when
     *         the lock is free
     */
    Optional<LockInfo> holding(KeyColumn lock);

    /**
     * Operator's tool: removes every claim on {@code lock}, whoever owns it. Use it only for a holder known to be dead.
     *
     * <p>The former holder learns it at its next step that asks the backend about the claim: a renewal (its lease's
     * keep-alive renews every third of the expiry; {@link #renewLocks}), {@link #verifyLocks} or {@link Lease#check()}.
     * That step throws {@link ExpiredLockException}, and the lease's lost-listeners ({@link Lease#onLost}) are told.
     * {@link #checkLocks} does not see it for a claim it confirmed before: it asks the backend once per claim.
     * A holder that neither renews nor asks learns it at its deadline at the latest: {@link Lease#isValid()} turns
     * false then. Until it learns, it may still write: its fencing token is refused by the resource once the next
     * holder wrote there.
     *
     * @param lock the lock
     * @return true if there was any claim to remove
     */
    default boolean forceRelease(KeyColumn lock) {
        return forceRelease(lock, "");
    }

    /**
     * Like {@link #forceRelease(KeyColumn)}, recorded: who forced it (this locker's owner), when, why, and whom it took
     * the lock from are kept with the lock ({@link #lastForcedRelease}), and the former holder's lost signal says
     * {@link LossReason#FORCE_RELEASED} with them (a holder named in the record whose claim is found gone or taken).
     *
     * @param lock the lock
     * @param reason why, for the record and the former holder
     * @return true if there was any claim to remove
     */
    boolean forceRelease(KeyColumn lock, String reason);

    /**
     * Like {@link #forceRelease(KeyColumn, String)}, but only if the lock's holder is still the claim an operator
     * looked at: the one whose fencing token is {@code expectedToken} (as {@link #list} or {@code locker show} showed
     * it). That claim, and no other, is removed, and the check is atomic with the removal on the server (on the
     * wait-and-read-back protocol, whose claims are one entry per claimant, only the entry that carries that token is
     * removed: a claim written later carries another token and is never touched). If the lock changed hands since
     * (the holder's claim ended and another process took the lock), nothing happens. Same checks, reason limit and
     * audit record as the unconditional form; the holder taken from learns {@link LossReason#FORCE_RELEASED}, when and
     * as {@link #forceRelease(KeyColumn)} says.
     *
     * <p>The record is written only when the removal is attempted: never when the holder was already gone or another
     * claim held the lock. Where the backend keeps the record with the claim (Redis, HBase, {@code file:}), record and
     * removal are one atomic step, so a record always names a holder it removed. Where it cannot (MongoDB, the
     * wait-and-read-back protocol), the record is written just before the conditional removal; if that removal then
     * finds the claim gone (it ended on its own in between: released or expired), the record names the holder of
     * {@code expectedToken} although its claim was not removed by this call, and never any other holder (MongoDB then
     * returns false; the wait-and-read-back protocol, whose stores do not say what a delete found, returns true).
     *
     * @param lock the lock
     * @param reason why, for the record and the former holder
     * @param expectedToken the fencing token of the holder to release (positive)
     * @return true if the claim carrying {@code expectedToken} held the lock and was removed
     * @throws IllegalArgumentException for a token below 1 or a reason over 1000 characters, before any I/O
     */
    boolean forceRelease(KeyColumn lock, String reason, long expectedToken);

    /**
     * The record of the last forced release of {@code lock}, if any.
     *
     * @param lock the lock
     * @return who forced it, when, why, and from whom
     */
    Optional<ForcedRelease> lastForcedRelease(KeyColumn lock);

    /**
     * The record of the last finished run of {@code job} ({@link #runOnce}, {@link #runAtMostOncePer}), if any: who
     * ran it, when, under which token. For operators; a job is decided by {@link #runOnce}, never by this read.
     *
     * @param job the job's lock
     * @return the last run's record, or empty when none finished
     * @throws UnsupportedOperationException from a locker that keeps no run records (every backend here keeps them)
     */
    default Optional<RunRecord> lastRun(KeyColumn job) {
        throw new UnsupportedOperationException(getClass().getSimpleName() + " keeps no run records");
    }

    /** The largest {@code limit} a {@link #list} call accepts. */
    int MAX_LIST_LIMIT = 1000;

    /**
     * Operator's tool: the live held locks whose key starts with {@code keyPrefix}, as the backend sees them (any
     * locker, any process), with holder, fencing token and expiry. A lock is listed when its senior live claim exists
     * (on wait-and-read-back, a live claim carrying a token, else the senior live claim, as {@link #holder} decides).
     *
     * <p>Paging: pass the page's {@link LockPage#nextCursor()} (and the same prefix) to the next call, until it is empty.
     * A page holds at most {@code limit} locks and may hold fewer, even none, while more follow: each call does a bounded
     * amount of work and never loads more than O(limit) entries. Over a whole listing every lock held throughout is
     * listed once; a lock acquired or released meanwhile may or may not appear. The order is the backend's.
     *
     * @param keyPrefix bytes every listed lock's key starts with (the column is not matched); empty lists every lock
     * @param limit     1..{@value #MAX_LIST_LIMIT}
     * @param cursor    null for the first page, else a {@link LockPage#nextCursor()} of this backend
     * @throws IllegalArgumentException before any I/O, for a null prefix, a limit out of range or a cursor this backend
     *                                  did not issue
     * @throws IllegalStateException    when the locker is closed
     * @throws TemporaryLockingException when the backend cannot be asked now
     * @throws PermanentLockingException when the backend refuses (permissions; a store that cannot list its keys)
     * @return one page of held locks and the cursor of the next
     */
    LockPage list(byte[] keyPrefix, int limit, String cursor);

    /**
     * {@link #list(byte[], int, String)} with the prefix encoded as UTF-8 (a lone surrogate is refused).
     *
     * @param keyPrefix what every listed lock's key starts with; empty lists every lock
     * @param limit the most locks on one page, 1..1000
     * @param cursor null for the first page, else the previous page's next cursor
     * @return one page of held locks and the cursor of the next
     */
    default LockPage list(String keyPrefix, int limit, String cursor) {
        if (keyPrefix == null) {
            throw new IllegalArgumentException("keyPrefix must not be null (use \"\" to list every lock)");
        }
        ByteBuffer buf;
        try {
            buf = StandardCharsets.UTF_8.newEncoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .encode(CharBuffer.wrap(keyPrefix));
        } catch (CharacterCodingException e) {
            throw new IllegalArgumentException("keyPrefix is not valid UTF-16 (lone surrogate?): cannot encode it as UTF-8", e);
        }
        byte[] prefix = new byte[buf.remaining()];
        buf.get(prefix);
        return list(prefix, limit, cursor);
    }

    /**
     * Where this locker's transactions meet other transactions of this process; give it to lockers that should share
     * it.
     *
     * @return this locker's in-process arbitration
     */
    LocalArbitration arbitration();

    /**
     * This locker instance's identity, recorded in every claim it writes.
     *
     * @return the rid
     */
    String rid();

    /**
     * The configuration this locker runs with.
     *
     * @return the configuration
     */
    LockerConfig config();

    /**
     * Takes {@code lock} for a new transaction (writeLock then checkLocks), failing at once if it is taken. The lease
     * is kept alive in the background until it is closed ({@link Lease#keepAlive(boolean)} turns that off): a job
     * runs as long as it needs, and if renewals fail the lease says so ({@link Lease#onLost}, {@link Lease#isValid})
     * before its validity ends.
     *
     * @param lock the lock
     * @param why recorded with the claim, shown to operators and in other processes' exceptions
     * @return the lease; closing it releases the lock
     */
    Lease acquire(KeyColumn lock, String why);

    /**
     * Like {@link #acquire}, but waits while the lock is taken (or the backend temporarily fails) for up to
     * {@code maxWait}. Where the backend can tell of a release (Redis: a message on release), a waiter is woken by it
     * and waiters are served in the order they arrived: a process that releases and asks again queues behind them.
     * Elsewhere it retries after a jittered pause doubling from 5 to 200 ms, never later than the holder's claim
     * expires when the backend said when (see {@link TemporaryLockingException#holderExpiresIn()}).
     *
     * @param lock the lock
     * @param why the reason recorded with the claim, shown to operators and in other processes' exceptions
     * @param maxWait how long to keep trying, on the monotonic clock; zero makes one attempt
     * @return the lease, or empty if the lock could not be taken within {@code maxWait}
     * @throws PermanentLockingException at once, when the failure is not temporary
     */
    Optional<Lease> tryAcquire(KeyColumn lock, String why, Duration maxWait);

    /**
     * Like {@link #tryAcquire}, but says why the wait ended: acquired, still busy (naming the holder), backend
     * unreachable (with its failure), or refused for good (at once: waiting cannot cure it).
     *
     * @param lock the lock
     * @param why the reason recorded with the claim, shown to operators and in other processes' exceptions
     * @param maxWait how long to keep trying, on the monotonic clock; zero makes one attempt
     * @return how the wait ended, with the lease when it was taken
     */
    Acquisition acquireWithin(KeyColumn lock, String why, Duration maxWait);

    /**
     * Takes every lock of {@code locks} for one new transaction, all or nothing: in one canonical order (the locks'
     * encoded bytes, unsigned), so that two processes asking for overlapping sets in different orders never wait on
     * each other in a cycle; if any is taken, the ones already claimed are released and the failure names the holder.
     * The lease is kept alive like {@link #acquire}'s. One round trip per lock (no backend batches them yet).
     *
     * @param locks the locks to take together; not empty, no null
     * @param why the reason recorded with the claim, shown to operators and in other processes' exceptions
     * @throws IllegalArgumentException when {@code locks} is empty or holds null
     * @return one lease on every lock
     */
    Lease acquireAll(java.util.Collection<KeyColumn> locks, String why);

    /**
     * Like {@link #acquireAll}, waiting like {@link #tryAcquire} while a lock is taken, for up to {@code maxWait}.
     *
     * @param locks the locks to take together; not empty, no null
     * @param why the reason recorded with the claim, shown to operators and in other processes' exceptions
     * @param maxWait how long to keep trying, on the monotonic clock; zero makes one attempt
     * @return the lease, or empty when the wait ran out
     */
    Optional<Lease> tryAcquireAll(java.util.Collection<KeyColumn> locks, String why, Duration maxWait);

    /**
     * Like {@link #acquire(KeyColumn, String)}, with this lease's own expiry, keep-alive and hold-at-least.
     *
     * @param lock    the lock
     * @param why     recorded with the claim, shown to operators and in other processes' exceptions
     * @param options how this lease lives; {@link LeaseOptions#DEFAULTS} is the plain form
     * @return the lease; closing it releases the lock (or leaves the claim for its hold-at-least)
     * @throws IllegalArgumentException for options this locker cannot keep, before any I/O
     */
    default Lease acquire(KeyColumn lock, String why, LeaseOptions options) {
        requireDefaults(options);
        return acquire(lock, why);
    }

    /**
     * Like {@link #tryAcquire(KeyColumn, String, Duration)}, with this lease's own options.
     *
     * @param lock    the lock
     * @param why     recorded with the claim, shown to operators and in other processes' exceptions
     * @param maxWait how long to keep trying, on the monotonic clock; zero makes one attempt
     * @param options how this lease lives
     * @return the lease, or empty if the lock could not be taken within {@code maxWait}
     * @throws IllegalArgumentException for options this locker cannot keep, before any I/O
     */
    default Optional<Lease> tryAcquire(KeyColumn lock, String why, Duration maxWait, LeaseOptions options) {
        return acquireWithin(lock, why, maxWait, options).leaseOrThrowRefusal();
    }

    /**
     * Like {@link #acquireWithin(KeyColumn, String, Duration)}, with this lease's own options.
     *
     * @param lock    the lock
     * @param why     recorded with the claim, shown to operators and in other processes' exceptions
     * @param maxWait how long to keep trying, on the monotonic clock; zero makes one attempt
     * @param options how this lease lives
     * @return how the wait ended, with the lease when it was taken
     * @throws IllegalArgumentException for options this locker cannot keep, before any I/O
     */
    default Acquisition acquireWithin(KeyColumn lock, String why, Duration maxWait, LeaseOptions options) {
        requireDefaults(options);
        return acquireWithin(lock, why, maxWait);
    }

    /**
     * Like {@link #acquireAll(java.util.Collection, String)}, with one set of options for every lock of the lease.
     *
     * @param locks   the locks to take together; not empty, no null
     * @param why     recorded with the claims
     * @param options how this lease lives
     * @return one lease on every lock
     * @throws IllegalArgumentException for options this locker cannot keep, before any I/O
     */
    default Lease acquireAll(java.util.Collection<KeyColumn> locks, String why, LeaseOptions options) {
        requireDefaults(options);
        return acquireAll(locks, why);
    }

    /**
     * Like {@link #tryAcquireAll(java.util.Collection, String, Duration)}, with one set of options for every lock.
     *
     * @param locks   the locks to take together; not empty, no null
     * @param why     recorded with the claims
     * @param maxWait how long to keep trying, on the monotonic clock; zero makes one attempt
     * @param options how this lease lives
     * @return the lease, or empty when the wait ran out
     * @throws IllegalArgumentException for options this locker cannot keep, before any I/O
     */
    default Optional<Lease> tryAcquireAll(java.util.Collection<KeyColumn> locks, String why, Duration maxWait,
                                          LeaseOptions options) {
        requireDefaults(options);
        return tryAcquireAll(locks, why, maxWait);
    }

    /**
     * Like {@link #renewLocks(Object)}, to {@code expiry} from now; later renewals of the claims keep that expiry.
     *
     * @param tx     the transaction: any object of the caller's, compared by identity
     * @param expiry the claims' new expiry; positive, within this locker's maximum
     * @throws ExpiredLockException when a claim has expired, was taken away or force-released
     * @throws IllegalArgumentException for an expiry this locker cannot keep, before any I/O
     * @throws UnsupportedOperationException from a locker without per-lease expiries
     */
    default void renewLocks(Object tx, Duration expiry) {
        throw new UnsupportedOperationException(getClass().getSimpleName() + " keeps one expiry for every claim");
    }

    /**
     * Like {@link #deleteLocks}, saying whether every claim of {@code tx} was still ours. This default asks the
     * backend first ({@link #verifyLocks}), then releases: a claim that ends between the two is reported ours.
     *
     * @param tx the transaction: any object of the caller's, compared by identity
     * @return true when every claim was still ours when released (or left for its hold-at-least); false when one had
     *         expired, been taken over or force-released, or could not be asked about
     */
    default boolean releaseLocks(Object tx) {
        boolean ours;
        try {
            verifyLocks(tx);
            ours = true;
        } catch (LockingException | IllegalStateException e) {
            ours = false;
        }
        deleteLocks(tx);
        return ours;
    }

    /** {@code options} when they are the defaults, which every locker keeps; otherwise refused. */
    private void requireDefaults(LeaseOptions options) {
        if (options == null) {
            throw new IllegalArgumentException("options must not be null (use LeaseOptions.DEFAULTS)");
        }
        if (!options.equals(LeaseOptions.DEFAULTS)) {
            throw new UnsupportedOperationException(getClass().getSimpleName() + " keeps no per-lease options");
        }
    }

    /**
     * Runs {@code task} at most once across all processes sharing the backend, ever: under the lock {@code job} (not
     * waiting for it), unless a run already finished, as the record kept with the lock says. The record (who, when,
     * token: {@link RunRecord}) is written after the task returns, only while the lock is still ours, and outlives
     * every claim. A run that crashed or threw leaves no record, so the next call runs it again, never two at a time.
     * The task gets the lease: pass its fencing token with every write, so that a holder that paused past its lease
     * is refused.
     *
     * @param job  the job's lock
     * @param why  recorded with the claim and the run's record
     * @param task the job, given the lease
     * @return how the call ended, with the run's record where there is one
     */
    Run runOnce(KeyColumn job, String why, java.util.function.Consumer<Lease> task);

    /**
     * Runs {@code task} at most once per {@code period} across all processes sharing the backend (the lockAtLeastFor
     * case: every server's scheduler fires, one of them runs it): like {@link #runOnce}, but a finished run only
     * holds off the calls until {@code period} less a tenth has passed since it started. The tenth absorbs the
     * schedulers' differences: servers whose clocks or start times differ by less than a tenth of the period run the
     * task once per period. NOT_DUE names the last run.
     *
     * @param job    the job's lock
     * @param period the least time between two runs' starts, less a tenth
     * @param why    recorded with the claim and the run's record
     * @param task   the job, given the lease
     * @return how the call ended, with the run's record where there is one
     */
    Run runAtMostOncePer(KeyColumn job, Duration period, String why, java.util.function.Consumer<Lease> task);

    /**
     * Releases the claims of transactions still open (best effort: a claim it cannot delete expires on its own), then
     * the backend connections and background threads. Idempotent. Afterwards every call fails with
     * {@link IllegalStateException} (so do the leases of this locker), except {@link #deleteLocks}, which does nothing.
     */
    @Override
    void close();
}
