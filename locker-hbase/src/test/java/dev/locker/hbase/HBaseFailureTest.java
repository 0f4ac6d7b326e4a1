package dev.locker.hbase;

import dev.locker.api.KeyColumn;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.Lockers;
import dev.locker.api.LockingException;
import dev.locker.api.PermanentLockingException;
import dev.locker.spi.PermanentStoreException;
import dev.locker.api.TemporaryLockingException;
import dev.locker.spi.TemporaryStoreException;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.net.ServerSocket;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What callers see when the cluster, the table or a region is not there: clear exceptions, in bounded time. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Order(2) // among the longest classes: started first
class HBaseFailureTest {

    private final HBaseTestCluster cluster = HBaseTestCluster.get();
    private Connection connection;

    @BeforeAll
    void connect() {
        connection = cluster.newConnection(Duration.ofSeconds(3));
    }

    @AfterAll
    void close() throws Exception {
        connection.close();
    }

    private static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private void createTable(String name, ColumnFamilyDescriptorBuilder... families) throws Exception {
        try (Admin admin = connection.getAdmin()) {
            TableDescriptorBuilder d = TableDescriptorBuilder.newBuilder(TableName.valueOf(name));
            for (ColumnFamilyDescriptorBuilder f : families) {
                d.setColumnFamily(f.build());
            }
            admin.createTable(d.build());
        }
    }

    @Test
    void anUnreachableClusterFailsTheOpenQuicklyNamingIt() throws Exception {
        int port = freePort(); // nothing listens there
        String uri = "hbase://127.0.0.1:" + port + "/locks?operationTimeout=3s&rpcTimeout=1s";
        long t0 = System.nanoTime();
        LockingException e = assertThrows(LockingException.class, () -> Lockers.open(uri));
        long ms = (System.nanoTime() - t0) / 1_000_000;
        System.out.println("[locker-hbase] open on a dead cluster failed after " + ms + " ms: " + e.getMessage());
        assertInstanceOf(TemporaryLockingException.class, e, "an unreachable cluster is temporary: " + e);
        assertNotNull(e.getCause());
        assertTrue(e.getMessage().contains("127.0.0.1:" + port), e.getMessage());
    }

    @Test
    void aMissingTableIsPermanentWhenCreationIsOff() {
        HBaseOptions o = HBaseOptions.builder().table("no_such_lock_table").createTable(false).build();
        PermanentLockingException e = assertThrows(PermanentLockingException.class,
                () -> HBaseLocker.builder(connection).options(o).build());
        assertTrue(e.getMessage().contains("no_such_lock_table") && e.getMessage().contains("createTable"), e.getMessage());
        PermanentStoreException se = assertThrows(PermanentStoreException.class,
                () -> HBaseKeyColumnValueStore.open(connection, "no_such_data_table", "d", false));
        assertTrue(se.getMessage().contains("no_such_data_table"), se.getMessage());
    }

    @Test
    void aMissingTableIsCreatedWithBothFamilies() throws Exception {
        HBaseOptions o = HBaseOptions.builder().table("created_on_open").build();
        try (Locker l = HBaseLocker.builder(connection).options(o).build(); Admin admin = connection.getAdmin()) {
            var d = admin.getDescriptor(TableName.valueOf("created_on_open"));
            assertTrue(d.hasColumnFamily(o.familyBytes()) && d.hasColumnFamily(o.tokenFamilyBytes()));
            assertTrue(d.getColumnFamily(o.familyBytes()).getTimeToLive() == (int) o.ttl().toSeconds());
            l.writeLock(KeyColumn.named("works"), new Object());
        }
    }

    @Test
    void aMissingFamilyIsPermanentAndNamed() throws Exception {
        createTable("lacks_token_family", ColumnFamilyDescriptorBuilder.newBuilder("l".getBytes()));
        HBaseOptions o = HBaseOptions.builder().table("lacks_token_family").build();
        PermanentLockingException e = assertThrows(PermanentLockingException.class,
                () -> HBaseLocker.builder(connection).options(o).build());
        assertTrue(e.getMessage().contains("'t'"), e.getMessage());
    }

    @Test
    void unsafeTtlsAreRefused() throws Exception {
        createTable("short_claims_ttl", ColumnFamilyDescriptorBuilder.newBuilder("l".getBytes()).setTimeToLive(10),
                ColumnFamilyDescriptorBuilder.newBuilder("t".getBytes()));
        HBaseOptions o = HBaseOptions.builder().table("short_claims_ttl").build();
        PermanentLockingException e = assertThrows(PermanentLockingException.class, () -> HBaseLocker.builder(connection)
                .options(o).config(LockerConfig.builder().expiry(Duration.ofSeconds(60)).build()).build());
        assertTrue(e.getMessage().contains("TTL"), e.getMessage());

        createTable("token_family_with_ttl", ColumnFamilyDescriptorBuilder.newBuilder("l".getBytes()).setTimeToLive(3600),
                ColumnFamilyDescriptorBuilder.newBuilder("t".getBytes()).setTimeToLive(3600));
        HBaseOptions o2 = HBaseOptions.builder().table("token_family_with_ttl").build();
        e = assertThrows(PermanentLockingException.class, () -> HBaseLocker.builder(connection).options(o2).build());
        assertTrue(e.getMessage().contains("fencing"), e.getMessage());
    }

    @Test
    void aTableDroppedUnderAnOpenLockerIsPermanent() throws Exception {
        HBaseOptions o = HBaseOptions.builder().table("dropped_later").build();
        try (Locker l = HBaseLocker.builder(connection).options(o).build()) {
            l.writeLock(KeyColumn.named("before"), new Object());
            try (Admin admin = connection.getAdmin()) {
                admin.disableTable(TableName.valueOf("dropped_later"));
                admin.deleteTable(TableName.valueOf("dropped_later"));
            }
            PermanentLockingException e = assertThrows(PermanentLockingException.class,
                    () -> l.writeLock(KeyColumn.named("after"), new Object()));
            assertNotNull(e.getCause());
            assertTrue(e.getMessage().contains("dropped_later"), e.getMessage());
        }
    }

    @Test
    void anOfflineRegionIsTemporaryAndBounded() {
        HBaseOptions o = HBaseOptions.builder().table("offline_region").build();
        HBaseKeyColumnValueStore store = HBaseKeyColumnValueStore.open(connection, "offline_region_data", "d", true);
        try (Locker l = HBaseLocker.builder(connection).options(o).build()) {
            KeyColumn lock = KeyColumn.named("x");
            l.holder(lock); // region located and cached
            store.getSlice(new byte[]{1}, new byte[0], new byte[0], store.beginTransaction());
            cluster.setRegionsOnline(TableName.valueOf("offline_region"), false);
            cluster.setRegionsOnline(TableName.valueOf("offline_region_data"), false);
            try {
                long t0 = System.nanoTime();
                TemporaryLockingException e = assertThrows(TemporaryLockingException.class, () -> l.holder(lock));
                long ms = (System.nanoTime() - t0) / 1_000_000;
                System.out.println("[locker-hbase] holder() on an offline region failed after " + ms + " ms: " + e.getMessage());
                assertNotNull(e.getCause());
                assertThrows(TemporaryStoreException.class,
                        () -> store.getSlice(new byte[]{1}, new byte[0], new byte[0], store.beginTransaction()));
            } finally {
                cluster.setRegionsOnline(TableName.valueOf("offline_region"), true);
                cluster.setRegionsOnline(TableName.valueOf("offline_region_data"), true);
            }
            Object tx = new Object();
            l.writeLock(lock, tx);
            l.deleteLocks(tx);
        }
    }
}
