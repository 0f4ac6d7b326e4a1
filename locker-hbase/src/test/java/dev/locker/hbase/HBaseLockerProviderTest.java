package dev.locker.hbase;

import dev.locker.api.KeyColumn;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.Lockers;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code hbase://} URIs: parsing, options, and Lockers.open on the mini cluster. */
class HBaseLockerProviderTest {

    @Test
    void theUriNamesQuorumPortTableAndOptions() {
        HBaseOptions o = HBaseOptions.fromUri("hbase://zk1,zk2,zk3:2182/ns:locks?znodeParent=/hbase-unsecure&family=c"
                + "&tokenFamily=f&createTable=false&ttl=2h&rpcTimeout=2s&operationTimeout=10s&clientRetries=5"
                + "&clientPause=50ms&serverClockSkew=2s&expiry=30s");
        assertEquals("zk1,zk2,zk3:2182", o.zkQuorum());
        assertEquals(2182, o.zkPort());
        assertEquals("/hbase-unsecure", o.znodeParent());
        assertEquals("ns:locks", o.table());
        assertEquals("c", o.family());
        assertEquals("f", o.tokenFamily());
        assertFalse(o.createTable());
        assertEquals(Duration.ofHours(2), o.ttl());
        assertEquals(Duration.ofSeconds(2), o.rpcTimeout());
        assertEquals(Duration.ofSeconds(10), o.operationTimeout());
        assertEquals(5, o.clientRetries());
        assertEquals(Duration.ofMillis(50), o.clientPause());
        assertEquals(Duration.ofSeconds(2), o.serverClockSkew());
    }

    @Test
    void defaults() {
        HBaseOptions o = HBaseOptions.fromUri("hbase://zk");
        assertEquals("zk", o.zkQuorum());
        assertEquals(2181, o.zkPort());
        assertEquals("/hbase", o.znodeParent());
        assertEquals("locker_locks", o.table());
        assertEquals("l", o.family());
        assertEquals("t", o.tokenFamily());
        assertTrue(o.createTable());
        assertEquals(Duration.ofDays(7), o.ttl());
        assertEquals(Duration.ofSeconds(10), o.operationTimeout());
        assertEquals(Duration.ofSeconds(3), o.rpcTimeout());
        assertEquals(3, o.clientRetries());
        assertEquals(Duration.ofSeconds(10), o.serverClockSkew());
    }

    @Test
    void malformedUrisAreRefusedNamingTheProblem() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> HBaseOptions.fromUri("hbase:///t"));
        assertTrue(e.getMessage().contains("quorum"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> HBaseOptions.fromUri("hbase://zk:99999/t"));
        assertTrue(e.getMessage().contains("99999"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> HBaseOptions.fromUri("hbase://zk/t?tabel=x"));
        assertTrue(e.getMessage().contains("tabel"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> HBaseOptions.fromUri("hbase://zk/bad table"));
        assertTrue(e.getMessage().contains("bad table"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> HBaseOptions.fromUri("hbase://zk/t?family=t"));
        assertTrue(e.getMessage().contains("differ"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> HBaseOptions.fromUri("hbase://zk/t?ttl=soon"));
        e = assertThrows(IllegalArgumentException.class, () -> HBaseOptions.fromUri("hbase://zk/t?serverClockSkew=-1s"));
        assertTrue(e.getMessage().contains("serverClockSkew"), e.getMessage());
    }

    @Test
    void lockersOpenFindsTheBackendAndCreatesTheTable() throws Exception {
        HBaseTestCluster cluster = HBaseTestCluster.get();
        String uri = cluster.uri("provider_locks", "expiry=20s&why=provider+test");
        try (Locker a = Lockers.open(uri, LockerConfig.defaults()); Locker b = Lockers.open(uri)) {
            assertInstanceOf(HBaseLocker.class, a);
            assertEquals(Duration.ofSeconds(20), a.config().expiry(), "URI options override the config");
            KeyColumn lock = KeyColumn.named("provider-" + LockerConfig.randomRid());
            Object tx = new Object();
            a.writeLock(lock, tx);
            a.checkLocks(tx);
            assertEquals(a.rid(), b.holder(lock).orElseThrow().rid());
            assertEquals("provider test", b.holder(lock).orElseThrow().why());
            a.deleteLocks(tx);
        }
        try (Admin admin = cluster.connection().getAdmin()) {
            assertTrue(admin.tableExists(TableName.valueOf("provider_locks")));
        }
    }
}
