package dev.locker.hbase;

import dev.locker.testkit.ClockFaultSection;
import dev.locker.testkit.ForcedReleaseSection;
import dev.locker.testkit.LateGrantSection;
import dev.locker.testkit.LeaseDurationsSection;
import dev.locker.testkit.LeaseSection;
import dev.locker.testkit.LifecycleSection;
import dev.locker.testkit.RunOnceSection;
import dev.locker.testkit.WaitingSection;
import org.junit.jupiter.api.Order;

/** Leases and their durations, waiting, forced release, close, run-once and clock faults on {@link HBaseLocker}. */
@Order(1) // among the longest classes: started first
class HBaseLockerLeaseConformanceTest extends HBaseAtomicConformance implements
        LeaseSection,
        LeaseDurationsSection,
        LateGrantSection,
        WaitingSection,
        ForcedReleaseSection,
        LifecycleSection,
        RunOnceSection,
        ClockFaultSection {

    @Override
    String tables() {
        return "leases";
    }
}
