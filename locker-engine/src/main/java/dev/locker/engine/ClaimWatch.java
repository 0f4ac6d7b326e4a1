package dev.locker.engine;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.time.Instant;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Judges other processes' claims by this host's monotonic clock from the moment this locker first saw them. At its
 * first sight a claim's time left is read off the wall clock (less the forward steps {@link WallStepGuard} saw since
 * it was written); from then on it runs down on the monotonic clock, so no later step of the wall clock, forward or
 * back, changes when this locker takes the claim for dead. A claim is one state of one column: a renewal writes a new
 * expiry, and is seen anew.
 *
 * <p>At most {@link #MOST} claims are watched, dead ones too (a step back would make them look alive again). Beyond that
 * the dead ones are dropped, then the oldest: a claim dropped is judged again at its next sight, as at a first sight.
 */
final class ClaimWatch {

    static final int MOST = 4_096;

    /** Per claim, the monotonic reading at which its time left runs out; in the order first seen. */
    private final Map<Key, Long> deadlines = new LinkedHashMap<>();

    /** The judge of the claims of rows read after {@code at} was taken. */
    Judge judge(WallStepGuard.JudgingTime at) {
        return new Judge(at);
    }

    synchronized int size() {
        return deadlines.size();
    }

    /** The deadline of the first sight of {@code key}: {@code seen}, unless another judging saw it first. */
    private synchronized long deadline(Key key, long seen, long nowNanos) {
        Long first = deadlines.putIfAbsent(key, seen);
        if (first != null) {
            return first;
        }
        if (deadlines.size() > MOST) {
            forget(nowNanos);
        }
        return seen;
    }

    /** Drops the claims dead at {@code nanos}; if that leaves too many, the oldest live ones too. */
    private void forget(long nanos) {
        deadlines.values().removeIf(d -> d - nanos <= 0);
        Iterator<Long> oldest = deadlines.values().iterator();
        while (deadlines.size() > MOST * 3 / 4 && oldest.hasNext()) {
            oldest.next();
            oldest.remove();
        }
    }

    /** One claim state: its column (time written, rid, nonce) and its expiry. */
    private record Key(ByteBuffer column, Instant expiry) {
        Key(ClaimCodec.Claim c) {
            this(ByteBuffer.wrap(c.column), c.expiry);
        }
    }

    /** Judges claims at one judging time, taken before their row was read. */
    final class Judge {
        private final WallStepGuard.JudgingTime at;

        private Judge(WallStepGuard.JudgingTime at) {
            this.at = at;
        }

        boolean isLive(ClaimCodec.Claim c) {
            return remainingNanos(c) > 0;
        }

        /** How long {@code c} lives on, as this locker judges it (0 or less: dead). */
        Duration remaining(ClaimCodec.Claim c) {
            return Duration.ofNanos(Math.max(0, remainingNanos(c)));
        }

        private long remainingNanos(ClaimCodec.Claim c) {
            Key key = new Key(c);
            Long watched;
            synchronized (ClaimWatch.this) {
                watched = deadlines.get(key);
            }
            if (watched != null) {
                return watched - at.nanos();
            }
            // a claim first seen by a judging taken before its row was read: it had at least this long left then; one
            // dead at its first sight is watched too, so that no later step back makes it live again
            long left = LockerEngine.saturatedNanos(Duration.between(at.forClaimWrittenAt(c.writtenAt), c.expiry));
            return deadline(key, at.nanos() + left, at.nanos()) - at.nanos();
        }
    }
}
