package dev.locker.engine;

import dev.locker.api.LockerConfig;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.fail;

/** Seeded runs of clock steps, claims and readings entering in any order: no claim looks older than its holder's age. */
class ReadingsInAnyOrderAroundClockStepsTest {

    /** What every holder keeps back of a 30 s term: 1% of (expiry - lockWait), rounded up. */
    private static final long MARGIN_MILLIS = 399;
    private static final long TERM_MILLIS = 29_601;

    private record Reading(int id, long before, Instant wall, long at, long after) {
    }

    private record Claim(long nanos, Instant wall) {
    }

    /**
     * Each run steps the wall clock (forward or back; the share forward and the sizes vary by profile), and after every
     * step one reading, exact or paused, sees the new frame. Readings are exact or paused for up to 2 s, and some
     * steps fall inside paused ones. They enter the guard in turn or late. Each judging sees every claim written
     * before it at most its holder's monotonic age old, plus the margin the holder keeps back. A reading that enters
     * while one taken before it has not is not checked: only that one may know of a step back since undone.
     */
    @ParameterizedTest(name = "{0} runs, {1} events, {2}% of steps forward, small steps {3}")
    @CsvSource({"400, 60, 50, false", "60, 500, 25, false", "400, 150, 50, true"})
    void noClaimIsJudgedOlderThanItsHolderKnowsItWhateverOrderTheReadingsEnterIn(int runs, int events, int upPercent,
            boolean small) {
        for (long seed = 0; seed < runs; seed++) {
            String problem = run(seed, events, upPercent, small);
            if (problem != null) {
                fail("run " + seed + ": " + problem);
            }
        }
    }

    private static String run(long seed, int maxEvents, int upPercent, boolean small) {
        Random rnd = new Random(seed);
        VirtualClock clock = new VirtualClock();
        WallStepGuard guard = new WallStepGuard(LockerConfig.builder().rid("g").expiry(Duration.ofSeconds(30))
                .lockWait(Duration.ofMillis(100)).timeSource(clock).build());
        List<Reading> pending = new ArrayList<>();
        List<Claim> claims = new ArrayList<>();
        int ids = 0;
        int events = 10 + rnd.nextInt(maxEvents);
        for (int e = 0; e < events; e++) {
            int kind = rnd.nextInt(10);
            if (kind < 2) {
                clock.advance(Duration.ofMillis(200 + rnd.nextInt(3000)));
            } else if (kind == 2) {
                clock.stepWallClock(Duration.ofMillis(step(rnd, upPercent, small)));
                clock.advance(Duration.ofMillis(50));
                pending.add(rnd.nextBoolean() ? exact(clock, ids++, rnd) : paused(clock, ids++, rnd, 0));
            } else if (kind <= 4) {
                pending.add(exact(clock, ids++, rnd));
            } else if (kind == 5) {
                long step = rnd.nextInt(3) == 0 ? step(rnd, upPercent, small) : 0;
                pending.add(paused(clock, ids++, rnd, step));
                if (step != 0) {
                    clock.advance(Duration.ofMillis(50));
                    pending.add(exact(clock, ids++, rnd));
                }
            } else if (kind <= 7) {
                if (!pending.isEmpty()) {
                    Reading x = pending.remove(rnd.nextInt(3) == 0 ? rnd.nextInt(pending.size()) : 0);
                    String problem = judge(guard, x, pending, claims);
                    if (problem != null) {
                        return problem;
                    }
                }
            } else {
                claims.add(new Claim(clock.nanoTime(), clock.now()));
            }
        }
        return null;
    }

    private static String judge(WallStepGuard guard, Reading x, List<Reading> pending, List<Claim> claims) {
        WallStepGuard.JudgingTime at = guard.judgingTime(x.before(), x.wall(), x.after());
        for (Reading p : pending) {
            if (p.at() - x.before() < 0) {
                return null; // an earlier reading still to enter may be the only one that saw a step back
            }
        }
        for (Claim c : claims) {
            if (c.nanos() - x.before() >= 0) {
                continue;
            }
            long judged = Duration.between(c.wall(), at.forClaimWrittenAt(c.wall())).toMillis();
            long real = (x.at() - c.nanos()) / 1_000_000;
            if (real < TERM_MILLIS && judged > real + MARGIN_MILLIS) {
                return "reading " + x + " judged the claim " + c + " " + judged + " ms old, written " + real
                        + " ms before it";
            }
        }
        return null;
    }

    private static long step(Random rnd, int upPercent, boolean small) {
        long size = small ? 20 + rnd.nextInt(rnd.nextBoolean() ? 300 : 5_000) : 1_000L * (5 + rnd.nextInt(45));
        return rnd.nextInt(100) < upPercent ? size : -size;
    }

    /** A reading whose thread is paused up to 1 s on each side of its wall reading; {@code step} falls in one pause. */
    private static Reading paused(VirtualClock clock, int id, Random rnd, long step) {
        long before = clock.nanoTime();
        clock.advance(Duration.ofMillis(30 + rnd.nextInt(1000)));
        boolean first = rnd.nextBoolean();
        if (step != 0 && first) {
            clock.stepWallClock(Duration.ofMillis(step));
        }
        Instant wall = clock.now();
        long at = clock.nanoTime();
        clock.advance(Duration.ofMillis(30 + rnd.nextInt(1000)));
        if (step != 0 && !first) {
            clock.stepWallClock(Duration.ofMillis(step));
        }
        return new Reading(id, before, wall, at, clock.nanoTime());
    }

    /** A reading whose two monotonic readings are within 20 ms, inside a quarter of lockWait. */
    private static Reading exact(VirtualClock clock, int id, Random rnd) {
        long before = clock.nanoTime();
        clock.advance(Duration.ofMillis(rnd.nextInt(10)));
        Instant wall = clock.now();
        long at = clock.nanoTime();
        clock.advance(Duration.ofMillis(rnd.nextInt(10)));
        return new Reading(id, before, wall, at, clock.nanoTime());
    }
}
