package dev.locker.hbase;

import dev.locker.spi.KeyColumnValueStore;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.engine.ConsistentKeyLocker;
import dev.locker.testkit.ConsistentKeyConformanceSuite;

/** JanusGraph's ConsistentKeyLocker scenarios on {@link HBaseKeyColumnValueStore} over the real mini cluster. */
class HBaseConsistentKeyConformanceTest extends ConsistentKeyConformanceSuite {

    @Override
    protected KeyColumnValueStore openStore() {
        // the shared connection stays open; closing this store does not close it
        return HBaseKeyColumnValueStore.open(HBaseTestCluster.get().connection(), "ck_scenarios", "l", true);
    }

    @Override
    protected Locker consistentKeyLocker(KeyColumnValueStore store, LockerConfig config) {
        return ConsistentKeyLocker.builder(store).config(config).build();
    }
}
