package dev.locker.cli;

import dev.locker.api.KeyColumn;
import dev.locker.api.Locker;
import dev.locker.api.Lockers;
import dev.locker.hbase.HBaseClients;
import dev.locker.hbase.HBaseLayout;
import dev.locker.hbase.HBaseOptions;
import dev.locker.hbase.HBaseTestCluster;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code locker hbase-layout} reads a lock table's layout and switches it with --finalize, on the mini cluster. */
class CliHBaseLayoutTest {

    private static final HBaseTestCluster CLUSTER = HBaseTestCluster.get();

    /** A lock table as earlier builds made it: the default families, no layout value. */
    private static String tableWithoutLayout(String name) throws Exception {
        String uri = CLUSTER.uri(name, "");
        try (Connection c = HBaseClients.connect(HBaseOptions.fromUri(uri)); Admin admin = c.getAdmin()) {
            admin.createTable(TableDescriptorBuilder.newBuilder(TableName.valueOf(name))
                    .setColumnFamily(ColumnFamilyDescriptorBuilder.of("l"))
                    .setColumnFamily(ColumnFamilyDescriptorBuilder.of("t"))
                    .build());
            assertNull(admin.getDescriptor(TableName.valueOf(name)).getValue(HBaseLayout.KEY));
        }
        return uri;
    }

    @Test
    void aTableOfAnEarlierBuildIsShownOnLayoutOneAndFinalizeSwitchesItOnce() throws Exception {
        String uri = tableWithoutLayout("cli_layout_previous");
        CliRun shown = CliRun.run(Map.of(), "hbase-layout", "--uri", uri);
        assertEquals(Cli.OK, shown.code(), shown::toString);
        assertTrue(shown.out().contains("layout 1, a release leaves the empty value"), shown::toString);
        assertTrue(shown.out().contains("Once every locker of the table runs this build: locker hbase-layout "
                + "--finalize"), shown::toString);
        assertEquals("1", HBaseLayout.read(uri).layout(), "reading changes nothing");

        CliRun switched = CliRun.run(Map.of(), "hbase-layout", "--finalize", "--uri", uri);
        assertEquals(Cli.OK, switched.code(), switched::toString);
        assertTrue(switched.out().contains("switched from layout 1 to 2"), switched::toString);
        assertTrue(switched.out().contains("until they open the table again"), switched::toString);
        assertEquals("2", HBaseLayout.read(uri).layout());

        CliRun again = CliRun.run(Map.of(), "--json", "hbase-layout", "--finalize", "--uri", uri);
        assertEquals(Cli.OK, again.code(), again::toString);
        assertTrue(again.out().contains("\"layout\":\"2\"") && again.out().contains("\"switched\":false"),
                again::toString);
    }

    @Test
    void aTableALockerCreatedIsOnLayoutTwoAndTheDoctorSaysOk() {
        String uri = CLUSTER.uri("cli_layout_created", "");
        try (Locker locker = Lockers.open(uri)) {
            locker.holder(KeyColumn.named("x"));
        }
        CliRun shown = CliRun.run(Map.of(), "--json", "hbase-layout", "--uri", uri);
        assertEquals(Cli.OK, shown.code(), shown::toString);
        assertTrue(shown.out().contains("\"layout\":\"2\"") && shown.out().contains("\"current\":true"),
                shown::toString);
        CliRun doctor = CliRun.run(Map.of(), "doctor", "--uri", uri);
        assertTrue(doctor.out().lines().anyMatch(l -> l.startsWith("OK") && l.contains("layout 2")), doctor::toString);
    }

    @Test
    void aMissingTableIsRefusedAndNotCreated() throws Exception {
        String uri = CLUSTER.uri("cli_layout_missing", "");
        CliRun run = CliRun.run(Map.of(), "hbase-layout", "--finalize", "--uri", uri);
        assertEquals(Cli.REFUSED, run.code(), run::toString);
        assertTrue(run.err().contains("does not exist"), run::toString);
        try (Connection c = HBaseClients.connect(HBaseOptions.fromUri(uri)); Admin admin = c.getAdmin()) {
            assertFalse(admin.tableExists(TableName.valueOf("cli_layout_missing")));
        }
    }

    @Test
    void aUriOfAnotherBackendIsAUsageErrorBeforeAnyIo() {
        CliRun run = CliRun.run(Map.of(), "hbase-layout", "--uri", "redis://127.0.0.1:1");
        assertEquals(Cli.USAGE, run.code(), run::toString);
        assertTrue(run.err().contains("hbase-layout works on hbase:// lock tables"), run::toString);
    }
}
