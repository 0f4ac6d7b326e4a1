package dev.locker.faults;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/** The scenario x backend table of a set of runs, in Markdown (as in {@code docs/reliability.md}). */
public final class Report {

    private static final List<String> BACKEND_ORDER = List.of("redis", "mongo", "hbase", "file");

    private final Profile profile;
    private final List<TortureRun.Result> results = new ArrayList<>();
    private final Map<String, String> skipped = new TreeMap<>();

    /**
     * An empty report.
     *
     * @param profile the profile the runs used
     */
    public Report(Profile profile) {
        this.profile = profile;
    }

    /**
     * Adds a run.
     *
     * @param r the run's result
     */
    public synchronized void add(TortureRun.Result r) {
        results.add(r);
    }

    /**
     * Records a scenario that does not apply to a backend, and why.
     *
     * @param backend  the backend's name
     * @param scenario the scenario
     * @param why      the reason
     */
    public synchronized void skip(String backend, Scenario scenario, String why) {
        skipped.put(scenario.name().toLowerCase(Locale.ROOT) + " on " + backend, why);
    }

    /**
     * The table: one row per scenario and backend, the runs of a row summed.
     *
     * @return Markdown
     */
    public synchronized String markdown() {
        StringBuilder sb = new StringBuilder();
        sb.append("Profile ").append(profile.name()).append(", seed ").append(profile.seed()).append(", expiry ")
                .append(profile.expiry().toMillis()).append(" ms, liveness bound expiry + ")
                .append(profile.slack().toMillis()).append(" ms slack.\n\n");
        sb.append("| scenario | backend | runs | cycles (grants) | overlaps within valid leases | stale writes accepted "
                + "| token clashes | stale writes refused | lost signals | takeover, max (x expiry) | claims left | promise | result |\n");
        sb.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        Map<String, List<TortureRun.Result>> rows = new LinkedHashMap<>();
        List<TortureRun.Result> ordered = new ArrayList<>(results);
        // the backends' runs overlap in time: the table orders them by backend, then scenario, then run
        ordered.sort(Comparator.comparingInt((TortureRun.Result r) -> backendRank(r.backend()))
                .thenComparing(TortureRun.Result::backend).thenComparing(TortureRun.Result::scenario)
                .thenComparingInt(TortureRun.Result::run));
        for (TortureRun.Result r : ordered) {
            rows.computeIfAbsent(r.scenario() + "\u0000" + r.backend(), k -> new ArrayList<>()).add(r);
        }
        for (List<TortureRun.Result> row : rows.values()) {
            TortureRun.Result first = row.get(0);
            int grants = 0;
            int overlaps = 0;
            int stale = 0;
            int clashes = 0;
            int refused = 0;
            int lost = 0;
            int left = 0;
            long maxTakeover = -1;
            boolean allInjected = true;
            for (TortureRun.Result r : row) {
                Verdict v = r.verdict();
                grants += v.grants();
                overlaps += v.overlaps();
                stale += v.staleAccepted();
                clashes += v.clashes();
                refused += v.staleRefused();
                lost += v.losses().values().stream().mapToInt(Integer::intValue).sum();
                left += Math.max(0, v.leftovers());
                maxTakeover = Math.max(maxTakeover, v.maxTakeoverNanos());
                allInjected &= r.faultInjected();
            }
            String takeover = maxTakeover < 0 ? "n/a" : String.format(Locale.ROOT, "%d ms (%.2fx)",
                    maxTakeover / 1_000_000, maxTakeover / (double) first.expiry().toNanos());
            String promise = first.control() ? "control"
                    : first.promisesSafety() ? "safe" : "not promised";
            String title = first.scenario().title() + (first.expiry().equals(profile.expiry()) ? ""
                    : " (expiry " + first.expiry().toMillis() + " ms)");
            sb.append("| ").append(title).append(" | ").append(first.backend()).append(" | ")
                    .append(row.size()).append(" | ").append(grants).append(" | ").append(overlaps).append(" | ")
                    .append(stale).append(" | ").append(clashes).append(" | ").append(refused).append(" | ")
                    .append(lost).append(" | ").append(takeover).append(" | ").append(left).append(" | ")
                    .append(promise).append(" | ").append(outcome(row, allInjected)).append(" |\n");
        }
        if (!skipped.isEmpty()) {
            sb.append("\nNot applicable:\n\n");
            skipped.forEach((k, v) -> sb.append("- ").append(k).append(": ").append(v).append('\n'));
        }
        return sb.toString();
    }

    private static int backendRank(String backend) {
        int i = BACKEND_ORDER.indexOf(backend);
        return i < 0 ? BACKEND_ORDER.size() : i;
    }

    private static String outcome(List<TortureRun.Result> row, boolean allInjected) {
        if (!allInjected) {
            return "FAULT NOT INJECTED";
        }
        TortureRun.Result first = row.get(0);
        boolean unsafe = row.stream().anyMatch(r -> r.verdict().unsafe());
        boolean stuck = row.stream().anyMatch(r -> r.verdict().stuck());
        if (first.control()) {
            return row.stream().allMatch(r -> r.verdict().unsafe()) ? "flagged (as it must be)" : "NOT FLAGGED";
        }
        if (unsafe) {
            return first.promisesSafety() ? "VIOLATION" : "violation (outside the promise)";
        }
        return stuck ? "LIVENESS" : "ok";
    }

    /**
     * Every run's verdict failing its expectation, with its findings (empty when all passed).
     *
     * @return a description of each failure
     */
    public synchronized List<String> failures() {
        List<String> out = new ArrayList<>();
        for (TortureRun.Result r : results) {
            String f = failure(r);
            if (f != null) {
                out.add(r.scenario() + " on " + r.backend() + " run " + r.run() + ": " + f + " (" + r.dir() + ")\n"
                        + String.join("\n", r.verdict().findings()));
            }
        }
        return out;
    }

    /**
     * Why a run fails its expectation, or null when it meets it.
     *
     * @param r the run
     * @return the reason, or null
     */
    public static String failure(TortureRun.Result r) {
        Verdict v = r.verdict();
        if (!r.faultInjected()) {
            return "the fault was never injected";
        }
        if (r.control()) {
            return v.overlaps() > 0 ? null : "the control scenario was not flagged: the checkers cannot fail?";
        }
        if (r.promisesSafety() && v.unsafe()) {
            return "safety violated: " + v.overlaps() + " overlaps within valid leases, " + v.staleAccepted()
                    + " stale writes accepted, " + v.clashes() + " token clashes";
        }
        if (r.promisesSafety() && v.stuck()) {
            return "liveness: " + v.livenessViolations() + " late takeovers, " + v.livenessMissing()
                    + " missing takeovers, " + v.leftovers() + " claims left behind";
        }
        return null;
    }
}
