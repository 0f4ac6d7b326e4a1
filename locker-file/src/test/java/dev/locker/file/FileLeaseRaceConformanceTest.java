package dev.locker.file;

import dev.locker.testkit.ConformanceBase;
import dev.locker.testkit.LeaseRaceSection;
import dev.locker.testkit.LockerFixture;

/** The lease race section on file:, each "process" a FileLocker. */
class FileLeaseRaceConformanceTest extends ConformanceBase implements LeaseRaceSection {

    @Override
    protected LockerFixture createFixture() {
        return new FileFixture("lease-race");
    }
}
