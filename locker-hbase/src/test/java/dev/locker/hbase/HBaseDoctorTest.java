package dev.locker.hbase;

import dev.locker.spi.DeploymentCheck;
import dev.locker.spi.DeploymentCheck.Finding;
import dev.locker.spi.DeploymentCheck.Level;
import dev.locker.api.KeyColumn;
import dev.locker.api.Locker;
import dev.locker.api.Lockers;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The hbase:// deployment checks on the real mini cluster (shared by the module's test classes). */
class HBaseDoctorTest {

    private static final HBaseTestCluster CLUSTER = HBaseTestCluster.get();

    private static Finding find(List<Finding> findings, String check) {
        return findings.stream().filter(f -> f.check().equals(check)).findFirst()
                .orElseThrow(() -> new AssertionError("no " + check + " in " + findings));
    }

    @Test
    void aTableALockerCreatedPassesAndAMissingOneIsNotCreated() throws Exception {
        DeploymentCheck check = DeploymentCheck.forScheme("hbase").orElseThrow();
        String uri = CLUSTER.uri("doctor_ok", "expiry=30s");
        List<Finding> missing = check.check(CLUSTER.uri("doctor_missing", "createTable=false"), s -> { });
        assertEquals(Level.FAIL, find(missing, "table").level(), missing::toString);
        try (Admin admin = CLUSTER.connection().getAdmin()) {
            assertFalse(admin.tableExists(TableName.valueOf("doctor_missing")), "the doctor only reads");
        }
        try (Locker locker = Lockers.open(uri)) {
            locker.holder(KeyColumn.named("x"));
        }
        List<Finding> ok = check.check(uri, s -> { });
        assertTrue(ok.stream().noneMatch(f -> f.level() == Level.FAIL), ok::toString);
        assertEquals(Level.OK, find(ok, "claims-ttl").level(), ok::toString);
        assertEquals(Level.OK, find(ok, "token-ttl").level(), ok::toString);
    }

    @Test
    void aTokenFamilyWithATtlAndAClaimsTtlShorterThanTheExpiryFail() throws Exception {
        TableName name = TableName.valueOf("doctor_bad_ttls");
        try (Admin admin = CLUSTER.connection().getAdmin()) {
            admin.createTable(TableDescriptorBuilder.newBuilder(name)
                    .setColumnFamily(ColumnFamilyDescriptorBuilder.newBuilder("l".getBytes()).setTimeToLive(10).build())
                    .setColumnFamily(ColumnFamilyDescriptorBuilder.newBuilder("t".getBytes()).setTimeToLive(86400).build())
                    .build());
        }
        List<Finding> findings = new HBaseDoctor().check(CLUSTER.uri("doctor_bad_ttls", "expiry=30s"), s -> { });
        assertEquals(Level.FAIL, find(findings, "claims-ttl").level(), findings::toString);
        assertEquals(Level.FAIL, find(findings, "token-ttl").level(), findings::toString);
    }
}
