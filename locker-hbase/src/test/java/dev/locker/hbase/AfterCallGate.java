package dev.locker.hbase;

import org.apache.hadoop.hbase.client.CheckAndMutate;
import org.apache.hadoop.hbase.client.CheckAndMutateResult;
import org.apache.hadoop.hbase.coprocessor.ObserverContext;
import org.apache.hadoop.hbase.coprocessor.RegionCoprocessor;
import org.apache.hadoop.hbase.coprocessor.RegionCoprocessorEnvironment;
import org.apache.hadoop.hbase.coprocessor.RegionObserver;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.Arrays;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A region observer for one chosen check-and-mutate on a row: it tells when the region finished it, holds its reply
 * after the region applied it, or fails it with the region server's own InterruptedIOException.
 */
public final class AfterCallGate implements RegionCoprocessor, RegionObserver {

    /** What the gate does to the first check-and-mutate on its row. */
    enum Kind { TELL_DONE, HOLD_REPLY, FAIL_INTERRUPTED }

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

        /** Lets a held reply go, or disarms a gate that saw no call. */
        void open() {
            opened.countDown();
            ARMED.compareAndSet(this, null);
        }
    }

    private static final AtomicReference<Armed> ARMED = new AtomicReference<>();

    /** Arms the gate for the next check-and-mutate on {@code row}. */
    static Armed arm(Kind kind, byte[] row) {
        Armed armed = new Armed(kind, row);
        if (!ARMED.compareAndSet(null, armed)) {
            throw new IllegalStateException("an after-call gate is armed already");
        }
        return armed;
    }

    @Override
    public Optional<RegionObserver> getRegionObserver() {
        return Optional.of(this);
    }

    @Override
    public CheckAndMutateResult preCheckAndMutate(ObserverContext<RegionCoprocessorEnvironment> c,
                                                  CheckAndMutate checkAndMutate, CheckAndMutateResult result)
            throws IOException {
        Armed armed = take(Kind.FAIL_INTERRUPTED, checkAndMutate.getRow());
        if (armed != null) {
            armed.entered.countDown();
            // what a handler interrupted while it waits for a row lock or a WAL sync answers
            throw new InterruptedIOException("region server handler interrupted");
        }
        return result;
    }

    @Override
    public CheckAndMutateResult postCheckAndMutate(ObserverContext<RegionCoprocessorEnvironment> c,
                                                   CheckAndMutate checkAndMutate, CheckAndMutateResult result) {
        Armed armed = take(Kind.TELL_DONE, checkAndMutate.getRow());
        if (armed == null) {
            armed = take(Kind.HOLD_REPLY, checkAndMutate.getRow());
        }
        if (armed == null) {
            return result;
        }
        armed.entered.countDown();
        if (armed.kind == Kind.HOLD_REPLY) {
            try {
                // bounded: a test that fails before opening the gate must not hold a region server handler for good
                armed.opened.await(60, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        return result;
    }

    private static Armed take(Kind kind, byte[] row) {
        Armed armed = ARMED.get();
        if (armed == null || armed.kind != kind || !Arrays.equals(armed.row, row)
                || !ARMED.compareAndSet(armed, null)) {
            return null;
        }
        return armed;
    }
}
