package dev.locker.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The one table a run prints: per row, Locker's figure and a baseline's (medians over interleaved rounds, with their
 * spread), their ratio (Locker / baseline, median of the per-round ratios, and its min-max) and the target, if any.
 */
final class Table {

    /** Which way is good for a row's figures. */
    enum Better { HIGHER, LOWER }

    record Row(String workload, String unit, Samples ours, String baseline, Samples theirs, Better better,
               Double target, boolean targetOnValue) {

        Samples ratios() {
            return Samples.ratios(ours, theirs);
        }

        /** met / MISSED against the target ratio, or "" when the row has none. */
        String verdict() {
            if (target == null || ours.isEmpty() || theirs.isEmpty() && !targetOnValue) {
                return "";
            }
            double r = targetOnValue ? ours.median() : ratios().median();
            boolean met = better == Better.HIGHER ? r >= target : r <= target;
            return met ? "met" : "MISSED";
        }
    }

    private final List<Row> rows = new ArrayList<>();

    void add(Row row) {
        rows.add(row);
        System.out.println("  " + format(row)); // as it comes, so that a long run shows progress
    }

    List<Row> rows() {
        return rows;
    }

    String render() {
        StringBuilder sb = new StringBuilder();
        sb.append("| workload | Locker | baseline | ratio (Locker/baseline) [min-max] | target | |\n");
        sb.append("|---|---|---|---|---|---|\n");
        for (Row r : rows) {
            sb.append(format(r)).append('\n');
        }
        return sb.toString();
    }

    private static String format(Row r) {
        String target = r.target() == null ? "" : (r.targetOnValue() ? "Locker " : "ratio ")
                + (r.better() == Better.HIGHER ? ">= " : "<= ") + num(r.target());
        String ratio = r.ours().isEmpty() || r.theirs().isEmpty() ? "" : String.format(Locale.ROOT, "%.2f [%.2f-%.2f]",
                r.ratios().median(), r.ratios().min(), r.ratios().max());
        return "| " + r.workload() + " | " + value(r.ours(), r.unit()) + " | " + r.baseline() + " "
                + value(r.theirs(), r.unit()) + " | " + ratio + " | " + target + " | " + r.verdict() + " |";
    }

    static String value(Samples s, String unit) {
        if (s.isEmpty()) {
            return "n/a";
        }
        String spread = s.size() > 1 ? String.format(Locale.ROOT, " ±%.0f%%", 50 * s.spread()) : "";
        return num(s.median()) + " " + unit + spread;
    }

    static String num(double v) {
        double a = Math.abs(v);
        if (a >= 100_000) {
            return String.format(Locale.ROOT, "%.0fk", v / 1000);
        }
        if (a >= 10_000) {
            return String.format(Locale.ROOT, "%.1fk", v / 1000);
        }
        if (a >= 100) {
            return String.format(Locale.ROOT, "%.0f", v);
        }
        if (a >= 10) {
            return String.format(Locale.ROOT, "%.1f", v);
        }
        return String.format(Locale.ROOT, "%.2f", v);
    }
}
