package dev.locker.hbase;

import dev.locker.api.Locker;
import dev.locker.engine.ExpectedValueCheckingStore;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.testkit.ConformanceBase;
import dev.locker.testkit.LockerFixture;

/**
 * Conformance sections on {@link HBaseLocker} over the real mini cluster, with lock and data tables of the class's
 * own. The expected-value scenarios guard data kept in an HBase table through {@link HBaseKeyColumnValueStore}.
 *
 * <p>The sections are shared out between two classes, so that they run side by side (docs/testing.md).
 * The lease sections stay in one class: at most two keep-alive cases of the module run at once, as before.
 * Breaking the backend takes a class's lock table offline, so no two classes share one.
 * {@link HBaseConformanceCoverageTest} pins that the classes run every section of the suite between them.
 */
abstract class HBaseAtomicConformance extends ConformanceBase {

    private HBaseKeyColumnValueStore data;

    /** What sets this class's tables apart from the other classes' tables. */
    abstract String tables();

    @Override
    protected LockerFixture createFixture() {
        HBaseLockerFixture hbase = new HBaseLockerFixture("conformance_atomic_" + tables() + "_locks");
        data = HBaseKeyColumnValueStore.open(hbase.connection(), "conformance_atomic_" + tables() + "_data", "d", true);
        return hbase;
    }

    @Override
    protected KeyColumnValueStore expectedValueChecking(Locker locker) {
        return new ExpectedValueCheckingStore(data, locker);
    }
}
