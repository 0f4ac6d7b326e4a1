package dev.locker.hbase;

import dev.locker.spi.KeyColumnValueStore;
import dev.locker.api.Locker;
import dev.locker.engine.ExpectedValueCheckingStore;
import dev.locker.testkit.LeaseDurationsSection;
import dev.locker.testkit.LockerConformanceSuite;
import dev.locker.testkit.LockerFixture;

/**
 * The whole conformance suite on {@link HBaseLocker} over the real mini cluster; the expected-value scenarios guard
 * data kept in an HBase table through {@link HBaseKeyColumnValueStore}.
 */
class HBaseLockerConformanceTest extends LockerConformanceSuite implements LeaseDurationsSection {

    private HBaseLockerFixture hbase;
    private HBaseKeyColumnValueStore data;

    @Override
    protected LockerFixture createFixture() {
        hbase = new HBaseLockerFixture("conformance_atomic_locks");
        data = HBaseKeyColumnValueStore.open(hbase.connection(), "conformance_atomic_data", "d", true);
        return hbase;
    }

    @Override
    protected KeyColumnValueStore expectedValueChecking(Locker locker) {
        return new ExpectedValueCheckingStore(data, locker);
    }
}
