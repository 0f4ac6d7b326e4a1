package dev.locker.janusgraph;

import dev.locker.hbase.HBaseTestCluster;
import org.junit.jupiter.api.Order;

/** JanusGraph's lock tests with the locks on the HBase mini cluster (started once per test JVM). */
@Order(1) // among the longest classes: started first
class HBaseLockStoreTest extends AtomicLockerLockStoreTest {

    @Override
    String lockerUri() {
        return HBaseTestCluster.get().uri("janusgraph_locks", "serverClockSkew=0s");
    }
}
