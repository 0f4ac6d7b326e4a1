package dev.locker.local;

import dev.locker.api.LockStatus;

import java.time.Instant;
import java.util.HexFormat;
import java.util.Objects;

/**
 * The status of one claim a transaction wrote: an opaque claim id the backend uses to find its claim again (a column,
 * a sequence number...), the local expiry, and — once the backend confirmed it — the holder's fencing token.
 * Immutable; each phase returns a new one.
 */
public final class ClaimStatus implements LockStatus {

    private final byte[] claimId;
    private final Instant writtenAt;
    private final Instant expiry;
    private final boolean held;
    private final long fencingToken;

    private ClaimStatus(byte[] claimId, Instant writtenAt, Instant expiry, boolean held, long fencingToken) {
        this.claimId = claimId;
        this.writtenAt = writtenAt;
        this.expiry = expiry;
        this.held = held;
        this.fencingToken = fencingToken;
    }

    /** A claim written but not yet confirmed as the holder. */
    public static ClaimStatus written(byte[] claimId, Instant writtenAt, Instant expiry) {
        return new ClaimStatus(Objects.requireNonNull(claimId, "claimId").clone(), writtenAt, expiry, false, 0L);
    }

    /** A claim the backend made the holder in the same step that wrote it (atomic backends). */
    public static ClaimStatus granted(byte[] claimId, Instant writtenAt, Instant expiry, long fencingToken) {
        return new ClaimStatus(Objects.requireNonNull(claimId, "claimId").clone(), writtenAt, expiry, true, fencingToken);
    }

    public ClaimStatus held(long token) {
        return new ClaimStatus(claimId, writtenAt, expiry, true, token);
    }

    public ClaimStatus withExpiry(Instant newExpiry) {
        return new ClaimStatus(claimId, writtenAt, newExpiry, held, fencingToken);
    }

    public byte[] claimId() {
        return claimId.clone();
    }

    /** When the claim was written, by the clock that ordered it. */
    public Instant writtenAt() {
        return writtenAt;
    }

    @Override
    public Instant expiry() {
        return expiry;
    }

    @Override
    public boolean isHeld() {
        return held;
    }

    @Override
    public long fencingToken() {
        return fencingToken;
    }

    @Override
    public String toString() {
        return "ClaimStatus[claim=" + HexFormat.of().formatHex(claimId) + ", written=" + writtenAt + ", expiry=" + expiry
                + (held ? ", held, token=" + fencingToken : ", not checked") + "]";
    }
}
