package dev.locker.shedlock;

import dev.locker.hbase.HBaseTestCluster;
import org.junit.jupiter.api.Order;

/** ShedLock's durations outlive the holding process on the real HBase 2.6 mini cluster, started in this JVM. */
@Order(1) // among the longest classes: started first
class HBaseLockTimesOutliveTheProcessTest extends LockTimesOutliveTheProcess {

    @Override
    void startBackend() {
        HBaseTestCluster.get();
    }

    @Override
    void stopBackend() {
    }

    @Override
    String uri(String options) {
        // one mini cluster has one clock: no allowance for region servers' clocks keeps a dead claim past its expiry;
        // a child JVM opening the table on a busy host may need longer than the default 10 s
        return HBaseTestCluster.get().uri("shedlock_outlive", "serverClockSkew=0s&operationTimeout=60s&" + options);
    }
}
