package dev.locker.engine;

import dev.locker.api.KeyColumn;
import dev.locker.api.LocalArbitration;
import dev.locker.api.TimeSource;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Arbitrates the transactions of one JVM before any of them goes to the backend, so that two threads of one process
 * do not race each other in the store.
 *
 * <p>Invariant: at any instant at most one live {@link Hold} is the entry for a lock. Entries are taken with
 * {@link ConcurrentHashMap#putIfAbsent}. An entry that is past its deadline on the monotonic clock (its transaction
 * stalled or leaked) may be taken over: it is first marked lost, so its transaction learns it at its next call and
 * cannot bring it back; only its own hold removes an entry. A hold's deadline is judged on its own locker's clock
 * ({@link Hold#nowOn}), not on this mediator's: lockers that share a mediator may run on different time sources. Mutual
 * exclusion never rests on this class alone: every
 * backend tells claims apart per claim, so a stalled transaction that was taken over here cannot hold in the store too.
 */
public final class LocalLockMediator implements LocalArbitration {

    /**
     * The map's initial capacity (256 bins, 1 KB, made on the first take). With the default 16 bins every lock's bin
     * lies in one or two cache lines, so threads taking different locks write the same lines on every take and
     * release; with 256 bins (16 lines) two locks share a line far less often.
     */
    static final int INITIAL_CAPACITY = 128;

    private final String namespace;
    private final TimeSource time;
    private final ConcurrentHashMap<KeyColumn, Hold> holds = new ConcurrentHashMap<>(INITIAL_CAPACITY);
    /**
     * Threads in {@link #awaitRelease}. Only waiters write it; a release or takeover reads it to learn whether to take
     * the monitor of the hold it removed. No counter of releases is kept and no fence is needed: take and release
     * write nothing shared but the map (see {@link #awaitRelease} for why the read is enough). A field of the mediator,
     * not an object of its own: the release reads it from the line it reads {@link #holds} from.
     */
    private volatile int sleepers;

    private static final VarHandle SLEEPERS;

    static {
        try {
            SLEEPERS = MethodHandles.lookup().findVarHandle(LocalLockMediator.class, "sleepers", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

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
            if (!current.loseIfPast(current.nowOn(time), "its deadline passed and another transaction of this process ("
                    + hold.tx + ") took the lock")) {
                return false;
            }
            if (holds.replace(hold.lock, current, hold)) {
                wake(current);
                return true;
            }
        }
    }

    /** Removes {@code hold} if it is still the entry for its lock. */
    void release(Hold hold) {
        if (holds.remove(hold.lock, hold)) {
            wake(hold);
        }
    }

    /** Wakes the threads waiting in {@link #awaitRelease} for {@code gone}, which its lock's entry just stopped being. */
    private void wake(Hold gone) {
        if (sleepers > 0) {
            synchronized (gone) {
                gone.notifyAll();
            }
        }
    }

    /**
     * Waits up to {@code nanos} until the entry that holds {@code lock} now is removed (or replaced); returns at once
     * when the lock has no entry. On a time source other than the system's (a virtual clock in tests) it sleeps
     * {@code nanos} on that source instead.
     *
     * <p>Why a release never leaves us sleeping: we count ourselves in {@link #sleepers}, then register by putting the
     * entry we saw back in place of itself ({@code replace(lock, seen, seen)}), holding {@code seen}'s monitor from
     * before that until we wait on it. The map orders the updates of one key, so the removal (or takeover) of
     * {@code seen} comes either before our replace, which then fails and we return, or after it; then our increment
     * happens-before the remover's read of {@link #sleepers} (what a thread does before placing an element in a
     * concurrent collection happens-before what another does after removing it), so the remover sees a sleeper
     * (we decrement only once we stop waiting) and takes {@code seen}'s monitor, which it gets only once we wait,
     * and wakes us; we then see the entry gone. The remover needs no fence: the ordering is the map's, per key.
     */
    void awaitRelease(KeyColumn lock, long nanos) throws InterruptedException {
        if (time != TimeSource.system()) {
            time.sleep(Duration.ofNanos(nanos));
            return;
        }
        long end = System.nanoTime() + nanos;
        SLEEPERS.getAndAdd(this, 1); // before registering (see above)
        try {
            Hold seen = holds.get(lock);
            if (seen == null) {
                return;
            }
            synchronized (seen) {
                if (!holds.replace(lock, seen, seen)) {
                    return; // removed or replaced already
                }
                while (holds.get(lock) == seen) {
                    long left = end - System.nanoTime();
                    if (left <= 0) {
                        return;
                    }
                    TimeUnit.NANOSECONDS.timedWait(seen, left);
                }
            }
        } finally {
            SLEEPERS.getAndAdd(this, -1);
        }
    }

    /** The transaction whose live entry holds {@code lock}, if any. */
    public Optional<Object> holder(KeyColumn lock) {
        Hold current = holds.get(lock);
        if (current == null || !current.isLiveAt(current.nowOn(time))) {
            return Optional.empty();
        }
        return Optional.of(current.tx);
    }

    /**
     * Calls {@code action} for each entry: every entry present from the call's start to its end is seen; one taken or
     * removed meanwhile may be missed.
     */
    void forEachHold(java.util.function.Consumer<Hold> action) {
        holds.values().forEach(action);
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
