package dev.locker.file;

import dev.locker.api.Locker;
import dev.locker.engine.ExpectedValueCheckingStore;
import dev.locker.engine.InMemoryStore;
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
 * The conformance suite on file:, each "process" a FileLocker, but for the sections on leases over time.
 *
 * <p>{@link FileLockerLeaseConformanceTest} runs those beside it: each half spends most of its time waiting for
 * expiries.
 */
class FileLockerConformanceTest extends ConformanceBase implements
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

    private final InMemoryStore data = new InMemoryStore("file-evc-data");

    @Override
    protected LockerFixture createFixture() {
        return new FileFixture("conformance");
    }

    @Override
    protected KeyColumnValueStore expectedValueChecking(Locker locker) {
        return new ExpectedValueCheckingStore(data, locker);
    }

    @Test
    void theTwoHalvesTogetherRunEverySectionOfTheSuite() {
        ConformanceHalves.assertTogetherRunEverySection(FileLockerConformanceTest.class,
                FileLockerLeaseConformanceTest.class);
    }
}
