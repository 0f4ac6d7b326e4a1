package dev.locker.hbase;

import dev.locker.testkit.BackendOutageSection;
import dev.locker.testkit.ExpectedValueCheckingSection;
import dev.locker.testkit.LimitsSection;
import dev.locker.testkit.ListingSection;
import dev.locker.testkit.ThreePhaseSection;
import dev.locker.testkit.WaitingSection;
import org.junit.jupiter.api.Order;

/** The three phases, limits, listing, an outage, waiting and expected values on the wait-and-read-back locker. */
@Order(1) // among the longest classes: started first
class HBaseConsistentKeyLockerConformanceTest extends HBaseConsistentKeyConformance implements
        ThreePhaseSection,
        LimitsSection,
        ListingSection,
        BackendOutageSection,
        WaitingSection,
        ExpectedValueCheckingSection {

    @Override
    String tables() {
        return "phases";
    }
}
