package dev.locker.engine;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockTransaction;

import java.util.ArrayList;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

/**
 * The registry of one locker's transactions: which holds each transaction has, found by the transaction's identity.
 * A single-lock lease's hold is its own transaction and is kept in no record here; while it is live it is its
 * lock's mediator entry. A lost lease's hold may have stopped being that entry, so it is kept here until it is
 * finished, for close to find it.
 */
final class Transactions {

    static final Hold[] NO_HOLDS = new Hold[0];

    /** The holds of each transaction, keyed by {@link #keyOf}, in the order they were claimed. */
    private final ConcurrentHashMap<Object, TxHolds> txs = new ConcurrentHashMap<>();
    /** The holds of single-lock leases that were lost and are not finished yet. Losses are rare: this stays small. */
    private final Set<Hold> lostLeases = ConcurrentHashMap.newKeySet();
    /** The lost signal of this locker's holds: it tells this locker's lease holds from another locker's. */
    private final Consumer<Hold> sink;

    Transactions(Consumer<Hold> sink) {
        this.sink = sink;
    }

    /**
     * The key of a transaction: transactions are compared by identity, whatever their own equals says. A
     * {@link LockTransaction} (what leases use) is its own key: it keeps Object's identity equals and hash, and it
     * never equals a {@link TxKey}; any other transaction is wrapped.
     */
    static Object keyOf(Object tx) {
        return tx instanceof LockTransaction ? tx : new TxKey(tx);
    }

    /** The record of the transaction {@code key}, made if it has none. */
    TxHolds recordOf(Object key) {
        TxHolds holds = txs.get(key);
        if (holds == null) { // get, then putIfAbsent: no reservation node and no lambda when the transaction is new
            TxHolds fresh = new TxHolds();
            holds = txs.putIfAbsent(key, fresh);
            if (holds == null) {
                holds = fresh;
            }
        }
        return holds;
    }

    /** True while {@code holds} is the record of {@code key}: false once the transaction was released. */
    boolean isCurrent(Object key, TxHolds holds) {
        return txs.get(key) == holds;
    }

    /** Removes the record of {@code tx} (not a lease's own hold); null when it had none. */
    TxHolds remove(Object tx) {
        return txs.remove(keyOf(tx));
    }

    /**
     * For close: removes each transaction's record in turn and hands it to {@code finish}. A claim under way then
     * sees its record gone.
     */
    void removeEach(Consumer<TxHolds> finish) {
        for (Object key : new ArrayList<>(txs.keySet())) {
            TxHolds holds = txs.remove(key);
            if (holds != null) {
                finish.accept(holds);
            }
        }
    }

    /** Forgets the record of {@code key} when it holds nothing any more. */
    void forgetIfEmpty(Object key, TxHolds holds) {
        synchronized (holds) {
            if (holds.isEmpty()) {
                txs.remove(key, holds);
            }
        }
    }

    /** {@code tx} as the hold of one of this locker's single-lock leases (its own transaction), else null. */
    Hold leaseHold(Object tx) {
        if (tx instanceof Hold) {
            Hold h = (Hold) tx;
            return h.ownTransaction() && h.reportsTo(sink) ? h : null;
        }
        return null;
    }

    /** The holds of {@code tx} when this is called, in claim order (an array nobody changes: iterate it freely). */
    Hold[] holdsOf(Object tx) {
        Hold own = leaseHold(tx);
        if (own != null) {
            return own.isDone() ? NO_HOLDS : own.holds();
        }
        TxHolds holds = tx == null ? null : txs.get(keyOf(tx));
        return holds == null ? NO_HOLDS : holds.all();
    }

    /** The hold of {@code tx} on {@code lock}, or null. */
    Hold holdOf(KeyColumn lock, Object tx) {
        Hold own = leaseHold(tx);
        if (own != null) {
            return !own.isDone() && own.lock.equals(lock) ? own : null;
        }
        TxHolds holds = tx == null || lock == null ? null : txs.get(keyOf(tx));
        return holds == null ? null : holds.find(lock);
    }

    /** The keep-alive record of {@code tx}: a live lease's own hold, or a transaction's record; null when none. */
    KeepAlive.Kept kept(Object tx) {
        Hold own = leaseHold(tx);
        return own != null ? (own.isDone() ? null : own) : tx == null ? null : txs.get(keyOf(tx));
    }

    /** For the keep-alive: is {@code tx} kept alive now? */
    boolean keptAlive(Object tx) {
        Hold own = leaseHold(tx);
        KeepAlive.Kept kept = own != null ? own : tx == null ? null : txs.get(keyOf(tx));
        return kept != null && kept.keptAlive();
    }

    /** Remembers a lost lease's hold until it is finished, so close still finds it. */
    void lostLease(Hold hold) {
        if (hold.ownTransaction() && !hold.isDone()) {
            lostLeases.add(hold);
            if (hold.isDone()) { // finished meanwhile: its finisher may have looked before the add
                lostLeases.remove(hold);
            }
        }
    }

    /** A lease's hold was finished: close need not find it any more. */
    void leaseFinished(Hold hold) {
        lostLeases.remove(hold);
    }

    /** The lost leases' holds not finished yet, for close. */
    Hold[] lostLeases() {
        return lostLeases.toArray(NO_HOLDS);
    }

    /** A transaction compared by identity, whatever its own equals says. */
    private static final class TxKey {
        final Object tx;

        TxKey(Object tx) {
            this.tx = tx;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof TxKey && ((TxKey) o).tx == tx;
        }

        @Override
        public int hashCode() {
            return System.identityHashCode(tx);
        }
    }
}
