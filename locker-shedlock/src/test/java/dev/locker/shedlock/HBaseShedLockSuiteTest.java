package dev.locker.shedlock;

import dev.locker.hbase.HBaseTestCluster;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** ShedLock's provider suite on the real HBase 2.6 mini cluster, started in this JVM. */
class HBaseShedLockSuiteTest extends ShedLockSuiteOverLocker {

    private static LockerLockProvider provider;

    @BeforeAll
    static void open() {
        provider = LockerLockProvider.open(HBaseTestCluster.get().uri("shedlock_suite", ""));
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
