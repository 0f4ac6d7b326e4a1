package dev.locker.local;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockLost;
import dev.locker.api.LockOwner;
import dev.locker.api.LockStatus;
import dev.locker.api.LossReason;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;

/**
 * The one record of a lock a transaction of this process claimed: it is the mediator's entry for the lock, the
 * transaction's bookkeeping refers to this same object, and its state holds the backend's latest status and the
 * deadline on the monotonic clock. Nothing else decides whether this process holds the lock, so the three can never
 * disagree.
 *
 * <p>Invariants: the state only moves forward (CLAIMING, then CLAIMED with new statuses, then LOST or RELEASED, which
 * are final); every change is a compare-and-set on the whole state, so an operation that ran while the hold was lost
 * (taken over locally after its deadline, released by another thread, or the locker closed) cannot bring it back.
 * The move to LOST happens once and is reported once to the sink given at construction, which tells the listeners.
 */
final class Hold {

    enum Phase { CLAIMING, CLAIMED, LOST, RELEASED }

    /**
     * An immutable snapshot. {@code status} is null while CLAIMING and may be null after that if the claim was never
     * written; {@code reported} is true once a checkLocks call told the caller the claim is held.
     */
    record State(Phase phase, LockStatus status, long deadlineNanos, boolean reported, LossReason reason,
                 String lostWhy, LockOwner newHolder) {

        boolean isFinal() {
            return phase == Phase.LOST || phase == Phase.RELEASED;
        }
    }

    final KeyColumn lock;
    final Object tx;
    /** When the claim was first asked for, by this process's wall clock (to tell a forced release's record apart). */
    volatile java.time.Instant claimedAt;
    /**
     * Serialises the backend steps of this hold (check, verify, renew: e.g. the keep-alive thread and the holder's own
     * check), so that a failed compare-and-set on the state always means the hold became final (lost or released),
     * never that another step of the same holder got there first. Release and loss do not take it.
     */
    final ReentrantLock steps = new ReentrantLock();
    private final AtomicReference<State> state;
    private final Consumer<Hold> lostSink;
    private final List<Consumer<LockLost>> listeners = new ArrayList<>(1);
    private LockLost lost;

    /**
     * A hold whose claim is being written; it cannot outlive {@code deadlineNanos} before the write answers.
     * {@code lostSink} is told once when the hold is lost.
     */
    Hold(KeyColumn lock, Object tx, long deadlineNanos, Consumer<Hold> lostSink) {
        this.lock = lock;
        this.tx = tx;
        this.lostSink = lostSink;
        this.state = new AtomicReference<>(new State(Phase.CLAIMING, null, deadlineNanos, false, null, null, null));
    }

    State state() {
        return state.get();
    }

    /** Records a backend status (with its deadline) if the state is still {@code expected}; false if it moved on. */
    boolean update(State expected, LockStatus status, boolean reported) {
        if (expected.isFinal()) {
            return false;
        }
        return state.compareAndSet(expected, new State(Phase.CLAIMED, status, status.deadlineNanos(), reported, null, null, null));
    }

    /** Marks the hold lost (unless it is already final); returns the state before. */
    State lose(LossReason reason, String why) {
        return lose(reason, why, null);
    }

    /** Marks the hold lost, naming the new holder where known (unless it is already final); returns the state before. */
    State lose(LossReason reason, String why, LockOwner newHolder) {
        while (true) {
            State s = state.get();
            if (s.isFinal()) {
                return s;
            }
            if (state.compareAndSet(s, new State(Phase.LOST, s.status, s.deadlineNanos, s.reported, reason, why, newHolder))) {
                lostSink.accept(this);
                return s;
            }
        }
    }

    /** Marks the hold lost only if its state is still {@code expected} (a judgement of that state); true if it did. */
    boolean loseIf(State expected, LossReason reason, String why) {
        if (expected.isFinal()) {
            return false;
        }
        if (state.compareAndSet(expected, new State(Phase.LOST, expected.status, expected.deadlineNanos, expected.reported,
                reason, why, null))) {
            lostSink.accept(this);
            return true;
        }
        return false;
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
            if (state.compareAndSet(s, new State(Phase.LOST, s.status, s.deadlineNanos, s.reported, LossReason.EXPIRED, why, null))) {
                lostSink.accept(this);
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
            State released = new State(Phase.RELEASED, s.status, s.deadlineNanos, s.reported, s.reason,
                    s.lostWhy != null ? s.lostWhy : "released", s.newHolder);
            if (state.compareAndSet(s, released)) {
                return s;
            }
        }
    }

    boolean isLiveAt(long nowNanos) {
        State s = state.get();
        return !s.isFinal() && nowNanos - s.deadlineNanos < 0;
    }

    /** Adds a listener; returns the loss to tell it at once if the hold was already lost, else null. */
    synchronized LockLost addListener(Consumer<LockLost> listener) {
        if (lost != null) {
            return lost;
        }
        listeners.add(listener);
        return null;
    }

    synchronized boolean hasListeners() {
        return !listeners.isEmpty();
    }

    /** Records the loss and hands out the listeners to tell (each once). */
    synchronized List<Consumer<LockLost>> takeListeners(LockLost loss) {
        lost = loss;
        List<Consumer<LockLost>> out = new ArrayList<>(listeners);
        listeners.clear();
        return out;
    }

    @Override
    public String toString() {
        State s = state.get();
        return "Hold[" + lock + ", " + tx + ", " + s.phase + (s.lostWhy != null ? " (" + s.lostWhy + ")" : "") + "]";
    }
}
