package dev.locker.hbase;

import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.engine.ConsistentKeyLocker;
import dev.locker.engine.ExpectedValueCheckingStore;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.testkit.ConformanceBase;
import dev.locker.testkit.LockerFixture;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Connection;

import java.time.Duration;

/**
 * Conformance sections on the wait-and-read-back {@link ConsistentKeyLocker} of locker-engine, unchanged, over
 * {@link HBaseKeyColumnValueStore} on the real mini cluster. Claims carry client timestamps, so the suite drives
 * expiry with its virtual clock; breaking the backend takes the class's lock table's regions offline.
 *
 * <p>The sections are shared out between two classes, so that they run side by side (docs/testing.md).
 * Each class has lock and data tables of its own, since breaking the backend must not touch the other.
 * {@link HBaseConformanceCoverageTest} pins that the classes run every section of the suite between them.
 */
abstract class HBaseConsistentKeyConformance extends ConformanceBase {

    private HBaseKeyColumnValueStore data;

    /** What sets this class's tables apart from the other class's tables. */
    abstract String tables();

    @Override
    protected LockerFixture createFixture() {
        HBaseTestCluster cluster = HBaseTestCluster.get();
        Connection connection = cluster.newConnection(Duration.ofSeconds(3));
        String lockTable = "conformance_ck_" + tables() + "_locks";
        HBaseKeyColumnValueStore locks = HBaseKeyColumnValueStore.open(connection, lockTable, "l", true);
        data = HBaseKeyColumnValueStore.open(connection, "conformance_ck_" + tables() + "_data", "d", true);
        return new LockerFixture() {
            @Override
            public Locker open(LockerConfig config) {
                return ConsistentKeyLocker.builder(locks).config(config).build();
            }

            @Override
            public boolean expiryFollowsConfiguredClock() {
                return true;
            }

            @Override
            public boolean canBreakBackend() {
                return true;
            }

            @Override
            public void breakBackend() {
                cluster.setRegionsOnline(TableName.valueOf(lockTable), false);
            }

            @Override
            public void repairBackend() {
                cluster.setRegionsOnline(TableName.valueOf(lockTable), true);
            }

            @Override
            public void close() throws Exception {
                connection.close();
            }
        };
    }

    @Override
    protected KeyColumnValueStore expectedValueChecking(Locker locker) {
        return new ExpectedValueCheckingStore(data, locker);
    }
}
