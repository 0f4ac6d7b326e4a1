package dev.locker.hbase;

import dev.locker.testkit.ClockFaultSection;
import dev.locker.testkit.LeaseSection;
import dev.locker.testkit.LifecycleSection;
import dev.locker.testkit.RunOnceSection;
import dev.locker.testkit.UnknownOutcomeSection;
import org.junit.jupiter.api.Order;

/** Leases, close, run-once, clock faults and paused processes on {@link HBaseLocker}. */
@Order(1) // among the longest classes: started first
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
