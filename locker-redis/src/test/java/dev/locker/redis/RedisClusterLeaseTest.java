package dev.locker.redis;

import dev.locker.testkit.ConformanceBase;
import dev.locker.testkit.LateGrantSection;
import dev.locker.testkit.LeaseDurationsSection;
import dev.locker.testkit.LeaseSection;
import dev.locker.testkit.LockerFixture;
import org.junit.jupiter.api.Assumptions;

/**
 * The conformance sections on leases (keep-alive, the lost signal, durations, late grants) on a Redis Cluster of
 * their own; {@link RedisClusterTest} runs the rest of the suite beside it.
 */
class RedisClusterLeaseTest extends ConformanceBase implements LeaseSection, LeaseDurationsSection,
        LateGrantSection {

    @Override
    protected LockerFixture createFixture() {
        Assumptions.assumeFalse(RedisTarget.isExternal(), "runs its own cluster");
        return new RedisClusterFixture();
    }
}
