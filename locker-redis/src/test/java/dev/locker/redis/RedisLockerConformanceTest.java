package dev.locker.redis;

import dev.locker.api.Locker;
import dev.locker.engine.ExpectedValueCheckingStore;
import dev.locker.engine.InMemoryStore;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.testkit.BackendOutageSection;
import dev.locker.testkit.ClockFaultSection;
import dev.locker.testkit.ConformanceHalves;
import dev.locker.testkit.ConformanceBase;
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
 * The conformance suite on one real redis-server (or LOCKER_REDIS_URI), but for the sections on leases over time.
 *
 * <p>{@link RedisLeaseConformanceTest} runs those on a server of its own. The two halves run side by side, since
 * each spends most of its time waiting for expiries and restarts. Together they run every section of
 * {@link LockerConformanceSuite}, which {@link #theTwoHalvesTogetherRunEverySectionOfTheSuite()} checks.
 */
class RedisLockerConformanceTest extends ConformanceBase implements
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

    /** The data the expected-value scenarios guard; the locks on it live in Redis. */
    private final InMemoryStore data = new InMemoryStore("guarded-data");

    /** These sections ask for no lease over one expiry, so a short guard keeps each of their restarts short. */
    @Override
    protected LockerFixture createFixture() {
        return new RedisFixture(RedisFixture.ONE_EXPIRY_LEASE_GUARD);
    }

    @Override
    protected KeyColumnValueStore expectedValueChecking(Locker locker) {
        return new ExpectedValueCheckingStore(data, locker);
    }

    @Test
    void theTwoHalvesTogetherRunEverySectionOfTheSuite() {
        ConformanceHalves.assertTogetherRunEverySection(RedisLockerConformanceTest.class,
                RedisLeaseConformanceTest.class);
    }
}
