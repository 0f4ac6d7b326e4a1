package dev.locker.engine;

import dev.locker.api.LockStatus;

import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

/**
 * What a {@link ConsistentKeyLocker} remembers of one claim: its column in the lock row, the columns of earlier
 * attempts of the same claim (written or maybe written; never the holder, always ours to delete), the monotonic
 * reading taken before the successful write (the lock-wait counts from it), the deadline, and, once confirmed, the
 * fencing token. Immutable. Once held, it is also the steady state of its hold (see {@code Hold.State}).
 */
final class ConsistentKeyClaim extends Hold.State implements LockStatus {

    final byte[] column;
    final List<byte[]> earlierAttempts;
    final Instant writtenAt;
    final long writtenAtNanos;
    private final long deadlineNanos;
    private final boolean held;
    private final long token;

    ConsistentKeyClaim(byte[] column, List<byte[]> earlierAttempts, Instant writtenAt, long writtenAtNanos,
                       long deadlineNanos, boolean held, long token) {
        this.column = column;
        this.earlierAttempts = List.copyOf(earlierAttempts);
        this.writtenAt = writtenAt;
        this.writtenAtNanos = writtenAtNanos;
        this.deadlineNanos = deadlineNanos;
        this.held = held;
        this.token = token;
    }

    ConsistentKeyClaim held(long fencingToken) {
        return new ConsistentKeyClaim(column, earlierAttempts, writtenAt, writtenAtNanos, deadlineNanos, true, fencingToken);
    }

    ConsistentKeyClaim renewed(long newDeadlineNanos) {
        return new ConsistentKeyClaim(column, earlierAttempts, writtenAt, writtenAtNanos, newDeadlineNanos, held, token);
    }

    /** Every column this claim may have left in the row: its own and its earlier attempts'. */
    List<byte[]> allColumns() {
        List<byte[]> out = new ArrayList<>(earlierAttempts.size() + 1);
        out.addAll(earlierAttempts);
        out.add(column);
        return out;
    }

    /** As the steady state of its hold: its status is itself. */
    @Override
    LockStatus status() {
        return this;
    }

    @Override
    public boolean isHeld() {
        return held;
    }

    @Override
    public long fencingToken() {
        return token;
    }

    @Override
    public long deadlineNanos() {
        return deadlineNanos;
    }

    @Override
    public String toString() {
        return "ConsistentKeyClaim[column=" + HexFormat.of().formatHex(column) + ", written=" + writtenAt
                + (held ? ", held, token=" + token : ", not checked") + "]";
    }
}
