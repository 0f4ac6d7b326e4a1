package dev.locker.janusgraph;

import dev.locker.hbase.HBaseTestCluster;

/** The graph-level race with the locks on the HBase mini cluster (started once per test JVM). */
class HBaseGraphRaceTest extends GraphRaceTest {

    @Override
    String lockerUri() {
        return HBaseTestCluster.get().uri("janusgraph_race", "serverClockSkew=0s");
    }
}
