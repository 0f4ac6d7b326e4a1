package dev.locker.engine;

import dev.locker.api.LockerConfig;
import dev.locker.api.TimeSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.time.Instant;

/**
 * Notices forward steps of this host's wall clock, measured against its monotonic clock between two readings of
 * this locker, and for one expiry after a step judges other claims' liveness by the wall clock less the step. A
 * step that every locker of the host sees (NTP, a resumed VM) would otherwise make every live claim look dead at
 * once while its holder's monotonic deadline has not moved. It cannot see a step that happened before this
 * locker was built; backward steps need no guard (they only make claims look alive longer, and the confirm
 * step refuses a claimant that a backward step made look senior).
 */
final class WallStepGuard {

    /** Logged under the locker's name: the guard is its part. */
    private static final Logger log = LoggerFactory.getLogger(ConsistentKeyLocker.class);

    private final LockerConfig config;
    private final TimeSource time;
    /** The highest wall-minus-monotonic offset seen, let fall at the slew rate; a paused reading only lowers one. */
    private long offsetMicros;
    private long lastNanos;
    private long stepMicros;
    private long stepSeenAtNanos;

    WallStepGuard(LockerConfig config) {
        this.config = config;
        this.time = config.timeSource();
        // a baseline from the locker's start: the best of three readings, as one may be paused between its clocks
        long best = Long.MIN_VALUE;
        for (int i = 0; i < 3; i++) {
            long wallMicros = ClaimCodec.micros(time.now()); // the wall clock first, always: a pause then looks early
            long nanos = time.nanoTime();
            best = Math.max(best, wallMicros - nanos / 1_000);
            lastNanos = nanos;
        }
        this.offsetMicros = best;
    }

    synchronized Instant judgingTime(Instant wall, long nanos) {
        long elapsedMicros = Math.max(0, nanos - lastNanos) / 1_000;
        // a thread paused between reading the wall clock and the monotonic clock makes one offset look low, never
        // high: the baseline is the highest offset seen, so such a reading is not taken for a step at the next one
        long offset = ClaimCodec.micros(wall) - nanos / 1_000;
        long slewMicros = elapsedMicros / 1_000; // 1000 ppm: NTP slews at most 500
        // measured against the baseline before this interval's slew: a step is never judged smaller than it was
        long jump = offset - offsetMicros;
        // half a lockWait, plus the slew since the last reading, but never more than the slack a holder's deadline
        // keeps (1% of expiry - lockWait): an idle locker must not grow an allowance that hides a real step; more
        // drift only costs liveness
        long slackMicros = LockerEngine.saturatedNanos(config.expiry().minus(config.lockWait())) / 100_000;
        long allowedMicros = LockerEngine.saturatedNanos(config.lockWait()) / 2_000 + slewMicros;
        if (jump > Math.min(allowedMicros, slackMicros)) {
            stepMicros = (nanos - stepSeenAtNanos < LockerEngine.saturatedNanos(config.expiry()) ? stepMicros : 0) + jump;
            stepSeenAtNanos = nanos;
            log.warn("The wall clock of locker {} stepped forward by {}: other claims' expiry is judged {} "
                    + "earlier for one expiry", config.rid(), Duration.ofNanos(jump * 1_000),
                    Duration.ofNanos(stepMicros * 1_000));
        }
        // the baseline falls at the slew rate, uncapped: a clock slewed back while idle must not hide a later step
        offsetMicros = Math.max(offset, offsetMicros - slewMicros);
        lastNanos = Math.max(lastNanos, nanos);
        if (stepMicros != 0 && nanos - stepSeenAtNanos < LockerEngine.saturatedNanos(config.expiry())) {
            return wall.minusNanos(stepMicros * 1_000);
        }
        stepMicros = 0;
        return wall;
    }
}
