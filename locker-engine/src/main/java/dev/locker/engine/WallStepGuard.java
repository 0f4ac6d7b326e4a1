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
    private long lastWallMicros;
    private long lastNanos;
    private long stepMicros;
    private long stepSeenAtNanos;

    WallStepGuard(LockerConfig config) {
        this.config = config;
        this.time = config.timeSource();
        this.lastWallMicros = ClaimCodec.micros(time.now()); // a baseline from the locker's start
        this.lastNanos = time.nanoTime();
    }

    synchronized Instant judgingTime(Instant wall, long nanos) {
        long wallMicros = ClaimCodec.micros(wall);
        long elapsedMicros = (nanos - lastNanos) / 1_000;
        long jump = (wallMicros - lastWallMicros) - elapsedMicros;
        // half a lockWait, plus 1000 ppm of the time since the last reading for ordinary slewing (NTP slews at most
        // 500), but never more than the slack a holder's deadline keeps (1% of expiry - lockWait): an idle locker
        // must not grow an allowance that hides a real step; more drift only costs liveness
        long slackMicros = LockerEngine.saturatedNanos(config.expiry().minus(config.lockWait())) / 100_000;
        long allowedMicros = LockerEngine.saturatedNanos(config.lockWait()) / 2_000 + elapsedMicros / 1_000;
        if (jump > Math.min(allowedMicros, slackMicros)) {
            stepMicros = (nanos - stepSeenAtNanos < LockerEngine.saturatedNanos(config.expiry()) ? stepMicros : 0) + jump;
            stepSeenAtNanos = nanos;
            log.warn("The wall clock of locker {} stepped forward by {}: other claims' expiry is judged {} "
                    + "earlier for one expiry", config.rid(), Duration.ofNanos(jump * 1_000),
                    Duration.ofNanos(stepMicros * 1_000));
        }
        lastWallMicros = wallMicros;
        lastNanos = nanos;
        if (stepMicros != 0 && nanos - stepSeenAtNanos < LockerEngine.saturatedNanos(config.expiry())) {
            return wall.minusNanos(stepMicros * 1_000);
        }
        stepMicros = 0;
        return wall;
    }
}
