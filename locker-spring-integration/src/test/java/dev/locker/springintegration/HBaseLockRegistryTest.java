package dev.locker.springintegration;

import dev.locker.hbase.HBaseTestCluster;

/** The registry's Lock semantics on the real HBase 2.6 mini cluster, started in this JVM. */
class HBaseLockRegistryTest extends LockRegistrySuite {

    @Override
    String startBackend() {
        return HBaseTestCluster.get().uri("spring_integration_suite", "");
    }

    @Override
    void stopBackend() {
        // the cluster is shared by the JVM and stops with it
    }
}
