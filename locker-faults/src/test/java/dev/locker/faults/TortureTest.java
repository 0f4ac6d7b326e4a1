package dev.locker.faults;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.TestInstance;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * Every scenario on one backend where it applies, as worker JVMs under real faults, judged by the checkers.
 *
 * <p>There is one subclass per backend. The subclasses run at once (see junit-platform.properties), so one backend's
 * scenarios overlap another's. The scenarios of one backend run one by one, since they share its server. The short
 * profile runs inside the README's test command; {@code -Dfaults.profile=long} (see docs/reliability.md) runs more.
 * {@code -Dfaults.backends=redis,mongo} and {@code -Dfaults.scenarios=KILL_HOLDING,...} narrow a run. The table of
 * every backend is written to {@code target/faults/report.md}.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class TortureTest {

    private Backend backend;

    /**
     * The backend this class tortures, not started yet.
     *
     * @param servers the directory for its servers' files
     * @return the backend
     */
    abstract Backend backend(Path servers);

    @TestFactory
    List<DynamicTest> torture() {
        Profile profile = TortureSession.PROFILE;
        Report report = TortureSession.REPORT;
        Backend candidate = backend(TortureSession.ROOT.resolve("servers"));
        Set<String> onlyBackends = filter("faults.backends");
        Set<String> onlyScenarios = filter("faults.scenarios");
        List<DynamicTest> tests = new ArrayList<>();
        if (!onlyBackends.isEmpty() && !onlyBackends.contains(candidate.name())) {
            return tests;
        }
        backend = candidate;
        for (Scenario s : Scenario.values()) {
            if (!onlyScenarios.isEmpty() && !onlyScenarios.contains(s.name().toLowerCase(Locale.ROOT))) {
                continue;
            }
            String why = backend.inapplicable(s);
            if (why == null && s.longOnly() && profile.name().equals("short") && onlyScenarios.isEmpty()) {
                why = "long profile only (-Dfaults.profile=long), or named in -Dfaults.scenarios";
            }
            if (why == null) {
                why = TortureRun.unavailable(s);
            }
            if (why != null) {
                report.skip(backend.name(), s, why);
                continue;
            }
            for (int run = 0; run < profile.runsPerScenario(); run++) {
                int n = run;
                tests.add(DynamicTest.dynamicTest(s.name().toLowerCase(Locale.ROOT) + " on " + backend.name()
                        + (profile.runsPerScenario() > 1 ? " #" + n : ""), () -> {
                    TortureRun.Result r = new TortureRun(backend, s, profile, n, TortureSession.ROOT).execute();
                    report.add(r);
                    System.out.println("[locker-faults] " + s + " on " + backend.name() + " #" + n + ": "
                            + summary(r));
                    assertNull(Report.failure(r), () -> String.join("\n", r.verdict().findings()));
                }));
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
    void closeBackendAndWriteReport() {
        if (backend != null) {
            WorkerPool.of(backend.name()).close();
            backend.close();
        }
        TortureSession.writeReport();
    }
}
