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
    /**
     * How close the two monotonic readings around a wall reading must be for the guard to learn from it: a quarter of
     * lockWait. Within that, a step it misses or counts too large costs at most that much of the holder's margin.
     */
    private final long exactNanos;
    /**
     * The wall-minus-monotonic offset of the frame the claims written now are stamped in: it follows a reading down,
     * and rises only at the slew rate or when a step is recorded.
     */
    private long offsetMicros;
    /**
     * The frames the clock left by a step back, oldest first: their offset, and the most it can be. Claims stamped in
     * them may still be read; a later forward step is taken off each by what it moved the clock above that frame, up
     * to the frame's time at that step. A frame counts as open until then, since the clock may have gone back to it
     * with no reading to see it. At most {@link #KEPT}; the two oldest merge into the lower offset and the higher top,
     * which only takes more off their claims.
     */
    private final long[] frameOffset = new long[KEPT];
    /**
     * The most the current frame's offset can be, where a paused reading set the baseline below it (else the least
     * long): a frame's time is counted from it, so that no claim written late in the frame is past its mark.
     */
    private long topMicros = Long.MIN_VALUE;
    private final long[] frameTop = new long[KEPT];
    private int frames;
    /** The latest monotonic reading after the readings the guard learnt from, or a paused one after them. */
    private long lastAfter;
    /** The forward steps seen: replaced, never changed, so a judging keeps the record it was taken with. */
    private Steps steps = Steps.NONE;
    /**
     * The state after each of the last {@link #KEPT} readings the guard learnt from: a reading that enters late is
     * judged against the state it would have met, had it entered in turn, so no step it does not contain is taken
     * off it, nor is one it does contain missed (it shows as what the reading could mean above that baseline).
     */
    private static final int KEPT = 16;
    private final long[] keptAfter = new long[KEPT];
    private final long[] keptOffset = new long[KEPT];
    /** The lowest baseline held since each kept state: a late reading may stand for any time from it to now. */
    private final long[] keptLowest = new long[KEPT];
    private final Steps[] keptSteps = new Steps[KEPT];
    /** The next slot of the kept states, and how many are kept. */
    private int next;
    private int kept;

    WallStepGuard(LockerConfig config) {
        this.config = config;
        this.lockWaitMicros = LockerEngine.saturatedNanos(config.lockWait()) / 1_000;
        this.exactNanos = lockWaitMicros * 1_000 / 4;
        TimeSource time = config.timeSource();
        this.originNanos = time.nanoTime();
        this.lastAfter = originNanos;
        // a baseline from the locker's start: the best of three readings, as one may be paused between its clocks
        long best = Long.MIN_VALUE;
        for (int i = 0; i < 3; i++) {
            long wallMicros = ClaimCodec.micros(time.now()); // the wall clock first, always: a pause then looks early
            best = Math.max(best, wallMicros - (time.nanoTime() - originNanos) / 1_000);
        }
        this.offsetMicros = best;
        keep();
    }

    private void keep() {
        keptAfter[next] = lastAfter;
        keptOffset[next] = offsetMicros;
        keptLowest[next] = offsetMicros;
        keptSteps[next] = steps;
        next = (next + 1) % KEPT;
        kept = Math.min(kept + 1, KEPT);
    }

    /**
     * The time claims are judged at, from a wall reading taken between two monotonic readings.
     *
     * <p>The guard learns only from a reading whose monotonic readings are close ({@link #exactNanos}) and which is
     * surely later than every reading it learnt from (its first monotonic reading after their last ones). Any other
     * reading (paused, or overlapping or older than a reading that entered before it) may only lower the baseline, to
     * the least offset it could show, when it proves a step back from the baseline of its own time (the state kept
     * after the latest reading surely older than it); nothing else, since it could stand for a time before a step
     * the guard already saw. Such a judging allows, for itself only, for the most its reading could
     * mean: a forward step of all the offset it could show above the baseline it would have met.
     */
    synchronized JudgingTime judgingTime(long nanosBefore, Instant wall, long nanosAfter) {
        long width = nanosAfter - nanosBefore;
        long wallMicros = ClaimCodec.micros(wall);
        // the offset at the wall reading lies between these two: the monotonic clock read it no sooner, no later
        long lowest = wallMicros - (nanosAfter - originNanos) / 1_000;
        long highest = wallMicros - (nanosBefore - originNanos) / 1_000;
        long slewMicros = Math.max(0, nanosAfter - lastAfter) / 1_000 / 1_000; // 1000 ppm: NTP slews at most 500
        // never more per interval than every holder keeps back (1% of a validity, at least half a lockWait): an idle
        // locker must not take a step for slewing
        long threshold = lockWaitMicros / 2 + Math.min(slewMicros, lockWaitMicros / 200);
        boolean exact = width >= 0 && width <= exactNanos;
        boolean later = nanosBefore - lastAfter >= 0;
        if (!exact || !later) {
            // judged against the latest state surely older than this reading (the current one if none is kept)
            long offset = offsetMicros;
            Steps known = steps;
            boolean older = later;
            // the lowest baseline held since the state it is judged against: a late reading allows for the way up
            long since = offsetMicros;
            if (!later) {
                for (int n = 0; n < kept; n++) {
                    int i = Math.floorMod(next - 1 - n, KEPT);
                    since = Math.min(since, keptLowest[i]); // (with no state surely older: all of them)
                    if (nanosBefore - keptAfter[i] >= 0) {
                        offset = keptOffset[i];
                        known = keptSteps[i];
                        since = keptLowest[i];
                        older = true;
                        break;
                    }
                }
            }
            if (older && highest < offset - threshold && lowest < offsetMicros) {
                // a paused or late reading proves a step back from the baseline of its time: the baseline follows it
                // down to the least it could show, so that no step forward after it is measured short. A late one
                // may have seen a frame the clock has left again: the next reading then takes the way back up for a
                // step, which costs liveness only
                leaveFrame(offsetMicros - lowest > threshold);
                lowerBaseline(lowest);
                topMicros = highest;
            }
            if (later) {
                // no reading taken before this one ends may be learnt from after it: it could undo what this one saw
                lastAfter = nanosAfter;
            }
            // judged against the baseline of its time, and against any lower one held since
            long pending = highest - Math.min(since, offsetMicros);
            return new JudgingTime(nanosBefore, wall, nanosAfter, known, pending > threshold ? pending : 0, null);
        }
        long jump = highest - offsetMicros;
        if (jump > threshold) {
            stepForward(highest, lowest, nanosAfter, slewMicros);
            String message = "The wall clock of locker {} moved forward by {} more than its monotonic clock: claims "
                    + "written before that are judged that much earlier when first seen";
            Duration step = Duration.ofNanos(Math.min(jump, Long.MAX_VALUE / 1_000) * 1_000);
            if (jump >= lockWaitMicros) {
                log.warn(message, config.rid(), step);
            } else {
                log.debug(message, config.rid(), step);
            }
            offsetMicros = lowest; // claims written from now on are in the new frame
            topMicros = Long.MIN_VALUE;
        } else if (lowest < offsetMicros) {
            leaveFrame(offsetMicros - lowest > threshold);
            lowerBaseline(lowest); // a step back (or a slew): later claims are stamped in the lower frame
            topMicros = Math.min(topMicros, highest);
        } else {
            offsetMicros = saturatedAdd(offsetMicros, Math.min(lowest - offsetMicros, slewMicros));
        }
        lastAfter = nanosAfter;
        keep();
        return new JudgingTime(nanosBefore, wall, nanosAfter, steps, 0, null);
    }

    /** Lowers the baseline to {@code to}, and the lowest held since each kept state with it. */
    private void lowerBaseline(long to) {
        offsetMicros = to;
        for (int i = 0; i < kept; i++) {
            keptLowest[i] = Math.min(keptLowest[i], to);
        }
    }

    /** Keeps the frame the baseline leaves, when it falls by a step: its claims may still be read. */
    private void leaveFrame(boolean step) {
        if (!step) {
            return;
        }
        if (frames == KEPT) {
            frameOffset[1] = Math.min(frameOffset[0], frameOffset[1]);
            frameTop[1] = Math.max(frameTop[0], frameTop[1]);
            System.arraycopy(frameOffset, 1, frameOffset, 0, KEPT - 1);
            System.arraycopy(frameTop, 1, frameTop, 0, KEPT - 1);
            frames--;
        }
        frameOffset[frames] = offsetMicros;
        frameTop[frames] = Math.max(offsetMicros, topMicros);
        frames++;
        topMicros = Long.MIN_VALUE;
    }

    /**
     * Records a forward step to a frame of offset {@code highest} at most: a claim stamped in the frame the baseline
     * stands for, or in a frame left earlier by a step back, is judged earlier by what the clock moved above that frame.
     * Each frame's claims carry at most its time at this step; a claim that could be of several frames gets the most.
     */
    private void stepForward(long highest, long lowest, long nanosAfter, long slewMicros) {
        int n = frames + 1;
        long[] marks = new long[n];
        long[] needs = new long[n];
        for (int i = 0; i < n; i++) {
            long offset = i < frames ? frameOffset[i] : offsetMicros;
            // the clock may have gone back to a frame it left, with no reading between: each is open until now
            long last = saturatedAdd(i < frames ? frameTop[i] : Math.max(offsetMicros, topMicros),
                    (nanosAfter - originNanos) / 1_000);
            // the frame's time now, plus the slew a jump may hide, plus lockWait for a writer on another host whose
            // clock is that far ahead
            marks[i] = saturatedAdd(last, slewMicros + lockWaitMicros);
            needs[i] = Math.max(0, highest - offset);
        }
        Integer[] order = new Integer[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        java.util.Arrays.sort(order, (a, b) -> Long.compare(marks[a], marks[b]));
        // a claim written at w gets the most any frame ending at or after w needs: suffix maxima, kept as differences
        long[] most = new long[n + 1];
        for (int j = n - 1; j >= 0; j--) {
            most[j] = Math.max(most[j + 1], needs[order[j]]);
        }
        for (int j = 0; j < n; j++) {
            long size = most[j] - most[j + 1];
            if (size > 0) {
                steps = steps.with(marks[order[j]], size);
            }
        }
        // frames below the new one are allowed for up to it: later steps count from the new frame for them
        int left = 0;
        for (int i = 0; i < frames; i++) {
            if (frameOffset[i] >= lowest) {
                frameOffset[left] = frameOffset[i];
                frameTop[left] = frameTop[i];
                left++;
            }
        }
        frames = left;
    }

    private static long saturatedAdd(long a, long b) {
        long sum = a + b;
        if (((a ^ sum) & (b ^ sum)) < 0) {
            return a < 0 ? Long.MIN_VALUE : Long.MAX_VALUE;
        }
        return sum;
    }

    /**
     * A wall reading between two monotonic readings, with the forward steps seen up to them, and a forward step this
     * judging alone allows for ({@code pendingMicros}, for every claim). {@code other}, when not null, is a judging of
     * the same instant on a later reading: a claim is judged at the earlier of the two.
     */
    record JudgingTime(long nanosBefore, Instant wall, long nanos, Steps steps, long pendingMicros, JudgingTime other) {

        /** A judging with nothing pending, from a wall reading and the monotonic reading right after it. */
        JudgingTime(Instant wall, long nanos, Steps steps) {
            this(nanos, wall, nanos, steps, 0, null);
        }

        /**
         * This judging, taken before a read, with {@code after} taken after it: a claim is judged at the earlier of
         * this judging and the same instant on the clock as {@code after} reads it (earlier if the clock stepped back
         * meanwhile), each less the steps its own reading knew of. The instant stays this one's.
         */
        JudgingTime andAfter(JudgingTime after) {
            Instant back = after.wall.minusNanos(Math.max(0, after.nanos - nanosBefore));
            return new JudgingTime(nanosBefore, wall, nanos, steps, pendingMicros,
                    new JudgingTime(after.nanosBefore, back, after.nanos, after.steps, after.pendingMicros, null));
        }

        /** The wall time a claim written at {@code writtenAt} is judged at, on its first sight. */
        Instant forClaimWrittenAt(Instant writtenAt) {
            Instant own = own(writtenAt);
            if (other == null) {
                return own;
            }
            Instant later = other.own(writtenAt);
            return later.isBefore(own) ? later : own;
        }

        /**
         * The wall less the steps seen since the claim was written and what is pending. Not raised to the claim's own
         * time when that is ahead: {@link ClaimWatch} does, for a claim whose value says when its expiry was counted.
         */
        private Instant own(Instant writtenAt) {
            long micros = saturatedAdd(steps.after(ClaimCodec.micros(writtenAt)), pendingMicros);
            return micros == 0 ? wall : wall.minusNanos(Math.min(micros, Long.MAX_VALUE / 1_000) * 1_000);
        }
    }

    /**
     * Forward steps, oldest first: each with its mark (the latest wall time, in micros, that a claim written before it
     * can carry; one written up to the step's size later may have been written during it) and its size. Marks are
     * not in order: after a step back, a step's mark is below the last one's. At most {@link #MOST} are kept (a step
     * is at least half a lockWait, so that is more than 500 lockWaits of steps); beyond that the two oldest merge at
     * the later mark, which only judges the claims written between them later.
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
            // kept as computed: one lower than the last (a step back came between) stands for the lower frame only
            m[n] = mark;
            z[n] = size;
            if (m.length > MOST) {
                long[] mm = new long[MOST];
                long[] zz = new long[MOST];
                mm[0] = Math.max(m[0], m[1]);
                zz[0] = saturatedAdd(z[0], z[1]);
                System.arraycopy(m, 2, mm, 1, MOST - 1);
                System.arraycopy(z, 2, zz, 1, MOST - 1);
                m = mm;
                z = zz;
            }
            return new Steps(m, z);
        }

        /**
         * What the steps took off a claim written at {@code writtenMicros}, added up: all of each step whose mark is at
         * or after it, and of each it may have been written during, what that step moved the clock above its time.
         * Two steps the locker read as one (no reading between them) leave a claim written between them above the
         * first's mark, yet at most the second step above it.
         */
        long after(long writtenMicros) {
            long sum = 0;
            for (int i = 0; i < marks.length; i++) {
                long reach = saturatedAdd(marks[i], sizes[i]); // a claim written at or past it came after the whole step
                long above = reach - writtenMicros;
                if (reach > writtenMicros) {
                    sum = saturatedAdd(sum, above < 0 ? sizes[i] : Math.min(sizes[i], above)); // (negative: overflowed)
                }
            }
            return sum;
        }
    }
}
