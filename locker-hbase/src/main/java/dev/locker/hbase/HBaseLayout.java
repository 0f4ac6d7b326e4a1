package dev.locker.hbase;

import dev.locker.api.PermanentLockingException;
import dev.locker.api.TemporaryLockingException;
import dev.locker.spi.StoreException;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.TableDescriptor;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Reads and switches the layout of an {@code hbase://} lock table: which free value a holder's release writes. The
 * table descriptor's value {@value #KEY} holds it; a table this build creates gets {@link #CURRENT}. A table
 * without it stays on the previous layout, which lockers of earlier builds can read.
 *
 * <p>Switch a table ({@link #finalizeLayout}, {@code locker hbase-layout --finalize}) once every locker of it runs
 * this build. Lockers read the value when they open the table, so an open one keeps its layout until it opens again.
 * Lockers on both layouts may share the table meanwhile: docs/safety.md says why that is safe.
 */
public final class HBaseLayout {

    private static final Logger log = LoggerFactory.getLogger(HBaseLayout.class);

    /** The descriptor key, as the hbase shell's {@code alter 't', METADATA => {'locker.layout' => '2'}} sets it. */
    public static final String KEY = TableLayout.KEY;

    /** The layout this build gives the tables it creates, and the one {@link #finalizeLayout} switches to. */
    public static final String CURRENT = TableLayout.CREATED.value;

    private HBaseLayout() {
    }

    /**
     * What a lock table says about its layout.
     *
     * @param table       the table's name
     * @param layout      the layout value, {@code "1"} when the descriptor names none; as written when unknown
     * @param known       whether this build knows the layout (lockers of this build refuse a table it does not)
     * @param description what a release writes on it, in a few words
     */
    public record State(String table, String layout, boolean known, String description) {

        /** Whether the table is on {@link HBaseLayout#CURRENT}, whose release leaves {@code free@token}. */
        public boolean isCurrent() {
            return CURRENT.equals(layout);
        }
    }

    /**
     * Reads the layout of the lock table {@code uri} names.
     *
     * @throws IllegalArgumentException  before any I/O, when the URI is malformed
     * @throws PermanentLockingException when the table does not exist
     * @throws TemporaryLockingException when the cluster does not answer within twice the operation timeout
     */
    public static State read(String uri) {
        HBaseOptions options = HBaseOptions.fromUri(uri);
        return withConnection(options, c -> read(c, TableName.valueOf(options.table()), where(options)));
    }

    /**
     * Switches the lock table {@code uri} names to {@link #CURRENT}; nothing changes when it is on it already. Run it
     * only once every locker of the table runs this build: earlier builds cannot read what the new layout writes.
     *
     * @return the table's state before the switch
     * @throws IllegalArgumentException  before any I/O, when the URI is malformed
     * @throws PermanentLockingException when the table does not exist or names a layout this build does not know
     * @throws TemporaryLockingException when the cluster does not answer within twice the operation timeout
     */
    public static State finalizeLayout(String uri) {
        HBaseOptions options = HBaseOptions.fromUri(uri);
        return withConnection(options, c -> finalizeLayout(c, TableName.valueOf(options.table()), where(options)));
    }

    /** {@link #read(String)} on an open connection. */
    static State read(Connection connection, TableName table, String where) {
        try (Admin admin = connection.getAdmin()) {
            return state(descriptor(admin, table, where));
        } catch (IOException e) {
            throw locking(HBaseErrors.translate(e, "reading the layout of table " + table, where));
        }
    }

    /**
     * {@link #finalizeLayout(String)} on an open connection. The descriptor value needs no region to reopen, so the
     * table serves locks throughout, unless it has a coprocessor.
     */
    static State finalizeLayout(Connection connection, TableName table, String where) {
        try (Admin admin = connection.getAdmin()) {
            TableDescriptor d = descriptor(admin, table, where);
            State before = state(d);
            if (!before.known()) {
                throw new PermanentLockingException(TableLayout.unknown(d, where), null);
            }
            if (!before.isCurrent()) {
                // HBase 2.6 compares coprocessor descriptors by identity: a table with any cannot change without a
                // reopen. A reopen moves each region briefly, as the balancer does; calls meanwhile are retried.
                boolean reopen = !d.getCoprocessorDescriptors().isEmpty();
                admin.modifyTable(TableDescriptorBuilder.newBuilder(d).setValue(KEY, CURRENT).build(), reopen);
                log.info("Switched lock table {} on {} from layout {} to {}", table, where, before.layout(), CURRENT);
            }
            return before;
        } catch (IOException e) {
            throw locking(HBaseErrors.translate(e, "switching the layout of table " + table, where));
        }
    }

    private static TableDescriptor descriptor(Admin admin, TableName table, String where) throws IOException {
        if (!admin.tableExists(table)) {
            throw new PermanentLockingException("table " + table + " does not exist on " + where
                    + ": a locker creates it on the current layout", null);
        }
        return admin.getDescriptor(table);
    }

    static State state(TableDescriptor d) {
        TableLayout l = TableLayout.of(d);
        String table = d.getTableName().getNameAsString();
        if (l == null) {
            return new State(table, d.getValue(KEY), false, "unknown to this build; its lockers refuse the table");
        }
        return new State(table, l.value, true, l == TableLayout.TOKEN_ON_RELEASE
                ? "a release leaves free@token, and the next grant checks that one cell"
                : "a release leaves the empty value, and the next grant checks the holder cell and the counter");
    }

    private static String where(HBaseOptions options) {
        return HBaseClients.describe(HBaseClients.configuration(options), options.table());
    }

    private interface WithConnection {
        State apply(Connection c) throws IOException;
    }

    /** Runs {@code call} on a connection of its own, under one deadline: HBase nests its retries on a dead quorum. */
    private static State withConnection(HBaseOptions options, WithConnection call) {
        String where = where(options);
        long deadline = options.operationTimeout().toMillis() * 2;
        Callable<State> task = () -> {
            try (Connection c = HBaseClients.connect(options)) {
                return call.apply(c);
            }
        };
        FutureTask<State> f = new FutureTask<>(task);
        Thread t = new Thread(f, "locker-hbase-layout");
        t.setDaemon(true);
        t.start();
        try {
            return f.get(deadline, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            f.cancel(true);
            throw new TemporaryLockingException("no answer from " + where + " within " + deadline
                    + " ms (cluster or ZooKeeper quorum unreachable?)", null, null, e);
        } catch (InterruptedException e) {
            f.cancel(true);
            Thread.currentThread().interrupt();
            throw new TemporaryLockingException("interrupted while reaching " + where, null, null, e);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException r) {
                throw r;
            }
            if (cause instanceof IOException io) {
                throw locking(HBaseErrors.translate(io, "connecting", where));
            }
            throw new TemporaryLockingException("reaching " + where + " failed: " + cause, null, null, cause);
        }
    }

    private static RuntimeException locking(StoreException s) {
        return s.isTemporary() ? new TemporaryLockingException(s.getMessage(), null, null, s)
                : new PermanentLockingException(s.getMessage(), null, null, s);
    }
}
