package dev.locker.engine;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Judges other processes' claims by this host's monotonic clock from the moment this locker first saw them. At its
 * first sight a claim's time left is read off the wall clock (less the forward steps {@link WallStepGuard} saw since
 * its last write); from then on it runs down on the monotonic clock, so no later step of the wall clock, forward or
 * back, changes when this locker takes the claim for dead. A claim is watched by its column, in the state last seen
 * (its stored value, which no two writes share): a renewal is seen anew, whatever expiry it writes (as is an older
 * state read again, on a late read).
 *
 * <p>At most {@link #MOST} claims are watched, dead ones too (a step back would make them look alive again). Beyond that
 * the dead ones are dropped, then the oldest: a claim dropped is judged again at its next sight, as at a first sight.
 */
final class ClaimWatch {

    static final int MOST = 4_096;

    /** Per claim column, the state last seen and the monotonic reading at which its time left runs out. */
    private final Map<ByteBuffer, Watched> deadlines = new LinkedHashMap<>();
    /**
     * The latest after-read reading of a state the watch forgot: a read begun before it may be late, and must not put
     * back an older state of a column whose newer one was forgotten.
     */
    private long forgottenReadEnded;
    private boolean forgotAny;

    /** The judge of the claims of rows read after {@code at} was taken. */
    Judge judge(WallStepGuard.JudgingTime at) {
        return new Judge(at);
    }

    synchronized int size() {
        return deadlines.size();
    }

    /**
     * The deadline of the first sight of {@code value} in {@code column}: {@code seen}, unless another judging saw that
     * state first. Another state of the column is replaced only by a read begun after the read that saw it had ended
     * ({@code readBegun}, {@code readEnded}): a late read of an older state must not bring that state back, since a
     * newer state may have been judged dead.
     */
    private synchronized long deadline(ByteBuffer column, byte[] value, long seen, long nowNanos, long readBegun,
                                       long readEnded) {
        Watched first = deadlines.get(column);
        if (first != null && Arrays.equals(first.value, value)) {
            return first.deadline;
        }
        if (first != null ? readBegun - first.readEnded < 0 : forgotAny && readBegun - forgottenReadEnded < 0) {
            return seen; // judged for this read alone
        }
        deadlines.put(column, new Watched(value, seen, readEnded));
        if (deadlines.size() > MOST) {
            forget(nowNanos);
        }
        return seen;
    }

    /** Drops the claims dead at {@code nanos}; if that leaves too many, the oldest live ones too. */
    private void forget(long nanos) {
        Iterator<Watched> all = deadlines.values().iterator();
        while (all.hasNext()) {
            Watched w = all.next();
            if (w.deadline - nanos <= 0) {
                forgotten(w);
                all.remove();
            }
        }
        Iterator<Watched> oldest = deadlines.values().iterator();
        while (deadlines.size() > MOST * 3 / 4 && oldest.hasNext()) {
            forgotten(oldest.next());
            oldest.remove();
        }
    }

    private void forgotten(Watched w) {
        if (!forgotAny || w.readEnded - forgottenReadEnded > 0) {
            forgottenReadEnded = w.readEnded;
            forgotAny = true;
        }
    }

    /**
     * The state of a claim last seen: its stored value, the monotonic reading at which its time left runs out, and one
     * taken after the read that saw it.
     */
    private record Watched(byte[] value, long deadline, long readEnded) {
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

        /**
         * How long {@code c} lives on from this judging's monotonic reading, as at a first sight. The judging was taken
         * before its row was read: the claim had at least that long left then, counted in the frame its expiry was
         * written in. A claim whose last write is later than that (written before a step back) lives at most its
         * term from the end of the read that saw it, since it was written before then.
         */
        private long firstSight(ClaimCodec.Claim c, long readEnded) {
            Instant judgedAt = at.forClaimWrittenAt(c.expiryFrom);
            if (c.numbered && judgedAt.isBefore(c.expiryFrom)) {
                // (a value of an earlier build keeps the column's time, which a renewal's expiry may be below)
                long term = LockerEngine.saturatedNanos(Duration.between(c.expiryFrom, c.expiry));
                long read = Math.max(0, readEnded - at.nanos());
                long fromReadEnd = term > Long.MAX_VALUE - read ? Long.MAX_VALUE : term + read;
                return Math.min(fromReadEnd, LockerEngine.saturatedNanos(Duration.between(judgedAt, c.expiry)));
            }
            return LockerEngine.saturatedNanos(Duration.between(judgedAt, c.expiry));
        }

        private long remainingNanos(ClaimCodec.Claim c) {
            ByteBuffer column = ByteBuffer.wrap(c.column);
            Watched watched;
            synchronized (ClaimWatch.this) {
                watched = deadlines.get(column);
            }
            boolean seen = watched != null && Arrays.equals(watched.value, c.value);
            if (seen && c.numbered) {
                return watched.deadline - at.nanos();
            }
            long readEnded = at.other() == null ? at.nanos() : at.other().nanos();
            long left = firstSight(c, readEnded);
            if (seen) {
                // a value without a write number (a writer of an earlier build) may be a renewal that repeats it to
                // the byte: it lives at least as long as either judging says
                return Math.max(watched.deadline - at.nanos(), left);
            }
            // one dead at its first sight is watched too, so that no later step back makes it live again
            return deadline(column, c.value, at.nanos() + left, at.nanos(), at.nanosBefore(), readEnded)
                    - at.nanos();
        }
    }
}
