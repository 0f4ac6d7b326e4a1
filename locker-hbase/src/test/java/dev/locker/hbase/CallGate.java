package dev.locker.hbase;

import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.CheckAndMutate;
import org.apache.hadoop.hbase.client.CheckAndMutateResult;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Mutation;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.coprocessor.ObserverContext;
import org.apache.hadoop.hbase.coprocessor.RegionCoprocessor;
import org.apache.hadoop.hbase.coprocessor.RegionCoprocessorEnvironment;
import org.apache.hadoop.hbase.coprocessor.RegionObserver;
import org.apache.hadoop.hbase.regionserver.MiniBatchOperationInProgress;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * A region observer for one chosen call on a row: it holds the call before, while or after the region applies it, tells
 * when the region finished it, or fails it as a stopping region server does. The mini cluster runs in the test's JVM,
 * so the test and the region server share the armed gates: per row, one before the region applies a call, one after.
 */
public final class CallGate implements RegionCoprocessor, RegionObserver {

    /** What a gate does to the first call of its kind on its row. */
    enum Kind {
        /** Holds a get before the region reads the row. */
        GET(false),
        /** Holds a check-and-mutate before the region applies it. */
        CHECK_AND_MUTATE(false),
        /** Holds a write after its row lock and its check, just before the region applies it. */
        BATCH_MUTATE(false),
        /** Fails a check-and-mutate with the region server's own InterruptedIOException, a stopped handler's. */
        FAIL_INTERRUPTED(false),
        /** Tells when the region finished a check-and-mutate. */
        TELL_DONE(true),
        /** Holds the reply of a check-and-mutate the region applied. */
        HOLD_REPLY(true);

        private final boolean after;

        Kind(boolean after) {
            this.after = after;
        }
    }

    /** One armed gate. */
    static final class Armed {
        private final Kind kind;
        private final byte[] row;
        private final CountDownLatch entered = new CountDownLatch(1);
        private final CountDownLatch opened = new CountDownLatch(1);

        private Armed(Kind kind, byte[] row) {
            this.kind = kind;
            this.row = row;
        }

        /** Waits until the call reached the gate; false when none came within {@code seconds}. */
        boolean awaitEntered(long seconds) throws InterruptedException {
            return entered.await(seconds, TimeUnit.SECONDS);
        }

        /** Lets a held call go on, or disarms a gate that saw no call. */
        void open() {
            opened.countDown();
            slots(kind).remove(ByteBuffer.wrap(row), this);
        }

        /** Holds the calling handler until the test opens the gate. */
        private void hold() {
            try {
                // bounded: a test that fails before opening the gate must not hold a region server handler for good
                opened.await(60, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** The gates armed, by row: test classes that run side by side each arm gates on rows of their own. */
    private static final Map<ByteBuffer, Armed> BEFORE = new ConcurrentHashMap<>();
    private static final Map<ByteBuffer, Armed> AFTER = new ConcurrentHashMap<>();

    private static Map<ByteBuffer, Armed> slots(Kind kind) {
        return kind.after ? AFTER : BEFORE;
    }

    /** Arms a gate for the next call of {@code kind} on {@code row}. */
    static Armed arm(Kind kind, byte[] row) {
        Armed armed = new Armed(kind, row);
        if (slots(kind).putIfAbsent(ByteBuffer.wrap(row), armed) != null) {
            throw new IllegalStateException("a gate " + (kind.after ? "after" : "before")
                    + " the region is armed already on this row");
        }
        return armed;
    }

    /** Creates the lock table of {@code options} with this gate on it, and the {@code layout}, unless it exists. */
    static void createTable(HBaseOptions options, TableLayout layout) throws IOException {
        TableName name = TableName.valueOf(options.table());
        try (Admin admin = HBaseTestCluster.get().connection().getAdmin()) {
            if (!admin.tableExists(name)) {
                admin.createTable(TableDescriptorBuilder.newBuilder(name).setColumnFamilies(LockTable.families(options))
                        .setValue(TableLayout.KEY, layout.value).setCoprocessor(CallGate.class.getName()).build());
            }
        }
    }

    @Override
    public Optional<RegionObserver> getRegionObserver() {
        return Optional.of(this);
    }

    @Override
    public void preGetOp(ObserverContext<RegionCoprocessorEnvironment> c, Get get, List<Cell> result) {
        Armed armed = take(get.getRow(), Kind.GET);
        if (armed != null) {
            armed.entered.countDown();
            armed.hold();
        }
    }

    @Override
    public CheckAndMutateResult preCheckAndMutate(ObserverContext<RegionCoprocessorEnvironment> c,
                                                  CheckAndMutate checkAndMutate, CheckAndMutateResult result)
            throws IOException {
        Armed armed = take(checkAndMutate.getRow(), Kind.CHECK_AND_MUTATE, Kind.FAIL_INTERRUPTED);
        if (armed != null) {
            armed.entered.countDown();
            if (armed.kind == Kind.FAIL_INTERRUPTED) {
                // what a handler interrupted while it waits for a row lock or a WAL sync answers
                throw new InterruptedIOException("region server handler interrupted");
            }
            armed.hold();
        }
        return result;
    }

    @Override
    public void preBatchMutate(ObserverContext<RegionCoprocessorEnvironment> c,
                               MiniBatchOperationInProgress<Mutation> miniBatchOp) {
        Armed armed = miniBatchOp.size() == 0 ? null : take(miniBatchOp.getOperation(0).getRow(), Kind.BATCH_MUTATE);
        if (armed != null) {
            armed.entered.countDown();
            armed.hold();
        }
    }

    @Override
    public CheckAndMutateResult postCheckAndMutate(ObserverContext<RegionCoprocessorEnvironment> c,
                                                   CheckAndMutate checkAndMutate, CheckAndMutateResult result) {
        Armed armed = take(checkAndMutate.getRow(), Kind.TELL_DONE, Kind.HOLD_REPLY);
        if (armed != null) {
            armed.entered.countDown();
            if (armed.kind == Kind.HOLD_REPLY) {
                armed.hold();
            }
        }
        return result;
    }

    /** The gate armed for a call of one of {@code kinds} on {@code row}, disarmed; null when there is none. */
    private static Armed take(byte[] row, Kind... kinds) {
        Map<ByteBuffer, Armed> slots = slots(kinds[0]);
        ByteBuffer key = ByteBuffer.wrap(row);
        Armed armed = slots.get(key);
        if (armed == null || !Arrays.asList(kinds).contains(armed.kind) || !slots.remove(key, armed)) {
            return null;
        }
        return armed;
    }
}
