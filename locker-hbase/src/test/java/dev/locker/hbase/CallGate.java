package dev.locker.hbase;

import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.client.CheckAndMutate;
import org.apache.hadoop.hbase.client.CheckAndMutateResult;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Mutation;
import org.apache.hadoop.hbase.coprocessor.ObserverContext;
import org.apache.hadoop.hbase.coprocessor.RegionCoprocessor;
import org.apache.hadoop.hbase.coprocessor.RegionCoprocessorEnvironment;
import org.apache.hadoop.hbase.coprocessor.RegionObserver;
import org.apache.hadoop.hbase.regionserver.MiniBatchOperationInProgress;

import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A region observer that holds one chosen call on the region server until the test lets it go. The mini cluster runs
 * in the test's JVM, so the test and the region server share this class's one armed gate.
 */
public final class CallGate implements RegionCoprocessor, RegionObserver {

    /**
     * The kinds of call a gate can hold: a get, a check-and-mutate before its row lock, or a write after its row lock
     * and its check, just before the region applies it.
     */
    enum Kind { GET, CHECK_AND_MUTATE, BATCH_MUTATE }

    /** One armed gate: the first call of its kind on its row waits here. */
    static final class Armed {
        private final Kind kind;
        private final byte[] row;
        private final CountDownLatch entered = new CountDownLatch(1);
        private final CountDownLatch opened = new CountDownLatch(1);

        private Armed(Kind kind, byte[] row) {
            this.kind = kind;
            this.row = row;
        }

        /** Waits until a call is held at the gate; false when none came within {@code seconds}. */
        boolean awaitEntered(long seconds) throws InterruptedException {
            return entered.await(seconds, TimeUnit.SECONDS);
        }

        /** Lets the held call go on. */
        void open() {
            opened.countDown();
            ARMED.compareAndSet(this, null);
        }
    }

    private static final AtomicReference<Armed> ARMED = new AtomicReference<>();

    /** Arms the gate for the next call of {@code kind} on {@code row}. */
    static Armed arm(Kind kind, byte[] row) {
        Armed armed = new Armed(kind, row);
        if (!ARMED.compareAndSet(null, armed)) {
            throw new IllegalStateException("a gate is armed already");
        }
        return armed;
    }

    @Override
    public Optional<RegionObserver> getRegionObserver() {
        return Optional.of(this);
    }

    @Override
    public void preGetOp(ObserverContext<RegionCoprocessorEnvironment> c, Get get, List<Cell> result) {
        hold(Kind.GET, get.getRow());
    }

    @Override
    public CheckAndMutateResult preCheckAndMutate(ObserverContext<RegionCoprocessorEnvironment> c,
                                                  CheckAndMutate checkAndMutate, CheckAndMutateResult result) {
        hold(Kind.CHECK_AND_MUTATE, checkAndMutate.getRow());
        return result;
    }

    @Override
    public void preBatchMutate(ObserverContext<RegionCoprocessorEnvironment> c,
                               MiniBatchOperationInProgress<Mutation> miniBatchOp) {
        if (miniBatchOp.size() > 0) {
            hold(Kind.BATCH_MUTATE, miniBatchOp.getOperation(0).getRow());
        }
    }

    private static void hold(Kind kind, byte[] row) {
        Armed armed = ARMED.get();
        if (armed == null || armed.kind != kind || !Arrays.equals(armed.row, row)
                || !ARMED.compareAndSet(armed, null)) {
            return;
        }
        armed.entered.countDown();
        try {
            // bounded: a test that fails before opening the gate must not hold a region server handler for good
            armed.opened.await(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
