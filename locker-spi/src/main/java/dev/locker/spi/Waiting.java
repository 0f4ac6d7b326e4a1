package dev.locker.spi;

import dev.locker.api.KeyColumn;

import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One wait for a lease: its attempts, under one transaction, are one waiter to a driver with a {@link WaitQueue}.
 * Compared by identity, so a driver may key what it keeps for a wait by the {@code Waiting} itself.
 */
public final class Waiting {

    private static final AtomicLong SEQ = new AtomicLong();

    private final long id = SEQ.incrementAndGet();
    private final List<KeyColumn> locks;
    private final boolean once;

    /**
     * A new wait, with an id of its own.
     *
     * @param locks the locks waited for, in canonical order
     * @param once  true when the wait makes one attempt only
     */
    public Waiting(List<KeyColumn> locks, boolean once) {
        this.locks = List.copyOf(Objects.requireNonNull(locks, "locks must not be null"));
        this.once = once;
    }

    /**
     * Unique in this JVM; a driver adds its own instance id to make it unique across processes.
     *
     * @return this wait's number in this JVM
     */
    public long id() {
        return id;
    }

    /** {@return the locks waited for, in canonical order} */
    public List<KeyColumn> locks() {
        return locks;
    }

    /**
     * True when the wait has no time to wait: nothing needs to be queued for it.
     *
     * @return true when the wait makes one attempt only
     */
    public boolean once() {
        return once;
    }

    @Override
    public String toString() {
        return "Waiting[" + id + ", " + locks + (once ? ", once]" : "]");
    }
}
