package dev.locker.faults;

import java.time.Duration;
import java.util.Locale;
import java.util.Random;

/**
 * How hard to torture: the short profile (inside the README's test command: every scenario once per backend, fixed
 * fault timing) or the long one ({@code -Dfaults.profile=long}: several runs per scenario, more contention cycles,
 * fault timing drawn from a seeded random, the seed printed and accepted as {@code -Dfaults.seed=N} to replay).
 *
 * @param name              {@code short} or {@code long}
 * @param seed              the seed of every random choice of the run
 * @param expiry            the claims' expiry
 * @param slack             the stated slack of the liveness bound (expiry + lock wait + slack)
 * @param runsPerScenario   runs of each scenario on each backend
 * @param contentionCycles  cycles per worker in {@link Scenario#CONTENTION}
 * @param randomTiming      whether the fault's moment is drawn at random (else: at the first chance after warm-up)
 */
public record Profile(String name, long seed, Duration expiry, Duration slack, int runsPerScenario, int contentionCycles,
                      boolean randomTiming) {

    /**
     * The profile named by the system properties {@code faults.profile} ({@code short} by default) and
     * {@code faults.seed} (random by default).
     *
     * @return the profile
     */
    public static Profile fromSystemProperties() {
        String name = System.getProperty("faults.profile", "short").trim().toLowerCase(Locale.ROOT);
        String seedText = System.getProperty("faults.seed", "").trim();
        long seed = seedText.isEmpty() ? new Random().nextLong() & Long.MAX_VALUE : Long.parseLong(seedText);
        return switch (name) {
            case "", "short" -> new Profile("short", seed, Duration.ofSeconds(1), Duration.ofSeconds(3), 1, 200, false);
            case "long" -> new Profile("long", seed, Duration.ofSeconds(1), Duration.ofSeconds(3),
                    Integer.getInteger("faults.runs", 3), Integer.getInteger("faults.cycles", 1000), true);
            default -> throw new IllegalArgumentException("faults.profile must be short or long, not '" + name + "'");
        };
    }

    /**
     * The random source of one run, derived from the seed so that a run replays alone.
     *
     * @param backend  the backend's name
     * @param scenario the scenario
     * @param run      the run's number
     * @return the random source
     */
    public Random random(String backend, Scenario scenario, int run) {
        return new Random(seed * 31 + (backend + "/" + scenario + "/" + run).hashCode());
    }
}
