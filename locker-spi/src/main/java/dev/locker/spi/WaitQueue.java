package dev.locker.spi;

import dev.locker.api.TemporaryLockingException;

/**
 * A driver's capability to queue waiters and to tell them of releases. A driver without it leaves waiting to the
 * engine, which polls with back-off.
 *
 * <p>The engine calls {@link #startWaiting} once before a wait's first attempt, {@link #awaitRelease} between its
 * attempts, and {@link #stopWaiting} once when it ends, on every path. A wait that makes one attempt only
 * ({@link Waiting#once()}) is never started or stopped.
 */
public interface WaitQueue {

    /**
     * A wait begins, before its first attempt: a driver that tells of releases starts listening here.
     *
     * @param waiting the wait
     */
    void startWaiting(Waiting waiting);

    /**
     * Pauses a waiter after the driver refused it, for at most {@code maxNanos} of the locker's monotonic clock.
     * Returns early when the driver learns of a release.
     *
     * @param waiting  the wait
     * @param refusal  the refusal of the last attempt, naming the holder where known
     * @param maxNanos the longest pause
     * @throws InterruptedException when the waiting thread is interrupted
     */
    void awaitRelease(Waiting waiting, TemporaryLockingException refusal, long maxNanos) throws InterruptedException;

    /**
     * A wait ended. The driver removes what is left of it; a queue entry nobody refreshes must lapse on its own.
     *
     * @param waiting  the wait
     * @param acquired true when it ended with a grant
     */
    void stopWaiting(Waiting waiting, boolean acquired);

    /**
     * True when {@link #awaitRelease} wakes on a release. A waiter may then pause until the holder's claim expires,
     * instead of polling with back-off.
     *
     * @return true when a release wakes a waiter
     */
    boolean toldOfReleases();
}
