package dev.locker.faults;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.function.Function;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Every scenario on every backend where it applies, as worker JVMs under real faults, judged by the checkers. The
 * short profile runs inside the README's test command; {@code -Dfaults.profile=long} (see docs/reliability.md) runs
 * more. {@code -Dfaults.backends=redis,mongo} and {@code -Dfaults.scenarios=KILL_HOLDING,...} narrow a run; the table
 * is written to {@code target/faults/report.md}.
 */
class TortureTest {

    private static final Profile PROFILE = Profile.fromSystemProperties();
    private static final Path ROOT = Path.of(System.getProperty("faults.dir", "target/faults"));
    private static final Report REPORT = new Report(PROFILE);
    private static final List<Backend> OPEN = new ArrayList<>();

    @TestFactory
    List<DynamicTest> torture() throws IOException {
        if (Files.isDirectory(ROOT)) { // the last run's timelines and logs
            try (var old = Files.walk(ROOT)) {
                old.sorted(java.util.Comparator.reverseOrder()).filter(p -> !p.equals(ROOT)
                        && !p.getFileName().toString().equals("harness.log")).forEach(p -> p.toFile().delete());
            }
        }
        System.out.println("[locker-faults] profile " + PROFILE.name() + ", seed " + PROFILE.seed()
                + " (replay: -Dfaults.profile=" + PROFILE.name() + " -Dfaults.seed=" + PROFILE.seed() + ")");
        List<Function<Path, Backend>> backends = List.of(RedisBackend::new, MongoBackend::new, dir -> new HBaseBackend(),
                FileBackend::new);
        Set<String> onlyBackends = filter("faults.backends");
        Set<String> onlyScenarios = filter("faults.scenarios");
        List<DynamicTest> tests = new ArrayList<>();
        for (Function<Path, Backend> make : backends) {
            Backend backend = make.apply(ROOT.resolve("servers"));
            if (!onlyBackends.isEmpty() && !onlyBackends.contains(backend.name())) {
                continue;
            }
            OPEN.add(backend);
            for (Scenario s : Scenario.values()) {
                if (!onlyScenarios.isEmpty() && !onlyScenarios.contains(s.name().toLowerCase(Locale.ROOT))) {
                    continue;
                }
                String why = backend.inapplicable(s);
                if (why == null && s.longOnly() && PROFILE.name().equals("short") && onlyScenarios.isEmpty()) {
                    why = "long profile only (-Dfaults.profile=long), or named in -Dfaults.scenarios";
                }
                if (why == null) {
                    why = TortureRun.unavailable(s);
                }
                if (why != null) {
                    REPORT.skip(backend.name(), s, why);
                    continue;
                }
                for (int run = 0; run < PROFILE.runsPerScenario(); run++) {
                    int n = run;
                    String why2 = null;
                    tests.add(DynamicTest.dynamicTest(s.name().toLowerCase(Locale.ROOT) + " on " + backend.name()
                            + (PROFILE.runsPerScenario() > 1 ? " #" + n : ""), () -> {
                        assumeTrue(why2 == null);
                        TortureRun.Result r = new TortureRun(backend, s, PROFILE, n, ROOT).execute();
                        REPORT.add(r);
                        System.out.println("[locker-faults] " + s + " on " + backend.name() + " #" + n + ": "
                                + summary(r));
                        assertNull(Report.failure(r), () -> String.join("\n", r.verdict().findings()));
                    }));
                }
            }
        }
        return tests;
    }

    private static String summary(TortureRun.Result r) {
        Verdict v = r.verdict();
        return v.grants() + " grants, " + v.overlaps() + " overlaps, " + v.staleAccepted() + " stale accepted, "
                + v.staleRefused() + " stale refused, " + v.clashes() + " clashes, takeover "
                + (v.maxTakeoverNanos() < 0 ? "n/a" : v.maxTakeoverNanos() / 1_000_000 + " ms") + ", losses "
                + v.losses() + ", leftovers " + v.leftovers() + ", in " + r.duration().toMillis() + " ms"
                + (Report.failure(r) == null ? "" : " -- " + Report.failure(r));
    }

    private static Set<String> filter(String property) {
        String v = System.getProperty(property, "").trim();
        if (v.isEmpty()) {
            return Set.of();
        }
        return Arrays.stream(v.split(",")).map(x -> x.trim().toLowerCase(Locale.ROOT)).collect(Collectors.toSet());
    }

    @AfterAll
    static void report() throws IOException {
        OPEN.forEach(Backend::close);
        String table = REPORT.markdown();
        Files.createDirectories(ROOT);
        Files.writeString(ROOT.resolve("report.md"), table);
        System.out.println("[locker-faults] report (" + ROOT.resolve("report.md") + "):\n" + table);
    }
}
