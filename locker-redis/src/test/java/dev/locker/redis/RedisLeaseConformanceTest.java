package dev.locker.redis;

import dev.locker.testkit.ConformanceBase;
import dev.locker.testkit.ExpiryAndFencingSection;
import dev.locker.testkit.LateGrantSection;
import dev.locker.testkit.LeaseDurationsSection;
import dev.locker.testkit.LeaseSection;
import dev.locker.testkit.LockerFixture;

/**
 * The conformance sections on leases over time (expiry, fencing, keep-alive, durations, late grants) on a
 * redis-server of their own; {@link RedisLockerConformanceTest} runs the rest of the suite beside it.
 */
class RedisLeaseConformanceTest extends ConformanceBase implements
        ExpiryAndFencingSection,
        LeaseSection,
        LeaseDurationsSection,
        LateGrantSection {

    @Override
    protected LockerFixture createFixture() {
        return new RedisFixture(RedisFixture.LONGEST_LEASE_GUARD);
    }
}
