package dev.locker.local;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockStatus;

import java.util.concurrent.atomic.AtomicReference;

/**
 * The one record of a lock a transaction of this process claimed: it is the mediator's entry for the lock, the
 * transaction's bookkeeping refers to this same object, and its state holds the backend's latest status and the
 * deadline on the monotonic clock. Nothing else decides whether this process holds the lock, so the three can never
 * disagree.
 *
 * <p>Invariants: the state only moves forward (CLAIMING, then CLAIMED with new statuses, then LOST or RELEASED, which
 * are final); every change is a compare-and-set on the whole state, so an operation that ran while the hold was lost
 * (taken over locally after its deadline, released by another thread, or the locker closed) cannot bring it back.
 */
final class Hold {

    enum Phase { CLAIMING, CLAIMED, LOST, RELEASED }

    /**
     * An immutable snapshot. {@code status} is null while CLAIMING and may be null after that if the claim was never
     * written; {@code reported} is true once a checkLocks call told the caller the claim is held.
     */
    record State(Phase phase, LockStatus status, long deadlineNanos, boolean reported, String lostWhy) {

        boolean isFinal() {
            return phase == Phase.LOST || phase == Phase.RELEASED;
        }
    }

    final KeyColumn lock;
    final Object tx;
    private final AtomicReference<State> state;

    /** A hold whose claim is being written; it cannot outlive {@code deadlineNanos} before the write answers. */
    Hold(KeyColumn lock, Object tx, long deadlineNanos) {
        this.lock = lock;
        this.tx = tx;
        this.state = new AtomicReference<>(new State(Phase.CLAIMING, null, deadlineNanos, false, null));
    }

    State state() {
        return state.get();
    }

    /** Records a backend status (with its deadline) if the state is still {@code expected}; false if it moved on. */
    boolean update(State expected, LockStatus status, boolean reported) {
        if (expected.isFinal()) {
            return false;
        }
        return state.compareAndSet(expected, new State(Phase.CLAIMED, status, status.deadlineNanos(), reported, null));
    }

    /** Marks the hold lost (unless it is already final); returns the state before. */
    State lose(String why) {
        while (true) {
            State s = state.get();
            if (s.isFinal()) {
                return s;
            }
            if (state.compareAndSet(s, new State(Phase.LOST, s.status, s.deadlineNanos, s.reported, why))) {
                return s;
            }
        }
    }

    /**
     * May another transaction take this hold's lock now? Yes once it is lost, or past its deadline at {@code nowNanos}
     * (then it is marked lost first). A released hold keeps its entry until its claim is deleted (its releaser removes
     * the entry then), so that a waiting transaction does not meet the claim being released.
     */
    boolean loseIfPast(long nowNanos, String why) {
        while (true) {
            State s = state.get();
            if (s.phase == Phase.LOST) {
                return true;
            }
            if (s.phase == Phase.RELEASED) {
                return nowNanos - s.deadlineNanos >= 0;
            }
            if (nowNanos - s.deadlineNanos < 0) {
                return false;
            }
            if (state.compareAndSet(s, new State(Phase.LOST, s.status, s.deadlineNanos, s.reported, why))) {
                return true;
            }
        }
    }

    /** Marks the hold released; returns the state before (whose status, if any, is the claim to delete). */
    State release() {
        while (true) {
            State s = state.get();
            if (s.phase == Phase.RELEASED) {
                return s;
            }
            State released = new State(Phase.RELEASED, s.status, s.deadlineNanos, s.reported,
                    s.lostWhy != null ? s.lostWhy : "released");
            if (state.compareAndSet(s, released)) {
                return s;
            }
        }
    }

    boolean isLiveAt(long nowNanos) {
        State s = state.get();
        return !s.isFinal() && nowNanos - s.deadlineNanos < 0;
    }

    @Override
    public String toString() {
        State s = state.get();
        return "Hold[" + lock + ", " + tx + ", " + s.phase + (s.lostWhy != null ? " (" + s.lostWhy + ")" : "") + "]";
    }
}
