package dev.locker.hbase;

import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.client.CheckAndMutate;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.RowMutations;
import org.apache.hadoop.hbase.client.CheckAndMutateResult;
import org.apache.hadoop.hbase.coprocessor.ObserverContext;
import org.apache.hadoop.hbase.coprocessor.RegionCoprocessor;
import org.apache.hadoop.hbase.coprocessor.RegionCoprocessorEnvironment;
import org.apache.hadoop.hbase.coprocessor.RegionObserver;

import java.io.IOException;
import java.util.Optional;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Loses replies: a region observer that, while armed, fails a check-and-mutate AFTER the region applied it, as a
 * reply lost on the network would look to the client. Loaded on a test table only.
 */
public final class LostReplyObserver implements RegionCoprocessor, RegionObserver {

    /** How many of the next successful check-and-mutates lose their reply. */
    static final AtomicInteger LOSE_NEXT = new AtomicInteger();
    /** While set, every claim (a check-and-mutate of a RowMutations) fails after the region applied or refused it. */
    static final AtomicBoolean FAIL_CLAIMS = new AtomicBoolean();
    /**
     * While set, the next lost reply is held back: the observer counts down {@link Hold#applied}, then waits (at most
     * 10 s) for {@link Hold#resume} before failing the call, so that a test can act between the region applying a
     * claim and the client learning of the failure (and retrying).
     */
    static final AtomicReference<Hold> HOLD = new AtomicReference<>();
    /** While set, every get waits (at most 10 s) for this latch before reading: a stalled region server. */
    static final AtomicReference<CountDownLatch> STALL_GETS = new AtomicReference<>();
    /** While set, every check-and-mutate waits (at most 10 s) for this latch before checking. */
    static final AtomicReference<CountDownLatch> STALL_CHECK_AND_MUTATES = new AtomicReference<>();
    /** While set, every get fails before reading. */
    static final AtomicBoolean FAIL_GETS = new AtomicBoolean();

    @Override
    public Optional<RegionObserver> getRegionObserver() {
        return Optional.of(this);
    }

    @Override
    public CheckAndMutateResult preCheckAndMutate(ObserverContext<RegionCoprocessorEnvironment> c, CheckAndMutate cam,
                                                  CheckAndMutateResult result) throws IOException {
        await(STALL_CHECK_AND_MUTATES.get());
        return result;
    }

    private static void await(CountDownLatch stall) {
        if (stall != null) {
            try {
                stall.await(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public CheckAndMutateResult postCheckAndMutate(ObserverContext<RegionCoprocessorEnvironment> c, CheckAndMutate cam,
                                                   CheckAndMutateResult result) throws IOException {
        if (result.isSuccess() && LOSE_NEXT.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
            Hold hold = HOLD.getAndSet(null);
            if (hold != null) {
                hold.applied.countDown();
                try {
                    hold.resume.await(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            throw new IOException("injected: the reply of an applied check-and-mutate was lost");
        }
        if (FAIL_CLAIMS.get() && cam.getAction() instanceof RowMutations) {
            throw new IOException("injected: the reply of a claim was lost (success=" + result.isSuccess() + ")");
        }
        return result;
    }

    @Override
    public void preGetOp(ObserverContext<RegionCoprocessorEnvironment> c, Get get, List<Cell> result) throws IOException {
        await(STALL_GETS.get());
        if (FAIL_GETS.get()) {
            throw new IOException("injected: gets fail");
        }
    }

    /** Two latches: the region applied the claim; the test lets the (lost) reply go. */
    static final class Hold {
        final CountDownLatch applied = new CountDownLatch(1);
        final CountDownLatch resume = new CountDownLatch(1);
    }
}
