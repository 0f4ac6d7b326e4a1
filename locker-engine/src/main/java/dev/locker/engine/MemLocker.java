package dev.locker.engine;

import java.util.Objects;

/**
 * The {@code mem:} backend's atomic protocol: locks in a {@link MemLockTable} inside this JVM, granted in one atomic
 * step, so leases of a few milliseconds work. This class is the engine over its driver ({@link MemDriver}), with the
 * builder users call; {@link MemLockerProvider} opens it for {@code mem:NAME}.
 *
 * <h2>Safety argument</h2>
 * What decides the holder: one atomic compute on the lock's cell of the table. It finds no live claim, draws the
 * fencing token from the table's counter and writes the claim with its expiry, all in the same step. Computes on one
 * cell never overlap, so there are never two live claims, and a lock's tokens rise with each grant.
 *
 * <p>What decides expiry: the monotonic clock of the locker that wrote the claim, read by every judge. A wall-clock
 * step moves nothing. Lockers on the system clock share {@link System#nanoTime()}; a test's virtual clock decides
 * for the claims of the lockers built on it.
 *
 * <p>What a paused holder can do: nothing that counts. Its deadline is a reading taken before the grant plus the
 * expiry, less 1%; the table's expiry counts from a later reading. Every step compares the deadline again after it
 * returns, so a grant or renewal that outlived the lease is withdrawn (the late-grant rule). Releases, renewals and
 * record writes compare the claim's token first, so a former holder cannot touch its successor's claim.
 *
 * <p>Assumptions: none beyond this JVM. Other processes never see the table; a restart of the JVM loses it.
 */
public final class MemLocker extends LockerEngine<ClaimStatus> {

    private final MemLockTable table;

    private MemLocker(Builder b) {
        super(b, config -> new MemDriver(config, b.table));
        this.table = b.table;
    }

    /**
     * A builder of a locker on {@code table}; lockers on one table meet on every lock.
     *
     * @param table the locks, shared with the other lockers that should meet this one
     * @return the builder
     */
    public static Builder builder(MemLockTable table) {
        return new Builder(table);
    }

    /** {@return the table this locker keeps its locks in} */
    public MemLockTable table() {
        return table;
    }

    /** Options of a {@link MemLocker}; the table is required. */
    public static final class Builder extends LockerBuilder<Builder> {
        private final MemLockTable table;

        private Builder(MemLockTable table) {
            this.table = Objects.requireNonNull(table, "table must not be null");
        }

        /** {@return the locker} */
        public MemLocker build() {
            return new MemLocker(this);
        }
    }
}
