package dev.locker.file;

import dev.locker.spi.KeyColumnValueStore;
import dev.locker.api.Locker;
import dev.locker.local.ExpectedValueCheckingStore;
import dev.locker.local.InMemoryStore;
import dev.locker.testkit.LockerConformanceSuite;
import dev.locker.testkit.LockerFixture;

/** The whole conformance suite on file:, every "process" a FileLocker on one lock directory. */
class FileLockerConformanceTest extends LockerConformanceSuite {

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
