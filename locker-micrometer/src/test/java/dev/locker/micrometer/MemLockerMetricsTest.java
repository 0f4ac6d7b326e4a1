package dev.locker.micrometer;

/** The meters on the in-JVM {@code mem:} backend (wait-and-read-back: granted at the read-back). */
class MemLockerMetricsTest extends LockerMetricsScenarios {

    @Override
    String uri() {
        return "mem:metrics?protocol=wait-and-read-back";
    }

    @Override
    String backend() {
        return "mem";
    }
}
