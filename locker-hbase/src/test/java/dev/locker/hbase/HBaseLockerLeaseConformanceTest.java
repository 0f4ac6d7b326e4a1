package dev.locker.hbase;

import dev.locker.testkit.ClockFaultSection;
import dev.locker.testkit.LeaseSection;
import dev.locker.testkit.LifecycleSection;
import dev.locker.testkit.RunOnceSection;
import dev.locker.testkit.UnknownOutcomeSection;

/** Leases, close, run-once, clock faults and paused processes on {@link HBaseLocker}. */
class HBaseLockerLeaseConformanceTest extends HBaseAtomicConformance implements
        LeaseSection,
        LifecycleSection,
        RunOnceSection,
        ClockFaultSection,
        UnknownOutcomeSection {

    @Override
    String tables() {
        return "leases";
    }
}
