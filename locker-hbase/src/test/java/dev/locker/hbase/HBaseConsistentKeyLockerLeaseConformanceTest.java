package dev.locker.hbase;

import dev.locker.testkit.ClockFaultSection;
import dev.locker.testkit.ExpiryAndFencingSection;
import dev.locker.testkit.ForcedReleaseSection;
import dev.locker.testkit.LeaseSection;
import dev.locker.testkit.LifecycleSection;
import dev.locker.testkit.RunOnceSection;
import dev.locker.testkit.UnknownOutcomeSection;

/** Leases, expiry and fencing, forced release, close, run-once and paused processes on the wait-and-read-back locker. */
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
