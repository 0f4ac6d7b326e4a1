package dev.locker.testkit;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * One point where a thread will stop: the first thread that reaches it blocks until the test {@link #resume resumes}
 * it, and the test can {@link #awaitArrival wait} until a thread is parked there. With a {@link VirtualClock} the
 * test then moves time on (past an expiry, say), lets other processes act, and resumes the paused one: a GC pause or
 * a stalled network call at exactly that step, replayed deterministically.
 */
public final class Pause {

    private final String where;
    private final CountDownLatch arrived = new CountDownLatch(1);
    private final CountDownLatch resumed = new CountDownLatch(1);

    public Pause(String where) {
        this.where = where;
    }

    /** Called by the paused thread: signals its arrival, then blocks until resumed (at most ten minutes). */
    void park() {  // package-private: only the testkit's probes and stores park threads
        arrived.countDown();
        try {
            if (!resumed.await(10, TimeUnit.MINUTES)) {
                throw new IllegalStateException("pause at " + where + " was never resumed");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while paused at " + where, e);
        }
    }

    /** Waits until a thread is parked here; fails the test after a minute. */
    public Pause awaitArrival() {
        try {
            if (!arrived.await(1, TimeUnit.MINUTES)) {
                throw new AssertionError("no thread reached the pause at " + where);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted while waiting for the pause at " + where, e);
        }
        return this;
    }

    public boolean hasArrived() {
        return arrived.getCount() == 0;
    }

    /** Lets the paused thread go on (or lets the first thread through without stopping, if none arrived yet). */
    public void resume() {
        resumed.countDown();
    }

    @Override
    public String toString() {
        return "Pause[" + where + (hasArrived() ? ", arrived" : "") + "]";
    }
}
