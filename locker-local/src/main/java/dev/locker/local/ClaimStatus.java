package dev.locker.local;

import dev.locker.api.LockStatus;

import java.util.HexFormat;
import java.util.Objects;

/**
 * A claim an atomic backend granted: the bytes that identify our claim in the backend (a nonce in Redis, the claim
 * field in MongoDB, the holder cell's value in HBase), the fencing token it got, and the deadline on the monotonic
 * clock until which this process may believe it. Immutable; renewal returns a new one.
 */
public final class ClaimStatus implements LockStatus {

    private final byte[] claimId;
    private final long fencingToken;
    private final long deadlineNanos;

    private ClaimStatus(byte[] claimId, long fencingToken, long deadlineNanos) {
        this.claimId = claimId;
        this.fencingToken = fencingToken;
        this.deadlineNanos = deadlineNanos;
    }

    /**
     * A claim the backend made the holder in the step that wrote it.
     *
     * @param deadlineNanos from {@link AbstractLocker#deadline}: one monotonic reading taken before the request
     */
    public static ClaimStatus granted(byte[] claimId, long fencingToken, long deadlineNanos) {
        return new ClaimStatus(Objects.requireNonNull(claimId, "claimId").clone(), fencingToken, deadlineNanos);
    }

    /** {@link #granted} without the copy: {@code claimId} is made for this claim alone and never changed. */
    static ClaimStatus grantedOwning(byte[] claimId, long fencingToken, long deadlineNanos) {
        return new ClaimStatus(Objects.requireNonNull(claimId, "claimId"), fencingToken, deadlineNanos);
    }

    /** {@link #claimId} without the copy, for a caller that never changes it. */
    byte[] claimIdShared() {
        return claimId;
    }

    /** The same claim with the deadline of a renewal (same token, same seniority). */
    public ClaimStatus renewed(long newDeadlineNanos) {
        return new ClaimStatus(claimId, fencingToken, newDeadlineNanos);
    }

    /** The bytes that identify our claim in the backend. */
    public byte[] claimId() {
        return claimId.clone();
    }

    @Override
    public boolean isHeld() {
        return true;
    }

    @Override
    public long fencingToken() {
        return fencingToken;
    }

    @Override
    public long deadlineNanos() {
        return deadlineNanos;
    }

    @Override
    public String toString() {
        return "ClaimStatus[claim=" + HexFormat.of().formatHex(claimId) + ", token=" + fencingToken + "]";
    }
}
