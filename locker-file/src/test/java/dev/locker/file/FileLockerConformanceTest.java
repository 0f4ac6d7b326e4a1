package dev.locker.file;

import dev.locker.spi.KeyColumnValueStore;
import dev.locker.api.Locker;
import dev.locker.engine.ExpectedValueCheckingStore;
import dev.locker.engine.InMemoryStore;
import dev.locker.testkit.LateGrantSection;
import dev.locker.testkit.LeaseDurationsSection;
import dev.locker.testkit.LockerConformanceSuite;
import dev.locker.testkit.LockerFixture;

/**
 * The whole conformance suite, with leases of their own durations and the late-grant rule, on file:: each "process" a
 * FileLocker.
 */
class FileLockerConformanceTest extends LockerConformanceSuite implements LeaseDurationsSection,
        LateGrantSection {

    private final InMemoryStore data = new InMemoryStore("file-evc-data");

    @Override
    protected LockerFixture createFixture() {
        return new FileFixture("conformance");
    }

    @Override
    protected KeyColumnValueStore expectedValueChecking(Locker locker) {
        return new ExpectedValueCheckingStore(data, locker);
    }
}
