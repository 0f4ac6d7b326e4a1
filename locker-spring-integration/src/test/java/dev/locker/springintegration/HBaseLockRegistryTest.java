package dev.locker.springintegration;

import dev.locker.hbase.HBaseTestCluster;
import org.junit.jupiter.api.Order;

/**
 * The registry's Lock semantics on the real HBase 2.6 mini cluster, started in this JVM, less two kinds of case.
 *
 * <p>The case that sleeps through part of a long expiry runs on the other backends only. The mini cluster is this
 * module's slowest fixture, and that case pins Locker's keep-alive, which locker-hbase's own suite covers.
 * HBase's client clears an interrupt that lands during a call and carries on: a waiter interrupted then keeps waiting.
 */
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

    @Override
    boolean interruptsReachEveryBackendCall() {
        return false;
    }

    @Override
    boolean waitsOutLongExpiries() {
        return false;
    }
}
