package dev.locker.testkit;

import dev.locker.spi.Entry;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.spi.StoreException;
import dev.locker.spi.StoreTransaction;
import dev.locker.spi.TemporaryStoreException;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * Wraps a real store to count its operations and to inject faults into it: the next N mutations fail (after or
 * without reaching the store) or take a while on a {@link VirtualClock}, a chosen operation pauses (before or after
 * it reached the store) until the test resumes it, or a script of outcomes decides the next mutations one by one.
 * Everything else reaches the real store unchanged; this is fault injection around a real backend, not a mock of one.
 */
public final class FaultyStore implements KeyColumnValueStore {

    private final KeyColumnValueStore real;
    private final AtomicInteger reads = new AtomicInteger();
    private final AtomicInteger mutations = new AtomicInteger();
    private final AtomicInteger failures = new AtomicInteger();
    private final AtomicInteger readFailures = new AtomicInteger();
    private volatile Supplier<? extends StoreException> readFailure;
    private volatile Supplier<? extends StoreException> failure;
    private volatile boolean applyBeforeFailing;
    private final AtomicInteger slow = new AtomicInteger();
    private volatile Duration slowBy = Duration.ZERO;
    private volatile VirtualClock clock;
    private volatile boolean unavailable;
    private final Deque<Outcome> script = new ArrayDeque<>();
    private final Deque<PausePoint> pauses = new ArrayDeque<>();

    /** What a scripted mutation does. */
    public enum Outcome {
        /** Reaches the store and returns normally. */
        OK,
        /** Reaches the store, then the reply is lost: a {@link TemporaryStoreException}. */
        APPLIED_THEN_TEMPORARY_FAILURE,
        /** Fails with a {@link TemporaryStoreException} without reaching the store. */
        TEMPORARY_FAILURE
    }

    /** The kinds of store operation a pause can stop. */
    public enum Op { READ, MUTATE }

    private static final class PausePoint {
        final Op op;
        final boolean afterStore;
        int skip;
        final Pause pause;

        PausePoint(Op op, int skip, boolean afterStore, Pause pause) {
            this.op = op;
            this.skip = skip;
            this.afterStore = afterStore;
            this.pause = pause;
        }
    }

    public FaultyStore(KeyColumnValueStore real) {
        this.real = real;
    }

    /** The next {@code n} mutations throw {@code failure}; if {@code applied}, they reach the store first. */
    public FaultyStore failNextMutations(int n, boolean applied, Supplier<? extends StoreException> failure) {
        this.failure = failure;
        this.applyBeforeFailing = applied;
        this.failures.set(n);
        return this;
    }

    /** The next {@code n} reads ({@code getSlice}) throw {@code failure} without reaching the store. */
    public FaultyStore failNextReads(int n, Supplier<? extends StoreException> failure) {
        this.readFailure = failure;
        this.readFailures.set(n);
        return this;
    }

    /** The next {@code n} mutations advance {@code clock} by {@code by} while they run (a slow write). */
    public FaultyStore slowNextMutations(int n, Duration by, VirtualClock clock) {
        this.clock = clock;
        this.slowBy = by;
        this.slow.set(n);
        return this;
    }

    /** The next mutations, one outcome each, in order; after the script, mutations behave normally again. */
    public FaultyStore scriptMutations(Outcome... outcomes) {
        synchronized (script) {
            script.clear();
            script.addAll(List.of(outcomes));
        }
        return this;
    }

    /**
     * The operation of kind {@code op} that comes after {@code skip} others of that kind pauses: before it reaches
     * the store, or after it was applied (its reply "in flight") when {@code afterStore}.
     */
    public Pause pauseAt(Op op, int skip, boolean afterStore) {
        Pause p = new Pause(op + (afterStore ? " after the store" : " before the store") + " (#" + (skip + 1) + ")");
        synchronized (pauses) {
            pauses.add(new PausePoint(op, skip, afterStore, p));
        }
        return p;
    }

    private Pause pauseFor(Op op, boolean afterStore) {
        synchronized (pauses) {
            PausePoint fired = null;
            for (PausePoint pp : pauses) {
                if (pp.op == op && pp.afterStore == afterStore) {
                    if (pp.skip == 0 && fired == null) {
                        fired = pp;
                    } else if (pp.skip > 0) {
                        pp.skip--;
                    }
                }
            }
            if (fired != null) {
                pauses.remove(fired);
                return fired.pause;
            }
        }
        return null;
    }

    private void maybePause(Op op, boolean afterStore) {
        Pause p = pauseFor(op, afterStore);
        if (p != null) {
            p.park();
        }
    }

    /** While set, every operation fails with a {@link TemporaryStoreException} without reaching the store (an outage). */
    public FaultyStore unavailable(boolean down) {
        this.unavailable = down;
        return this;
    }

    private void ensureAvailable() {
        if (unavailable) {
            throw new TemporaryStoreException("store " + real.name() + " is unreachable (injected outage)");
        }
    }

    public int reads() {
        return reads.get();
    }

    public int mutations() {
        return mutations.get();
    }

    /** Reads plus mutations. */
    public int operations() {
        return reads.get() + mutations.get();
    }

    public KeyColumnValueStore real() {
        return real;
    }

    @Override
    public String name() {
        return real.name();
    }

    @Override
    public List<Entry> getSlice(byte[] key, byte[] start, byte[] end, StoreTransaction tx) {
        reads.incrementAndGet();
        ensureAvailable();
        if (readFailures.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
            throw readFailure.get();
        }
        maybePause(Op.READ, false);
        List<Entry> out = real.getSlice(key, start, end, tx);
        maybePause(Op.READ, true);
        return out;
    }

    /** A read like {@link #getSlice}: counted, failed by an outage, and paused by a {@link Op#READ} pause point. */
    @Override
    public List<byte[]> getKeys(byte[] keyPrefix, byte[] startAfter, int limit, StoreTransaction tx) {
        reads.incrementAndGet();
        ensureAvailable();
        maybePause(Op.READ, false);
        List<byte[]> out = real.getKeys(keyPrefix, startAfter, limit, tx);
        maybePause(Op.READ, true);
        return out;
    }

    @Override
    public void mutate(byte[] key, List<Entry> additions, List<byte[]> deletions, StoreTransaction tx) {
        mutations.incrementAndGet();
        ensureAvailable();
        maybePause(Op.MUTATE, false);
        if (slow.getAndUpdate(n -> n > 0 ? n - 1 : 0) > 0) {
            clock.advance(slowBy);
        }
        Outcome scripted;
        synchronized (script) {
            scripted = script.poll();
        }
        if (scripted == Outcome.TEMPORARY_FAILURE) {
            throw new TemporaryStoreException("store " + real.name() + ": injected failure before the store");
        }
        if (scripted == Outcome.APPLIED_THEN_TEMPORARY_FAILURE) {
            real.mutate(key, additions, deletions, tx);
            throw new TemporaryStoreException("store " + real.name() + ": injected lost reply after the store");
        }
        if (failures.getAndUpdate(n -> n > 0 ? n - 1 : 0) > 0) {
            if (applyBeforeFailing) {
                real.mutate(key, additions, deletions, tx);
            }
            throw failure.get();
        }
        real.mutate(key, additions, deletions, tx);
        maybePause(Op.MUTATE, true);
    }

    @Override
    public StoreTransaction beginTransaction() {
        return real.beginTransaction();
    }

    @Override
    public void close() {
        real.close();
    }
}
