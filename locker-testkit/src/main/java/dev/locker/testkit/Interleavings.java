package dev.locker.testkit;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockStatus;
import dev.locker.api.Locker;
import dev.locker.api.TimeSource;

import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/** The small steps interleaving scenarios are written with: take a lock, wait for a paused operation to fail, ask a belief. */
public final class Interleavings {

    private Interleavings() {
    }

    /** writeLock then checkLocks for {@code tx}; returns its fencing token. On failure the locks are released and it rethrows. */
    public static long take(Locker l, KeyColumn lock, Object tx) {
        try {
            l.writeLock(lock, tx);
            l.checkLocks(tx);
            return l.fencingToken(lock, tx);
        } catch (RuntimeException e) {
            l.deleteLocks(tx);
            throw e;
        }
    }

    /** The failure a background operation ended with; an assertion error if it succeeded (waits at most two minutes). */
    public static Throwable failureOf(Future<?> f) throws Exception {
        try {
            Object v = f.get(2, TimeUnit.MINUTES);
            throw new AssertionError("expected a failure, got " + v);
        } catch (ExecutionException e) {
            return e.getCause();
        }
    }

    /** True while {@code l} lets {@code tx} believe it holds {@code lock}: held, not lost, before its monotonic deadline. */
    public static boolean believesItHolds(Locker l, KeyColumn lock, Object tx, TimeSource time) {
        Optional<LockStatus> s = l.status(lock, tx);
        return s.isPresent() && s.get().isHeld() && s.get().deadlineNanos() - time.nanoTime() > 0;
    }
}
