package dev.locker.local;

import dev.locker.api.KeyColumn;
import dev.locker.api.LocalArbitration;
import dev.locker.api.TimeSource;

import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Arbitrates the transactions of one JVM before any of them goes to the backend, so that two threads of one process
 * do not race each other in the store.
 *
 * <p>Invariant: at any instant at most one live {@link Hold} is the entry for a lock. Entries are taken with
 * {@link ConcurrentHashMap#putIfAbsent}. An entry that is past its deadline on the monotonic clock (its transaction
 * stalled or leaked) may be taken over: it is first marked lost, so its transaction learns it at its next call and
 * cannot bring it back; only its own hold removes an entry. Mutual exclusion never rests on this class alone: every
 * backend tells claims apart per claim, so a stalled transaction that was taken over here cannot hold in the store too.
 */
public final class LocalLockMediator implements LocalArbitration {

    private final String namespace;
    private final TimeSource time;
    private final ConcurrentHashMap<KeyColumn, Hold> holds = new ConcurrentHashMap<>();
    /**
     * Threads in {@link #awaitRelease}: a release takes the monitor only when there is one. No counter of releases is
     * kept: a waiter looks at the entry of the lock it waits for, so a release writes nothing shared but the map.
     */
    private final AtomicInteger sleepers = new AtomicInteger();
    private final Object monitor = new Object();

    LocalLockMediator(String namespace, TimeSource time) {
        this.namespace = namespace;
        this.time = time;
    }

    /** A mediator of its own, shared with nobody. */
    public static LocalLockMediator standalone(String namespace, TimeSource time) {
        return new LocalLockMediator(namespace, time);
    }

    public String namespace() {
        return namespace;
    }

    @Override
    public String name() {
        return namespace;
    }

    /** Makes {@code hold} the entry for its lock if the lock is free or its entry is past its deadline. */
    boolean take(Hold hold) {
        Objects.requireNonNull(hold, "hold");
        while (true) {
            Hold current = holds.putIfAbsent(hold.lock, hold);
            if (current == null || current == hold) {
                return true;
            }
            if (!current.loseIfPast(time.nanoTime(), "its deadline passed and another transaction of this process ("
                    + hold.tx + ") took the lock")) {
                return false;
            }
            if (holds.replace(hold.lock, current, hold)) {
                return true;
            }
        }
    }

    /** Removes {@code hold} if it is still the entry for its lock. */
    void release(Hold hold) {
        if (holds.remove(hold.lock, hold)) {
            // Pairs with the waiter's registration in awaitRelease (store, fence, load on both sides): either the
            // waiter sees the entry gone, or this release sees the waiter and wakes it.
            VarHandle.fullFence();
            if (sleepers.get() > 0) {
                synchronized (monitor) {
                    monitor.notifyAll();
                }
            }
        }
    }

    /**
     * Waits up to {@code nanos} until the entry that holds {@code lock} now is removed (or replaced); returns at once
     * when the lock has no entry. On a time source other than the system's (a virtual clock in tests) it sleeps
     * {@code nanos} on that source instead.
     */
    void awaitRelease(KeyColumn lock, long nanos) throws InterruptedException {
        if (time != TimeSource.system()) {
            time.sleep(Duration.ofNanos(nanos));
            return;
        }
        sleepers.incrementAndGet(); // before looking at the entry: a release from now on sees us (see release)
        try {
            long end = System.nanoTime() + nanos;
            synchronized (monitor) {
                Hold seen = holds.get(lock);
                while (seen != null && holds.get(lock) == seen) {
                    long left = end - System.nanoTime();
                    if (left <= 0) {
                        return;
                    }
                    TimeUnit.NANOSECONDS.timedWait(monitor, left);
                }
            }
        } finally {
            sleepers.decrementAndGet();
        }
    }

    /** The transaction whose live entry holds {@code lock}, if any. */
    public Optional<Object> holder(KeyColumn lock) {
        Hold current = holds.get(lock);
        if (current == null || !current.isLiveAt(time.nanoTime())) {
            return Optional.empty();
        }
        return Optional.of(current.tx);
    }

    /** Number of entries, live or not yet removed (for tests and metrics). */
    public int size() {
        return holds.size();
    }

    @Override
    public String toString() {
        return "LocalLockMediator[" + namespace + ", " + holds.size() + " entries]";
    }
}
