package dev.locker.hbase;

import dev.locker.spi.PermanentStoreException;
import dev.locker.spi.TemporaryStoreException;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.TableExistsException;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptor;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.TableDescriptor;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.util.Bytes;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;

/** Finds a table and checks its column families, creating it when allowed. */
final class HBaseTables {

    private static final Logger log = LoggerFactory.getLogger(HBaseTables.class);

    /** How long a table's creation may take once the cluster answered: a master procedure, seconds when busy. */
    static final long CREATE_BUDGET_MS = 60_000;

    private HBaseTables() {
    }

    /**
     * Returns the descriptor of {@code name}, created with {@code families} and the descriptor values {@code values}
     * when it is missing and {@code create} is true. A missing table (with create off) or a missing family is a {@link PermanentStoreException}; an unreachable
     * cluster a {@link dev.locker.spi.TemporaryStoreException}, within the client's operation timeout.
     */
    static TableDescriptor ensure(Connection connection, TableName name, List<ColumnFamilyDescriptor> families,
                                  Map<String, String> values, boolean create, String where) {
        // HBase's nested retries (ZooKeeper reads inside meta lookups inside RPC retries) can outlast the operation
        // timeout several times over when the quorum is down: give the whole check one deadline of its own
        long deadlineMs = connection.getConfiguration().getLong(HConstants.HBASE_CLIENT_OPERATION_TIMEOUT, 10_000L);
        AtomicBoolean creating = new AtomicBoolean();
        FutureTask<TableDescriptor> task = new FutureTask<>(
                () -> ensureNow(connection, name, families, values, create, where, creating));
        Thread t = new Thread(task, "locker-hbase-open-" + name);
        t.setDaemon(true);
        t.start();
        try {
            try {
                return task.get(deadlineMs, TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                if (!creating.get()) {
                    throw e;
                }
                // the cluster answered and runs the table's creation, a master procedure that takes seconds on a
                // busy cluster: that gets a budget of its own, so a slow creation is not taken for an outage
                return task.get(Math.max(deadlineMs, CREATE_BUDGET_MS), TimeUnit.MILLISECONDS);
            }
        } catch (TimeoutException e) {
            task.cancel(true);
            throw new TemporaryStoreException("opening table " + name + " on " + where + ": no answer within the "
                    + "operation timeout of " + deadlineMs + " ms" + (creating.get()
                    ? " and the table's creation took longer than " + Math.max(deadlineMs, CREATE_BUDGET_MS) + " ms"
                    : " (cluster or ZooKeeper quorum unreachable?)"), e);
        } catch (InterruptedException e) {
            task.cancel(true);
            Thread.currentThread().interrupt();
            throw new TemporaryStoreException("interrupted while opening table " + name + " on " + where, e);
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            if (c instanceof RuntimeException) {
                throw (RuntimeException) c;
            }
            if (c instanceof Error) {
                throw (Error) c;
            }
            throw new PermanentStoreException("opening table " + name + " on " + where + " failed: " + c, c);
        }
    }

    private static TableDescriptor ensureNow(Connection connection, TableName name, List<ColumnFamilyDescriptor> families,
                                             Map<String, String> values, boolean create, String where,
                                             AtomicBoolean creating) {
        try (Admin admin = connection.getAdmin()) {
            if (!admin.tableExists(name)) {
                if (!create) {
                    throw new PermanentStoreException("table " + name + " does not exist on " + where
                            + " and createTable is off: create it (families "
                            + families.stream().map(ColumnFamilyDescriptor::getNameAsString).toList()
                            + ") or allow createTable", null);
                }
                TableDescriptorBuilder b = TableDescriptorBuilder.newBuilder(name);
                for (ColumnFamilyDescriptor f : families) {
                    b.setColumnFamily(f);
                }
                values.forEach(b::setValue);
                creating.set(true);
                try {
                    admin.createTable(b.build());
                    log.info("Created table {} with families {} on {}", name, families, where);
                } catch (TableExistsException raced) {
                    log.debug("Table {} was created concurrently on {}", name, where);
                }
            }
            TableDescriptor d = admin.getDescriptor(name);
            for (ColumnFamilyDescriptor f : families) {
                if (!d.hasColumnFamily(f.getName())) {
                    throw new PermanentStoreException("table " + name + " on " + where + " has no column family '"
                            + Bytes.toString(f.getName()) + "' (it has " + d.getColumnFamilyNames().stream()
                            .map(Bytes::toString).toList() + ")", null);
                }
            }
            return d;
        } catch (IOException e) {
            throw HBaseErrors.translate(e, "opening table " + name, where);
        }
    }
}
