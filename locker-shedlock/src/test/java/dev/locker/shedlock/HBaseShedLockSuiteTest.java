package dev.locker.shedlock;

import dev.locker.hbase.HBaseTestCluster;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Order;

/** ShedLock's provider suite on the real HBase 2.6 mini cluster, started in this JVM. */
@Order(1) // among the longest classes: started first
class HBaseShedLockSuiteTest extends ShedLockSuiteOverLocker {

    private static LockerLockProvider provider;

    @BeforeAll
    static void open() {
        // one mini cluster has one clock, as in the conformance fixture: no allowance keeps a claim past its expiry,
        // so a claim left for lockAtLeastFor frees when it ends, as the suite checks
        provider = LockerLockProvider.open(HBaseTestCluster.get().uri("shedlock_suite", "serverClockSkew=0s"));
    }

    @AfterAll
    static void close() {
        provider.close();
    }

    @Override
    LockerLockProvider provider() {
        return provider;
    }
}
