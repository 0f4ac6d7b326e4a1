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

    /**
     * A transaction whose claims record {@code why}.
     *
     * @param why the reason recorded with the claim, shown to operators and in other processes' exceptions
     */
    public LockTransaction(String why) {
        this.why = why == null ? "" : why;
    }

    /** A transaction without a reason (the locker's configured {@code why} is recorded). */
    public LockTransaction() {
        this("");
    }

    /** {@return the reason its claims record} */
    public String why() {
        return why;
    }

    @Override
    public String toString() {
        return why.isEmpty() ? "tx#" + id : "tx#" + id + "(" + why + ")";
    }
}
