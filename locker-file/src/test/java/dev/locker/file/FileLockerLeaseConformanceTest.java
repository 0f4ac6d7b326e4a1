package dev.locker.file;

import dev.locker.testkit.ConformanceBase;
import dev.locker.testkit.ExpiryAndFencingSection;
import dev.locker.testkit.LateGrantSection;
import dev.locker.testkit.LeaseDurationsSection;
import dev.locker.testkit.LeaseSection;
import dev.locker.testkit.LockerFixture;

/**
 * The conformance sections on leases over time (expiry, fencing, keep-alive, durations, late grants) on file:, each
 * "process" a FileLocker; {@link FileLockerConformanceTest} runs the rest of the suite beside it.
 */
class FileLockerLeaseConformanceTest extends ConformanceBase implements
        ExpiryAndFencingSection,
        LeaseSection,
        LeaseDurationsSection,
        LateGrantSection {

    @Override
    protected LockerFixture createFixture() {
        return new FileFixture("lease-conformance");
    }
}
