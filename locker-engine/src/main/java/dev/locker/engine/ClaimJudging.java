package dev.locker.engine;

import dev.locker.api.LockerConfig;
import dev.locker.api.TimeSource;

import java.util.function.Supplier;

/**
 * How a locker judges other processes' claims in the rows it reads: its clock readings around each read, the forward
 * steps its wall clock took ({@link WallStepGuard}), and the claims it watches on the monotonic clock
 * ({@link ClaimWatch}).
 */
final class ClaimJudging {

    private final TimeSource time;
    private final WallStepGuard guard;
    private final ClaimWatch watch = new ClaimWatch();

    ClaimJudging(LockerConfig config) {
        this.time = config.timeSource();
        this.guard = new WallStepGuard(config);
    }

    /** A row as read, and the judge of the claims in it. */
    record Judged(LockRow row, ClaimWatch.Judge judge) {
    }

    /**
     * Reads a row, and the judge of its claims from clock readings taken before and after the read. Claims are judged
     * at the earlier of the time before the read and, should the clock have stepped back during it, that same instant
     * on the clock as it reads after the read: a claim dead at an earlier instant was dead then, and its holder never
     * renews past its own deadline, so neither a pause after the read nor a step back during it (a claim renewed on
     * the clock set back) makes a live claim look dead.
     */
    Judged read(Supplier<LockRow> read) {
        long before = time.nanoTime();
        WallStepGuard.JudgingTime first = guard.judgingTime(before, time.now(), time.nanoTime());
        LockRow row = read.get();
        before = time.nanoTime();
        WallStepGuard.JudgingTime second = guard.judgingTime(before, time.now(), time.nanoTime());
        return new Judged(row, watch.judge(first.andAfter(second)));
    }
}
