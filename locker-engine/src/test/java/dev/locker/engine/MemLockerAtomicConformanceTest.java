package dev.locker.engine;

import dev.locker.api.Locker;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.testkit.BackendOutageSection;
import dev.locker.testkit.ClockFaultSection;
import dev.locker.testkit.ConformanceBase;
import dev.locker.testkit.ConformanceHalves;
import dev.locker.testkit.ExpectedValueCheckingSection;
import dev.locker.testkit.ForcedReleaseSection;
import dev.locker.testkit.LifecycleSection;
import dev.locker.testkit.LimitsSection;
import dev.locker.testkit.ListingSection;
import dev.locker.testkit.LockerFixture;
import dev.locker.testkit.RunOnceSection;
import dev.locker.testkit.ThreePhaseSection;
import dev.locker.testkit.UnknownOutcomeSection;
import dev.locker.testkit.WaitingSection;
import org.junit.jupiter.api.Test;

/**
 * The conformance suite on mem:'s atomic MemLocker, but for the sections on leases over time.
 *
 * <p>{@link MemLockerAtomicLeaseConformanceTest} runs those beside it: each half spends most of its time waiting for expiries.
 */
class MemLockerAtomicConformanceTest extends ConformanceBase implements
        ThreePhaseSection,
        WaitingSection,
        ForcedReleaseSection,
        UnknownOutcomeSection,
        ClockFaultSection,
        BackendOutageSection,
        LifecycleSection,
        RunOnceSection,
        LimitsSection,
        ListingSection,
        ExpectedValueCheckingSection {

    /** The data the expected-value scenarios guard. */
    private final InMemoryStore data = new InMemoryStore("atomic-evc-data");

    @Override
    protected LockerFixture createFixture() {
        return MemFixtures.atomic("atomic-conformance");
    }

    @Override
    protected KeyColumnValueStore expectedValueChecking(Locker locker) {
        return new ExpectedValueCheckingStore(data, locker);
    }

    @Test
    void theTwoHalvesTogetherRunEverySectionOfTheSuite() {
        ConformanceHalves.assertTogetherRunEverySection(MemLockerAtomicConformanceTest.class, MemLockerAtomicLeaseConformanceTest.class);
    }
}
