package dev.locker.springintegration;

import dev.locker.hbase.HBaseTestCluster;

/**
 * The registry's Lock semantics on the real HBase 2.6 mini cluster, started in this JVM, less two kinds of case.
 *
 * <p>The case that sleeps through part of a long expiry runs on the other backends only. The mini cluster is this
 * module's slowest fixture, and that case pins Locker's keep-alive, which locker-hbase's own suite covers.
 * HBase's client clears an interrupt that lands during a call and carries on: a waiter interrupted then keeps waiting.
 */
class HBaseLockRegistryTest extends LockRegistrySuite {

    @Override
    String startBackend() {
        return HBaseTestCluster.get().uri("spring_integration_suite", "");
    }

    @Override
    void stopBackend() {
        // the cluster is shared by the JVM and stops with it
    }

    @Override
    boolean interruptsReachEveryBackendCall() {
        return false;
    }

    @Override
    boolean waitsOutLongExpiries() {
        return false;
    }
}
