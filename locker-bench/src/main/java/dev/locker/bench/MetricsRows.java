package dev.locker.bench;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockerConfig;
import dev.locker.bench.Table.Better;
import dev.locker.bench.Table.Row;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The cost of LockerMetrics on the lock path: the same locker with and without its meters, on one backend. */
final class MetricsRows {

    private final Run run;

    MetricsRows(Run run) {
        this.run = run;
    }

    /**
     * Uncontended acquire+release on one backend, with {@code LockerMetrics} installed against without: the cost of
     * the meters on the lock path, which must stay off its critical cost. Two lockers on one backend,
     * rounds interleaved. On {@code mem:} there is no I/O, so the row shows the meters' CPU cost at its largest.
     */
    void run(String uri, String backend) throws Exception {
        io.micrometer.core.instrument.simple.SimpleMeterRegistry registry = new io.micrometer.core.instrument.simple.SimpleMeterRegistry();
        dev.locker.micrometer.LockerMetrics meters = dev.locker.micrometer.LockerMetrics.builder(registry)
                .backend(backend).lockNamePrefixes("m-").build();
        try (dev.locker.api.Locker plain = dev.locker.api.Lockers.open(uri, LockerConfig.builder().build());
             dev.locker.api.Locker metered = dev.locker.api.Lockers.open(uri, LockerConfig.builder().probe(meters).build())) {
            List<dev.locker.api.Locker> both = List.of(metered, plain);
            Map<dev.locker.api.Locker, Samples> rates = new LinkedHashMap<>();
            for (dev.locker.api.Locker l : both) {
                rates.put(l, new Samples());
                Bench.rate(1, run.slice(), t -> i -> pair(l, "m-" + t)); // warm-up
            }
            for (int r = 0; r < run.rounds(); r++) {
                for (int k = 0; k < both.size(); k++) {
                    dev.locker.api.Locker l = both.get((k + r) % both.size());
                    rates.get(l).add(Bench.rate(1, run.slice(), t -> i -> pair(l, "m-" + t)));
                }
            }
            run.table().add(new Row(backend + " acquire+release with LockerMetrics, 1 thread", "pairs/s", rates.get(metered),
                    "the same without metrics", rates.get(plain), Better.HIGHER, 0.95, false));
            // allocation is steadier than a rate on a shared machine: what the meters add per pair, in bytes
            // (2,000 pairs a sample: the figure moves by less than 1% between samples, and on mem: a pair waits its
            // 1 ms lockWait, so 10,000 cost the full run two minutes of its 15)
            int n = run.quick() ? 1_000 : 2_000;
            Samples withMeters = new Samples();
            Samples without = new Samples();
            for (int r = 0; r < run.rounds(); r++) {
                withMeters.add(Bench.allocatedPerOp(n, i -> pair(metered, "m-alloc")));
                without.add(Bench.allocatedPerOp(n, i -> pair(plain, "m-alloc")));
            }
            run.table().add(new Row(backend + " allocation per pair with LockerMetrics", "B", withMeters,
                    "the same without metrics", without, Better.LOWER, 1.1, false));
        }
    }

    private static void pair(dev.locker.api.Locker locker, String name) {
        try (Lease lease = locker.acquire(KeyColumn.named(name), "bench")) {
            if (lease.fencingToken() <= 0) {
                throw new IllegalStateException("no token");
            }
        }
    }
}
