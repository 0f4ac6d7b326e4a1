package dev.locker.engine;

import dev.locker.testkit.ConformanceBase;
import dev.locker.testkit.ExpiryAndFencingSection;
import dev.locker.testkit.LateGrantSection;
import dev.locker.testkit.LeaseDurationsSection;
import dev.locker.testkit.LeaseSection;
import dev.locker.testkit.LockerFixture;

/**
 * The conformance sections on leases over time (expiry, fencing, keep-alive, durations, late grants) on mem:'s atomic MemLocker;
 * {@link MemLockerAtomicConformanceTest} runs the rest of the suite beside it.
 */
class MemLockerAtomicLeaseConformanceTest extends ConformanceBase implements
        ExpiryAndFencingSection,
        LeaseSection,
        LeaseDurationsSection,
        LateGrantSection {

    @Override
    protected LockerFixture createFixture() {
        return MemFixtures.atomic("atomic-lease-conformance");
    }
}
