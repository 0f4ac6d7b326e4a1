package dev.locker.testkit;

import dev.locker.api.Entry;
import dev.locker.api.KeyColumnValueStore;
import dev.locker.api.StoreException;
import dev.locker.api.StoreTransaction;
import dev.locker.api.TemporaryStoreException;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * Wraps a real store to count its operations and to inject faults into it: the next N mutations fail (after or
 * without reaching the store) or take a while on a {@link VirtualClock}. Everything else reaches the real store
 * unchanged; this is fault injection around a real backend, not a mock of one.
 */
public final class FaultyStore implements KeyColumnValueStore {

    private final KeyColumnValueStore real;
    private final AtomicInteger reads = new AtomicInteger();
    private final AtomicInteger mutations = new AtomicInteger();
    private final AtomicInteger failures = new AtomicInteger();
    private volatile Supplier<? extends StoreException> failure;
    private volatile boolean applyBeforeFailing;
    private final AtomicInteger slow = new AtomicInteger();
    private volatile Duration slowBy = Duration.ZERO;
    private volatile VirtualClock clock;
    private volatile boolean unavailable;

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

    /** The next {@code n} mutations advance {@code clock} by {@code by} while they run (a slow write). */
    public FaultyStore slowNextMutations(int n, Duration by, VirtualClock clock) {
        this.clock = clock;
        this.slowBy = by;
        this.slow.set(n);
        return this;
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
        return real.getSlice(key, start, end, tx);
    }

    @Override
    public void mutate(byte[] key, List<Entry> additions, List<byte[]> deletions, StoreTransaction tx) {
        mutations.incrementAndGet();
        ensureAvailable();
        if (slow.getAndUpdate(n -> n > 0 ? n - 1 : 0) > 0) {
            clock.advance(slowBy);
        }
        if (failures.getAndUpdate(n -> n > 0 ? n - 1 : 0) > 0) {
            if (applyBeforeFailing) {
                real.mutate(key, additions, deletions, tx);
            }
            throw failure.get();
        }
        real.mutate(key, additions, deletions, tx);
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
