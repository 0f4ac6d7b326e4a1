package dev.locker.springintegration;

import dev.locker.hbase.HBaseTestCluster;
import org.junit.jupiter.api.Order;

/** The registry's Lock semantics on the real HBase 2.6 mini cluster, started in this JVM. */
@Order(1) // among the longest classes: started first
class HBaseLockRegistryTest extends LockRegistrySuite {

    @Override
    String startBackend() {
        // one mini cluster has one clock: no allowance for region servers' clocks keeps an expired claim on the backend,
        // so a lease left to expire is taken at its expiry, not 10 s later (the default allowance)
        return HBaseTestCluster.get().uri("spring_integration_suite", "serverClockSkew=0s");
    }

    @Override
    void stopBackend() {
        // the cluster is shared by the JVM and stops with it
    }
}
