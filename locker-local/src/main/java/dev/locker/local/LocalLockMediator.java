package dev.locker.local;

import dev.locker.api.KeyColumn;
import dev.locker.api.TimeSource;

import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Arbitrates the transactions of one JVM before any of them goes to the backend, so that two threads of one process
 * never race each other in the store.
 *
 * <p>Invariant: at any instant at most one transaction holds a live record for a lock. Records are taken with
 * {@link ConcurrentHashMap#putIfAbsent}; an expired record may be replaced (compare-and-set on the exact record), and
 * only its holder can remove it. Transactions are compared by identity.
 */
public final class LocalLockMediator {

    private final String namespace;
    private final TimeSource time;
    private final ConcurrentHashMap<KeyColumn, Record> locks = new ConcurrentHashMap<>();

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

    /**
     * Takes {@code lock} for {@code tx} until {@code expiry}. Succeeds when the lock is free, held by an expired
     * record, or already held by {@code tx} (then the expiry is updated).
     *
     * @return true if {@code tx} now holds the lock
     */
    public boolean lock(KeyColumn lock, Object tx, Instant expiry) {
        Objects.requireNonNull(lock, "lock");
        Objects.requireNonNull(tx, "tx");
        Objects.requireNonNull(expiry, "expiry");
        Record mine = new Record(tx, expiry);
        while (true) {
            Record current = locks.putIfAbsent(lock, mine);
            if (current == null) {
                return true;
            }
            if (current.tx == tx || current.expiry.isBefore(time.now())) {
                if (locks.replace(lock, current, mine)) {
                    return true;
                }
                continue; // someone else changed it between our read and replace: look again
            }
            return false;
        }
    }

    /**
     * Releases {@code lock} if {@code tx} holds it.
     *
     * @return true if a record of {@code tx} was removed
     */
    public boolean unlock(KeyColumn lock, Object tx) {
        Record current = locks.get(lock);
        return current != null && current.tx == tx && locks.remove(lock, current);
    }

    /** The transaction holding a live record for {@code lock}, if any. */
    public Optional<Object> holder(KeyColumn lock) {
        Record current = locks.get(lock);
        if (current == null || current.expiry.isBefore(time.now())) {
            return Optional.empty();
        }
        return Optional.of(current.tx);
    }

    /** Number of records, live or expired (for tests and metrics). */
    public int size() {
        return locks.size();
    }

    @Override
    public String toString() {
        return "LocalLockMediator[" + namespace + ", " + locks.size() + " records]";
    }

    /** Identity matters: two records are the same only if they are the same object (no equals override). */
    private static final class Record {
        final Object tx;
        final Instant expiry;

        Record(Object tx, Instant expiry) {
            this.tx = tx;
            this.expiry = expiry;
        }
    }
}
