package dev.locker.bench;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/** The values of one measurement over the rounds of a run: median and spread (min and max). */
final class Samples {

    private final List<Double> values = new ArrayList<>();

    Samples add(double v) {
        values.add(v);
        return this;
    }

    boolean isEmpty() {
        return values.isEmpty();
    }

    int size() {
        return values.size();
    }

    double get(int i) {
        return values.get(i);
    }

    double median() {
        List<Double> s = sorted();
        int n = s.size();
        if (n == 0) {
            return Double.NaN;
        }
        return n % 2 == 1 ? s.get(n / 2) : (s.get(n / 2 - 1) + s.get(n / 2)) / 2;
    }

    double min() {
        return sorted().get(0);
    }

    double max() {
        List<Double> s = sorted();
        return s.get(s.size() - 1);
    }

    /** The spread as a fraction of the median: (max - min) / median. */
    double spread() {
        return values.size() < 2 ? 0 : (max() - min()) / median();
    }

    private List<Double> sorted() {
        List<Double> s = new ArrayList<>(values);
        Collections.sort(s);
        return s;
    }

    /** Per-round ratios {@code a[i] / b[i]} (rounds measured side by side). */
    static Samples ratios(Samples a, Samples b) {
        Samples r = new Samples();
        for (int i = 0; i < Math.min(a.size(), b.size()); i++) {
            r.add(a.get(i) / b.get(i));
        }
        return r;
    }
}
