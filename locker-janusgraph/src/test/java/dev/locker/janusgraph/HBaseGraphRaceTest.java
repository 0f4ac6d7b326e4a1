package dev.locker.janusgraph;

import dev.locker.hbase.HBaseTestCluster;
import org.junit.jupiter.api.Order;

/** The graph-level race with the locks on the HBase mini cluster (started once per test JVM). */
@Order(2) // among the longest classes: started first
class HBaseGraphRaceTest extends GraphRaceTest {

    @Override
    String lockerUri() {
        return HBaseTestCluster.get().uri("janusgraph_race", "serverClockSkew=0s");
    }
}
