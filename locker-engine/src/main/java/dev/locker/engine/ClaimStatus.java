package dev.locker.engine;

import dev.locker.api.LockStatus;

import java.util.Arrays;
import java.util.HexFormat;
import java.util.Objects;

/**
 * A claim an atomic backend granted: the bytes that identify our claim in the backend (a nonce in Redis, the claim
 * field in MongoDB, the holder cell's value in HBase), the fencing token it got, and the deadline on the monotonic
 * clock until which this process may believe it. Immutable; renewal returns a new one.
 *
 * <p>A claim id of the form "a prefix shared by many claims, then a counter as 16 hex digits" (Redis's nonces:
 * instance, then acquire number) is kept as the shared prefix and the number ({@link #grantedCounted}), not as bytes
 * of its own: a claim is kept per held lock, and its id's bytes were the largest part of it. The bytes are made
 * again, the same every time, when a backend sends them.
 *
 * <p>A claim status is also the steady state of the hold that holds it (CLAIMED, reported, this status; see
 * {@code Hold.State}): a held lock then keeps no snapshot object besides it.
 */
public final class ClaimStatus extends Hold.State implements LockStatus {

    /** {@link #counter} of a claim whose {@link #claimId} is the whole id. */
    private static final long WHOLE = Long.MIN_VALUE;
    private static final byte[] HEX = {'0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'};

    /** The whole id, or, when {@link #counter} is not {@link #WHOLE}, the prefix the id shares with other claims. */
    private final byte[] claimId;
    private final long counter;
    private final long fencingToken;
    private final long deadlineNanos;

    private ClaimStatus(byte[] claimId, long counter, long fencingToken, long deadlineNanos) {
        this.claimId = claimId;
        this.counter = counter;
        this.fencingToken = fencingToken;
        this.deadlineNanos = deadlineNanos;
    }

    /**
     * A claim the backend made the holder in the step that wrote it.
     *
     * @param deadlineNanos from {@link dev.locker.spi.Deadlines#of}: one monotonic reading taken before the request
     */
    public static ClaimStatus granted(byte[] claimId, long fencingToken, long deadlineNanos) {
        return new ClaimStatus(Objects.requireNonNull(claimId, "claimId").clone(), WHOLE, fencingToken, deadlineNanos);
    }

    /** {@link #granted} without the copy: {@code claimId} is made for this claim alone and never changed. */
    static ClaimStatus grantedOwning(byte[] claimId, long fencingToken, long deadlineNanos) {
        return new ClaimStatus(Objects.requireNonNull(claimId, "claimId"), WHOLE, fencingToken, deadlineNanos);
    }

    /**
     * {@link #granted} for the claim id {@link #countedId countedId(sharedPrefix, counter)}, kept as the prefix (not
     * copied: shared, never changed) and the number. {@code counter} must not be {@code Long.MIN_VALUE}.
     */
    public static ClaimStatus grantedCounted(byte[] sharedPrefix, long counter, long fencingToken, long deadlineNanos) {
        if (counter == WHOLE) {
            return grantedOwning(countedId(sharedPrefix, counter), fencingToken, deadlineNanos);
        }
        return new ClaimStatus(Objects.requireNonNull(sharedPrefix, "sharedPrefix"), counter, fencingToken,
                deadlineNanos);
    }

    /** The claim id {@code prefix} followed by {@code counter} as 16 lower-case hex digits (a new array). */
    public static byte[] countedId(byte[] prefix, long counter) {
        byte[] out = Arrays.copyOf(prefix, prefix.length + 16);
        long n = counter;
        for (int i = out.length - 1; i >= prefix.length; i--, n >>>= 4) {
            out[i] = HEX[(int) (n & 15)];
        }
        return out;
    }

    /** {@link #claimId} without the copy where it has bytes of its own, for a caller that never changes them. */
    public byte[] claimIdShared() {
        return counter == WHOLE ? claimId : countedId(claimId, counter);
    }

    /** The same claim with the deadline of a renewal (same token, same seniority). */
    public ClaimStatus renewed(long newDeadlineNanos) {
        return new ClaimStatus(claimId, counter, fencingToken, newDeadlineNanos);
    }

    /** The bytes that identify our claim in the backend. */
    public byte[] claimId() {
        return counter == WHOLE ? claimId.clone() : countedId(claimId, counter);
    }

    /** As the steady state of its hold: its status is itself. */
    @Override
    LockStatus status() {
        return this;
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
        return "ClaimStatus[claim=" + HexFormat.of().formatHex(claimIdShared()) + ", token=" + fencingToken + "]";
    }
}
