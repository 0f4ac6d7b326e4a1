package dev.locker.mongo;

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
import dev.locker.testkit.LockerConformanceSuite;
import dev.locker.testkit.LockerFixture;
import dev.locker.testkit.RunOnceSection;
import dev.locker.testkit.ThreePhaseSection;
import dev.locker.testkit.UnknownOutcomeSection;
import dev.locker.testkit.WaitingSection;
import org.junit.jupiter.api.Test;

/**
 * The shared conformance suite on MongoDB, but for the sections on leases over time, which
 * {@link MongoLeaseConformanceTest} runs beside it on a server of its own. Both run on the in-process
 * mongo-java-server by default, on a real mongod when LOCKER_MONGO_URI is set (e.g.
 * {@code mongodb://localhost:27017/?replicaSet=rs0}). The expected-value scenarios guard an in-memory data store with
 * the MongoLocker: the locks are MongoDB's, the guarded cells are not.
 */
class MongoLockerConformanceTest extends ConformanceBase implements
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

    private final InMemoryStore data = new InMemoryStore("evc-data");

    @Override
    protected LockerFixture createFixture() {
        return MongoLeaseConformanceTest.newFixture();
    }

    @Override
    protected KeyColumnValueStore expectedValueChecking(Locker locker) {
        return new ExpectedValueCheckingStore(data, locker);
    }

    /** Together with {@link MongoLeaseConformanceTest}, every section of {@link LockerConformanceSuite}. */
    @Test
    void theTwoHalvesTogetherRunEverySectionOfTheSuite() {
        ConformanceHalves.assertTogetherRunEverySection(MongoLockerConformanceTest.class,
                MongoLeaseConformanceTest.class);
    }
}
