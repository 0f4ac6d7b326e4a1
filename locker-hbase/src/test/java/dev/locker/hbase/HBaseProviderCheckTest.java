package dev.locker.hbase;

import dev.locker.api.LockerConfig;
import dev.locker.api.Lockers;
import dev.locker.testkit.ProviderCheckSuite;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertThrows;

/** {@code hbase://} keeps the check contract: check() reaches no ZooKeeper (the listener stands for the quorum). */
class HBaseProviderCheckTest extends ProviderCheckSuite {

    @Override
    protected String baseUri() {
        return "hbase://127.0.0.1:" + port() + "/locker_locks";
    }

    @Test
    void hbaseOptionsAreCheckedToo() {
        LockerConfig c = LockerConfig.defaults();
        assertThrows(IllegalArgumentException.class, () -> Lockers.check(baseUri() + "?ttl=0s", c));
        assertThrows(IllegalArgumentException.class, () -> Lockers.check(baseUri() + "?maxKeyBytes=100000", c),
                "a lock row of that size does not fit HBase's row length");
        assertThrows(IllegalArgumentException.class, () -> Lockers.check("hbase://127.0.0.1:" + port() + "/bad table", c));
        Lockers.check(baseUri() + "?createTable=false&clientRetries=1", c);
        assertNoIo();
    }
}
