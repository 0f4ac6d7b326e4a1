package dev.locker.api;

import java.util.concurrent.atomic.AtomicLong;

/**
 * A ready-made transaction handle for callers that have none of their own. Its reason ({@code why}) is recorded with
 * every claim it writes. Compared by identity, like every transaction handed to a {@link Locker}.
 */
public final class LockTransaction {

    private static final AtomicLong SEQ = new AtomicLong();

    private final long id = SEQ.incrementAndGet();
    private final String why;

    public LockTransaction(String why) {
        this.why = why == null ? "" : why;
    }

    public LockTransaction() {
        this("");
    }

    public String why() {
        return why;
    }

    @Override
    public String toString() {
        return why.isEmpty() ? "tx#" + id : "tx#" + id + "(" + why + ")";
    }
}
