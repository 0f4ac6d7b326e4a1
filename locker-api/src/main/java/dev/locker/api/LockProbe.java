package dev.locker.api;

/**
 * Observes every backend step of a locker, on the calling thread, just before and just after it: for tests that pause
 * a chosen step (a GC pause or a stalled call at exactly that point, replayed), for tracing and for metrics. A probe
 * must not throw; it runs on the lock path, so it should cost nothing when it has nothing to do.
 */
public interface LockProbe {

    /** The backend steps of the three-phase protocol. */
    enum Step {
        /** writeLock's claim write (atomic backends decide the holder here). */
        WRITE,
        /** checkLocks confirming a claim not confirmed before (wait-and-read-back: the read-back). */
        CHECK,
        /** checkLocks asking again about a claim confirmed by an earlier check (one round trip). */
        VERIFY,
        /** renewLocks extending a claim in place. */
        RENEW,
        /** deleteLocks (or close) removing a claim. */
        RELEASE
    }

    /** No observation. */
    LockProbe NONE = new LockProbe() {
    };

    /**
     * Called before the backend is asked; {@code rid} is the locker's.
     *
     * @param step the backend step
     * @param lock the lock
     * @param rid the locker's rid
     */
    default void before(Step step, KeyColumn lock, String rid) {
    }

    /**
     * Called after the backend answered (or failed with {@code failure}, else null).
     *
     * @param step the backend step
     * @param lock the lock
     * @param rid the locker's rid
     * @param failure the step's failure, or null when it succeeded
     */
    default void after(Step step, KeyColumn lock, String rid, RuntimeException failure) {
    }

    /**
     * Called when a claim of the locker became the lock's holder: after its {@link Step#WRITE} on an atomic backend,
     * after its {@link Step#CHECK} on wait-and-read-back (after that step's {@link #after} call, on the same thread).
     *
     * @param lock the lock
     * @param rid the locker's rid
     */
    default void acquired(KeyColumn lock, String rid) {
    }

    /**
     * Called once when a claim of the locker is lost (taken over, gone, expired without a successful renewal, or the
     * locker closed; a release is no loss), whether or not anyone listens for it, on the thread that found the loss,
     * before the listeners are told.
     *
     * @param loss which lock was lost, why, and who holds it now where known
     * @param rid the locker's rid
     */
    default void lost(LockLost loss, String rid) {
    }

    /**
     * Called when a bounded wait ({@link Locker#acquireWithin}, {@link Locker#tryAcquire},
     * {@link Locker#tryAcquireAll}) ends, on its thread.
     *
     * @param acquisition how the wait ended
     * @param rid the locker's rid
     */
    default void waited(Acquisition acquisition, String rid) {
    }
}
