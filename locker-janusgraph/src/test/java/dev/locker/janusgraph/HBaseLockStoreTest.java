package dev.locker.janusgraph;

import dev.locker.hbase.HBaseTestCluster;

/** JanusGraph's lock tests with the locks on the HBase mini cluster (started once per test JVM). */
class HBaseLockStoreTest extends AtomicLockerLockStoreTest {

    @Override
    String lockerUri() {
        return HBaseTestCluster.get().uri("janusgraph_locks", "serverClockSkew=0s");
    }
}
