package dev.locker.hbase;

import dev.locker.testkit.ForcedReleaseSection;
import dev.locker.testkit.LeaseDurationsSection;
import dev.locker.testkit.WaitingSection;
import org.junit.jupiter.api.Order;

/** Lease durations, waiting and forced release on {@link HBaseLocker}. */
@Order(1) // among the longest classes: started first
class HBaseLockerWaitingConformanceTest extends HBaseAtomicConformance implements
        LeaseDurationsSection,
        WaitingSection,
        ForcedReleaseSection {

    @Override
    String tables() {
        return "waiting";
    }
}
