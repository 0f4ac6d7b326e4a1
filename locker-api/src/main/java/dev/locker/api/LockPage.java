package dev.locker.api;

import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * One page of a listing of held locks ({@link Locker#list}). A page may hold fewer locks than asked for, even none,
 * while more follow: a backend stops after a bounded amount of work per call. Continue while {@link #nextCursor()} is
 * present; it is empty only when the listing is done. Immutable.
 */
public final class LockPage {

    private static final LockPage EMPTY = new LockPage(List.of(), null);

    private final List<LockInfo> locks;
    private final String nextCursor;

    /**
     * @param locks the locks to take together; not empty, no null
     * @param nextCursor where the next page starts (opaque, issued by the backend), or null when this is the last page
     */
    public LockPage(List<LockInfo> locks, String nextCursor) {
        this.locks = List.copyOf(Objects.requireNonNull(locks, "locks must not be null"));
        if (nextCursor != null && nextCursor.isEmpty()) {
            throw new IllegalArgumentException("nextCursor must be null (no more pages) or non-empty");
        }
        this.nextCursor = nextCursor;
    }

    /**
     * The last page of a listing that found nothing.
     *
     * @return an empty last page
     */
    public static LockPage empty() {
        return EMPTY;
    }

    /**
     * The held locks of this page, in the backend's listing order.
     *
     * @return the held locks of this page, in the backend's listing order
     */
    public List<LockInfo> locks() {
        return locks;
    }

    /**
     * Pass it to the next {@code list} call (with the same prefix) to go on; empty when the listing is done.
     *
     * @return pass it to the next {@code list} call (with the same prefix) to go on; empty when the listing is done
     */
    public Optional<String> nextCursor() {
        return Optional.ofNullable(nextCursor);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof LockPage && locks.equals(((LockPage) o).locks)
                && Objects.equals(nextCursor, ((LockPage) o).nextCursor);
    }

    @Override
    public int hashCode() {
        return 31 * locks.hashCode() + Objects.hashCode(nextCursor);
    }

    @Override
    public String toString() {
        return "LockPage[" + locks.size() + " locks" + (nextCursor == null ? ", last" : ", next=" + nextCursor) + "]";
    }
}
