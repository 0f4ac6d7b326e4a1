package dev.locker.redis;

import dev.locker.spi.KeyColumnValueStore;
import dev.locker.api.Locker;
import dev.locker.engine.ExpectedValueCheckingStore;
import dev.locker.engine.InMemoryStore;
import dev.locker.testkit.LeaseDurationsSection;
import dev.locker.testkit.LockerConformanceSuite;
import dev.locker.testkit.LockerFixture;

/** The whole conformance suite, leases with durations included, on one real redis-server (or LOCKER_REDIS_URI). */
class RedisLockerConformanceTest extends LockerConformanceSuite implements LeaseDurationsSection {

    /** The data the expected-value scenarios guard; the locks on it live in Redis. */
    private final InMemoryStore data = new InMemoryStore("guarded-data");

    @Override
    protected LockerFixture createFixture() {
        return new RedisFixture();
    }

    @Override
    protected KeyColumnValueStore expectedValueChecking(Locker locker) {
        return new ExpectedValueCheckingStore(data, locker);
    }
}
