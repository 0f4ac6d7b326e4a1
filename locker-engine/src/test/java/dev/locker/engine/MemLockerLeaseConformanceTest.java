package dev.locker.engine;

import dev.locker.testkit.ConformanceBase;
import dev.locker.testkit.ExpiryAndFencingSection;
import dev.locker.testkit.LateGrantSection;
import dev.locker.testkit.LeaseDurationsSection;
import dev.locker.testkit.LeaseSection;
import dev.locker.testkit.LockerFixture;

/**
 * The conformance sections on leases over time (expiry, fencing, keep-alive, durations, late grants) on ConsistentKeyLocker over one InMemoryStore (mem:'s wait-and-read-back protocol);
 * {@link MemLockerConformanceTest} runs the rest of the suite beside it.
 */
class MemLockerLeaseConformanceTest extends ConformanceBase implements
        ExpiryAndFencingSection,
        LeaseSection,
        LeaseDurationsSection,
        LateGrantSection {

    @Override
    protected LockerFixture createFixture() {
        return MemFixtures.waitAndReadBack("lease-conformance");
    }
}
