package dev.locker.hbase;

import dev.locker.testkit.ClockFaultSection;
import dev.locker.testkit.ExpiryAndFencingSection;
import dev.locker.testkit.ForcedReleaseSection;
import dev.locker.testkit.LeaseSection;
import dev.locker.testkit.LifecycleSection;
import dev.locker.testkit.RunOnceSection;
import dev.locker.testkit.UnknownOutcomeSection;
import org.junit.jupiter.api.Order;

/** Leases, expiry and fencing, forced release, close, run-once and paused processes on the wait-and-read-back locker. */
@Order(1) // among the longest classes: started first
class HBaseConsistentKeyLockerLeaseConformanceTest extends HBaseConsistentKeyConformance implements
        LeaseSection,
        ExpiryAndFencingSection,
        ForcedReleaseSection,
        LifecycleSection,
        RunOnceSection,
        ClockFaultSection,
        UnknownOutcomeSection {

    @Override
    String tables() {
        return "leases";
    }
}
