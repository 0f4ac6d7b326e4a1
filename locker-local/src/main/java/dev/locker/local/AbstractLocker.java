package dev.locker.local;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.LockInfo;
import dev.locker.api.LockOwner;
import dev.locker.api.LockPage;
import dev.locker.api.LockStatus;
import dev.locker.api.LockTransaction;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockingException;
import dev.locker.api.TemporaryLockingException;
import dev.locker.spi.Deadlines;
import dev.locker.spi.LockRecords;
import dev.locker.spi.Waiting;

import java.time.Duration;
import java.util.Optional;

/**
 * The engine for a backend that still implements the hooks of the three-phase template instead of a driver. Its
 * hooks reach the engine through {@link HookCalls}, a driver over them; a backend moves to a driver of its own and
 * then extends {@link LockerEngine} directly.
 *
 * @param <S> what the backend remembers of one claim
 */
public abstract class AbstractLocker<S extends LockStatus> extends LockerEngine<S> {

    /** The name of the record a finished run leaves with its job's lock. */
    protected static final String DONE = LockRecords.DONE;
    /** The name of the record a forced release leaves. */
    protected static final String FORCED = LockRecords.FORCED;

    private final HookCalls<S> hookCalls;

    /**
     * @param config   the settings; the locker runs with {@link LockerConfig#forNewInstance()} of it, so its rid is its own
     * @param mediator the JVM-local arbitration to share with other lockers of this process on the same backend, or
     *                 null for a mediator of this locker's own
     */
    protected AbstractLocker(LockerConfig config, LocalLockMediator mediator) {
        this(config, mediator, new HookCalls<>());
    }

    /** From a backend's builder: its effective configuration and mediator. */
    protected AbstractLocker(LockerBuilder<?> builder) {
        this(builder.effectiveConfig(), builder.mediator, new HookCalls<>());
    }

    private AbstractLocker(LockerConfig config, LocalLockMediator mediator, HookCalls<S> calls) {
        super(config, mediator, running -> calls);
        this.hookCalls = calls;
        calls.bind(this); // before the subclass's constructor runs: nothing calls the driver earlier
    }

    /** Reads the holder through its own hook: some of these backends read it apart from the holding. */
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

    // ---- the hooks -----------------------------------------------------------------------------------------------

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
        return hookCalls.translateByDefault(e, lock, action);
    }

    /** The deadline of a claim: see {@link Deadlines#of}. */
    protected final long deadline(long startNanos, Duration validity) {
        return Deadlines.of(startNanos, validity);
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
