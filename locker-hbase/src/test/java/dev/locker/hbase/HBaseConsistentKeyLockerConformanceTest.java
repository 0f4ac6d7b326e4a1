package dev.locker.hbase;

import dev.locker.spi.KeyColumnValueStore;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.engine.ConsistentKeyLocker;
import dev.locker.engine.ExpectedValueCheckingStore;
import dev.locker.testkit.LockerConformanceSuite;
import dev.locker.testkit.LockerFixture;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Connection;
import org.junit.jupiter.api.Order;

import java.time.Duration;

/**
 * The whole conformance suite a second time, on the wait-and-read-back {@link ConsistentKeyLocker} of locker-engine,
 * unchanged, over {@link HBaseKeyColumnValueStore} on the real mini cluster. Claims carry client timestamps, so the
 * suite drives expiry with its virtual clock; breaking the backend takes the lock table's regions offline.
 */
@Order(1) // among the longest classes: started first
class HBaseConsistentKeyLockerConformanceTest extends LockerConformanceSuite {

    private static final String LOCKS = "conformance_ck_locks";

    private HBaseKeyColumnValueStore data;

    @Override
    protected LockerFixture createFixture() {
        HBaseTestCluster cluster = HBaseTestCluster.get();
        Connection connection = cluster.newConnection(Duration.ofSeconds(3));
        HBaseKeyColumnValueStore locks = HBaseKeyColumnValueStore.open(connection, LOCKS, "l", true);
        data = HBaseKeyColumnValueStore.open(connection, "conformance_ck_data", "d", true);
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
                cluster.setRegionsOnline(TableName.valueOf(LOCKS), false);
            }

            @Override
            public void repairBackend() {
                cluster.setRegionsOnline(TableName.valueOf(LOCKS), true);
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
