package dev.locker.hbase;

import dev.locker.testkit.ForcedReleaseSection;
import dev.locker.testkit.LeaseDurationsSection;
import dev.locker.testkit.WaitingSection;

/** Lease durations, waiting and forced release on {@link HBaseLocker}. */
class HBaseLockerWaitingConformanceTest extends HBaseAtomicConformance implements
        LeaseDurationsSection,
        WaitingSection,
        ForcedReleaseSection {

    @Override
    String tables() {
        return "waiting";
    }
}
