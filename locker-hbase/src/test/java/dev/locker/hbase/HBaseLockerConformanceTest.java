package dev.locker.hbase;

import dev.locker.testkit.BackendOutageSection;
import dev.locker.testkit.ExpectedValueCheckingSection;
import dev.locker.testkit.ExpiryAndFencingSection;
import dev.locker.testkit.LimitsSection;
import dev.locker.testkit.ListingSection;
import dev.locker.testkit.ThreePhaseSection;
import dev.locker.testkit.UnknownOutcomeSection;
import org.junit.jupiter.api.Order;

/** The three phases, expiry and fencing, paused processes, limits, listing, an outage and expected values. */
@Order(1) // among the longest classes: started first
class HBaseLockerConformanceTest extends HBaseAtomicConformance implements
        ThreePhaseSection,
        ExpiryAndFencingSection,
        UnknownOutcomeSection,
        LimitsSection,
        ListingSection,
        BackendOutageSection,
        ExpectedValueCheckingSection {

    @Override
    String tables() {
        return "phases";
    }
}
