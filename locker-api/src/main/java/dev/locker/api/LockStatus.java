package dev.locker.api;

/**
 * What a locker knows about one lock one transaction claimed: an immutable snapshot, replaced by each phase.
 *
 * <p>The holder's belief that it may act lives on the monotonic clock of its own process ({@link TimeSource#nanoTime()}
 * of the locker's time source), from one reading taken before the request that wrote or renewed the claim; it never
 * depends on a wall-clock instant.
 */
public interface LockStatus {

    /**
     * True once the backend has confirmed that our claim is the holder.
     *
     * @return true once the backend has confirmed that our claim is the holder
     */
    boolean isHeld();

    /**
     * The fencing token given when our claim became the holder; only meaningful when {@link #isHeld()}.
     *
     * @return the fencing token given when our claim became the holder; only meaningful when {@link #isHeld()}
     */
    long fencingToken();

    /**
     * Until when (monotonic nanoseconds of the locker's time source) this process may believe the claim is alive:
     * the claim's lifetime counted from a reading taken before the request that wrote or renewed it, less the margin
     * its protocol needs. After it, the lock may be someone else's.
     *
     * @return until when (monotonic nanoseconds of the locker's time source) this process may believe the claim is
     * alive: the claim's lifetime counted from a reading taken before the request that wrote or renewed it, less the
     * margin its protocol needs
     */
    long deadlineNanos();
}
