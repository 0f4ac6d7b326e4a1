package dev.locker.engine;

import dev.locker.api.KeyColumn;

import java.util.Arrays;
import java.util.LinkedHashMap;

/**
 * The holds of one transaction, in the order they were claimed. Its identity tells a claim whether the
 * transaction was released (removed from {@link Transactions}) while it claimed. Changes take this object's monitor.
 * Up to {@link #SMALL} holds (nearly every transaction) live in an array that is replaced, never changed in place,
 * so a reader takes a snapshot by reading one volatile field; beyond that, in a map (claim order kept), so a
 * transaction with thousands of locks does not pay a copy and a scan per lock. It is also the transaction's
 * keep-alive record and renewal entry ({@link KeepAlive.Kept}).
 */
final class TxHolds extends KeepAlive.Slot implements KeepAlive.Kept {
    private static final int SMALL = 8;

    private volatile Hold[] small = Transactions.NO_HOLDS;
    /** Non-null once the transaction claimed more than {@link #SMALL} locks (then {@link #small} is unused). */
    private LinkedHashMap<KeyColumn, Hold> large;
    private volatile boolean keptAlive;

    @Override
    public boolean keptAlive() {
        return keptAlive;
    }

    @Override
    public void keptAlive(boolean on) {
        keptAlive = on;
    }

    @Override
    public Hold[] holds() {
        return all();
    }

    Hold[] all() {
        Hold[] a = small;
        if (a != null) {
            return a;
        }
        synchronized (this) {
            return large.values().toArray(Transactions.NO_HOLDS);
        }
    }

    Hold find(KeyColumn lock) {
        Hold[] a = small;
        if (a != null) {
            for (Hold h : a) {
                if (h.lock.equals(lock)) {
                    return h;
                }
            }
            return null;
        }
        synchronized (this) {
            return large.get(lock);
        }
    }

    boolean isEmpty() {
        Hold[] a = small;
        if (a != null) {
            return a.length == 0;
        }
        synchronized (this) {
            return large.isEmpty();
        }
    }

    synchronized void add(Hold hold) {
        Hold[] a = small;
        if (a != null) {
            for (int i = 0; i < a.length; i++) {
                if (a[i].lock.equals(hold.lock)) { // a takeover within the transaction: the new hold replaces it
                    Hold[] b = a.clone();
                    b[i] = hold;
                    small = b;
                    return;
                }
            }
        }
        if (a == null) {
            large.put(hold.lock, hold);
        } else if (a.length < SMALL) {
            Hold[] b = Arrays.copyOf(a, a.length + 1);
            b[a.length] = hold;
            small = b;
        } else {
            large = new LinkedHashMap<>();
            for (Hold h : a) {
                large.put(h.lock, h);
            }
            large.put(hold.lock, hold);
            small = null;
        }
    }

    synchronized void remove(Hold hold) {
        Hold[] a = small;
        if (a == null) {
            large.remove(hold.lock, hold);
            return;
        }
        for (int i = 0; i < a.length; i++) {
            if (a[i] == hold) {
                if (a.length == 1) {
                    small = Transactions.NO_HOLDS;
                } else {
                    Hold[] b = new Hold[a.length - 1];
                    System.arraycopy(a, 0, b, 0, i);
                    System.arraycopy(a, i + 1, b, i, a.length - i - 1);
                    small = b;
                }
                return;
            }
        }
    }
}
