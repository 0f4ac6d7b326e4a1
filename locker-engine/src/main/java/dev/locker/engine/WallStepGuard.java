package dev.locker.engine;

import dev.locker.api.LockerConfig;
import dev.locker.api.TimeSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.time.Instant;

/**
 * Notices forward steps of this host's wall clock, measured against its monotonic clock between two readings of
 * this locker. A claim written before such a step carries an expiry in the clock's old frame: judged by the stepped
 * clock, it would look dead early while its holder's monotonic deadline has not moved. So a claim written no later
 * than the last step's mark is judged at the wall clock less the steps seen; a claim written after it, as the wall
 * clock reads. The guard only serves a claim's first sight: from then on {@link ClaimWatch} judges it by the
 * monotonic clock alone. It cannot see a step before this locker was built, nor a step back and its undoing that both
 * fall between two of its readings; backward steps need no guard of their own (they only make claims look alive
 * longer, and the confirm step refuses a claimant that a backward step made look senior).
 */
final class WallStepGuard {

    /** Logged under the locker's name: the guard is its part. */
    private static final Logger log = LoggerFactory.getLogger(ConsistentKeyLocker.class);

    private final LockerConfig config;
    /** The monotonic reading offsets are counted from: differences survive a wrap of nanoTime, values do not. */
    private final long originNanos;
    private final long lockWaitMicros;
    /** How close two monotonic readings must be for the wall reading between them to be taken as exact. */
    private final long tightNanos;
    /**
     * The wall-minus-monotonic offset of the frame the claims written now are stamped in: it follows an exact reading
     * down, and rises only at the slew rate or when a step is recorded.
     */
    private long offsetMicros;
    private long lastNanos;
    /** The forward steps seen: replaced, never changed, so a judging keeps the record it was taken with. */
    private Steps steps = Steps.NONE;

    WallStepGuard(LockerConfig config) {
        this.config = config;
        this.lockWaitMicros = LockerEngine.saturatedNanos(config.lockWait()) / 1_000;
        this.tightNanos = Math.max(20_000, lockWaitMicros); // lockWait / 1000, and 20 us at least
        TimeSource time = config.timeSource();
        this.originNanos = time.nanoTime();
        this.lastNanos = originNanos;
        // a baseline from the locker's start: the best of three readings, as one may be paused between its clocks
        long best = Long.MIN_VALUE;
        for (int i = 0; i < 3; i++) {
            long wallMicros = ClaimCodec.micros(time.now()); // the wall clock first, always: a pause then looks early
            best = Math.max(best, wallMicros - (time.nanoTime() - originNanos) / 1_000);
        }
        this.offsetMicros = best;
    }

    /**
     * The time claims are judged at, from a wall reading and a monotonic reading taken after it. A pause between the
     * two makes the offset look low, never high: such a reading may hide a step from itself, never from a later one.
     */
    JudgingTime judgingTime(Instant wall, long nanos) {
        return judge(nanos, wall, nanos, false);
    }

    /**
     * The same, from a wall reading between two monotonic readings: when they are close, the reading is exact enough
     * to follow the wall clock down (a step back), so that the step forward that undoes it is seen.
     */
    JudgingTime judgingTime(long nanosBefore, Instant wall, long nanosAfter) {
        long widthNanos = nanosAfter - nanosBefore;
        return judge(nanosBefore, wall, nanosAfter, widthNanos >= 0 && widthNanos <= tightNanos);
    }

    private synchronized JudgingTime judge(long nanosBefore, Instant wall, long nanos, boolean tight) {
        if (nanos - lastNanos < 0) {
            // taken before a reading that entered already: the baseline and the steps have moved past it
            return new JudgingTime(nanosBefore, wall, nanos, steps);
        }
        long elapsedMicros = (nanos - lastNanos) / 1_000;
        long offset = ClaimCodec.micros(wall) - (nanos - originNanos) / 1_000;
        // NTP slews at most 500 ppm; 1000 ppm are allowed, but never more per interval than every holder keeps back
        // (1% of a validity, which is at least half a lockWait): an idle locker must not take a step for slewing
        long slewMicros = elapsedMicros / 1_000;
        long slewAllowedMicros = Math.min(slewMicros, lockWaitMicros / 200);
        // measured against the baseline, which forward movement raises only at the slew rate: small steps add up
        long jump = offset - offsetMicros;
        if (jump > lockWaitMicros / 2 + slewAllowedMicros) {
            // a claim written before the step carries at most the old frame's time now: the wall less the step, plus
            // the slew the jump may hide, plus lockWait for a writer on another host whose clock is that far ahead
            long mark = saturatedAdd(ClaimCodec.micros(wall), -jump);
            steps = steps.with(saturatedAdd(mark, slewMicros + lockWaitMicros), jump);
            String message = "The wall clock of locker {} moved forward by {} more than its monotonic clock: claims "
                    + "written before that are judged that much earlier when first seen";
            Duration step = Duration.ofNanos(Math.min(jump, Long.MAX_VALUE / 1_000) * 1_000);
            if (jump >= lockWaitMicros) {
                log.warn(message, config.rid(), step);
            } else {
                log.debug(message, config.rid(), step);
            }
            offsetMicros = offset; // claims written from now on are in the new frame
        } else if (jump > 0) {
            offsetMicros = saturatedAdd(offsetMicros, Math.min(jump, slewAllowedMicros));
        } else if (tight) {
            offsetMicros = offset; // a step back (or a slew): later claims are stamped in the lower frame
        } else {
            // a paused reading looks low: the baseline only falls at the slew rate, so a clock slewed back while idle
            // does not hide a later step
            offsetMicros = Math.max(offset, saturatedAdd(offsetMicros, -slewMicros));
        }
        lastNanos = nanos;
        return new JudgingTime(nanosBefore, wall, nanos, steps);
    }

    private static long saturatedAdd(long a, long b) {
        long sum = a + b;
        if (((a ^ sum) & (b ^ sum)) < 0) {
            return a < 0 ? Long.MIN_VALUE : Long.MAX_VALUE;
        }
        return sum;
    }

    /**
     * A wall reading between two monotonic readings, with the forward steps seen up to them.
     */
    record JudgingTime(long nanosBefore, Instant wall, long nanos, Steps steps) {

        /** A wall reading and the monotonic reading right after it. */
        JudgingTime(Instant wall, long nanos, Steps steps) {
            this(nanos, wall, nanos, steps);
        }

        /**
         * This judging, taken before a read, with {@code after} taken after it: the earlier of this wall reading and
         * the same instant on the wall clock as {@code after} reads it (lower if the clock stepped back meanwhile), and
         * the steps seen up to {@code after}. The instant stays this one's.
         */
        JudgingTime andAfter(JudgingTime after) {
            Instant back = after.wall.minusNanos(Math.max(0, after.nanos - nanosBefore));
            return new JudgingTime(nanosBefore, back.isBefore(wall) ? back : wall, nanos, after.steps);
        }

        /**
         * The wall time a claim written at {@code writtenAt} is judged at, on its first sight: the wall less the steps
         * since the claim was written. Not raised to the claim's own time when that is ahead: a renewal keeps the
         * column's first time, so after a step back the expiry may be stamped on a lower clock than the column.
         */
        Instant forClaimWrittenAt(Instant writtenAt) {
            long micros = steps.after(ClaimCodec.micros(writtenAt));
            return micros == 0 ? wall : wall.minusNanos(Math.min(micros, Long.MAX_VALUE / 1_000) * 1_000);
        }
    }

    /**
     * Forward steps, oldest first: each with its mark (the latest wall time, in micros, that a claim written before it
     * can carry) and its size. At most {@link #MOST} are kept (a step is at least half a lockWait, so that is more
     * than 500 lockWaits of steps); beyond that the two oldest merge at the later mark, which only judges the claims
     * written between them later.
     */
    static final class Steps {
        static final Steps NONE = new Steps(new long[0], new long[0]);
        static final int MOST = 1_024;

        private final long[] marks;
        private final long[] sizes;

        private Steps(long[] marks, long[] sizes) {
            this.marks = marks;
            this.sizes = sizes;
        }

        Steps with(long mark, long size) {
            int n = marks.length;
            long[] m = java.util.Arrays.copyOf(marks, n + 1);
            long[] z = java.util.Arrays.copyOf(sizes, n + 1);
            // marks rise with the wall clock; one lower than the last (a step back came between) is kept at the last
            m[n] = n == 0 ? mark : Math.max(mark, m[n - 1]);
            z[n] = size;
            if (m.length > MOST) {
                long[] mm = new long[MOST];
                long[] zz = new long[MOST];
                mm[0] = m[1];
                zz[0] = saturatedAdd(z[0], z[1]);
                System.arraycopy(m, 2, mm, 1, MOST - 1);
                System.arraycopy(z, 2, zz, 1, MOST - 1);
                m = mm;
                z = zz;
            }
            return new Steps(m, z);
        }

        /** The steps a claim written at {@code writtenMicros} saw, added up: those whose mark is at or after it. */
        long after(long writtenMicros) {
            long sum = 0;
            for (int i = marks.length - 1; i >= 0 && marks[i] >= writtenMicros; i--) {
                sum = saturatedAdd(sum, sizes[i]);
            }
            return sum;
        }
    }
}
