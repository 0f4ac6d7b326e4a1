package dev.locker.local;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockLost;
import dev.locker.api.LockOwner;
import dev.locker.api.LockStatus;
import dev.locker.api.LossReason;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.AbstractQueuedSynchronizer;
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
final class Hold extends AbstractQueuedSynchronizer implements Timer.Timed {

    // Hold extends the synchronizer of its steps (see lockSteps) rather than owning a ReentrantLock: one object per
    // held lock instead of three, which matters with many locks held (client heap per held lock).
    private static final long serialVersionUID = 1L;

    enum Phase { CLAIMING, CLAIMED, LOST, RELEASED }

    /**
     * An immutable snapshot. {@code status} is null while CLAIMING and may be null after that if the claim was never
     * written; {@code reported} is true once a checkLocks call told the caller the claim is held. A live or released
     * state without a loss is a plain {@code State}; a state that carries a loss is an {@link Ended} (smaller
     * snapshots for the common case: each step of an uncontended acquire makes one).
     */
    static class State {
        private final Phase phase;
        private final LockStatus status;
        private final long deadlineNanos;
        private final boolean reported;

        State(Phase phase, LockStatus status, long deadlineNanos, boolean reported) {
            this.phase = phase;
            this.status = status;
            this.deadlineNanos = deadlineNanos;
            this.reported = reported;
        }

        Phase phase() {
            return phase;
        }

        LockStatus status() {
            return status;
        }

        long deadlineNanos() {
            return deadlineNanos;
        }

        boolean reported() {
            return reported;
        }

        /** Why the hold was lost, or null. */
        LossReason reason() {
            return null;
        }

        /** Why the hold ended: the loss's explanation, "released" for a plain release, else null. */
        String lostWhy() {
            return phase == Phase.RELEASED ? "released" : null;
        }

        /** The new holder where the loss named one, else null. */
        LockOwner newHolder() {
            return null;
        }

        boolean isFinal() {
            return phase == Phase.LOST || phase == Phase.RELEASED;
        }

        @Override
        public String toString() {
            return "State[" + phase + ", " + status + ", reported=" + reported + (lostWhy() != null ? ", " + lostWhy() : "")
                    + "]";
        }
    }

    /** A final state that carries a loss: LOST, or RELEASED after a loss. */
    static final class Ended extends State {
        private final LossReason reason;
        private final String lostWhy;
        private final LockOwner newHolder;

        Ended(Phase phase, LockStatus status, long deadlineNanos, boolean reported, LossReason reason, String lostWhy,
              LockOwner newHolder) {
            super(phase, status, deadlineNanos, reported);
            this.reason = reason;
            this.lostWhy = lostWhy;
            this.newHolder = newHolder;
        }

        @Override
        LossReason reason() {
            return reason;
        }

        @Override
        String lostWhy() {
            return lostWhy;
        }

        @Override
        LockOwner newHolder() {
            return newHolder;
        }
    }

    private static final VarHandle STATE;

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(Hold.class, "state", State.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    final KeyColumn lock;
    final Object tx;
    /**
     * When the claim was first asked for, by this process's wall clock (to tell a forced release's record apart): the
     * instant's seconds and nanoseconds, kept as numbers rather than as an object per held lock. Written once, before
     * the hold is published to other threads.
     */
    private final long claimedSeconds;
    private final int claimedNano;
    private final boolean claimedKnown;
    private volatile State state;
    private final Consumer<Hold> lostSink;
    /** The listeners to tell of a loss (guarded by this hold's monitor); null until the first one. */
    private ArrayList<Consumer<LockLost>> listeners;
    private LockLost lost;
    /** The keep-alive's watchdog slot for this hold (see {@link Timer.Timed}): no object per watched hold. */
    private int timerIndex = -1;
    private long timerDue;

    /**
     * A hold whose claim is being written; it cannot outlive {@code deadlineNanos} before the write answers.
     * {@code lostSink} is told once when the hold is lost.
     */
    Hold(KeyColumn lock, Object tx, long deadlineNanos, Consumer<Hold> lostSink) {
        this(lock, tx, deadlineNanos, lostSink, null);
    }

    /** Likewise, recording {@code claimedAt}: when the claim was first asked for, by this process's wall clock. */
    Hold(KeyColumn lock, Object tx, long deadlineNanos, Consumer<Hold> lostSink, Instant claimedAt) {
        this.lock = lock;
        this.tx = tx;
        this.lostSink = lostSink;
        this.claimedKnown = claimedAt != null;
        this.claimedSeconds = claimedAt != null ? claimedAt.getEpochSecond() : 0;
        this.claimedNano = claimedAt != null ? claimedAt.getNano() : 0;
        this.state = new State(Phase.CLAIMING, null, deadlineNanos, false);
    }

    /** When the claim was first asked for, or null if not recorded. */
    Instant claimedAt() {
        return claimedKnown ? Instant.ofEpochSecond(claimedSeconds, claimedNano) : null;
    }

    @Override
    public int timerIndex() {
        return timerIndex;
    }

    @Override
    public void timerIndex(int i) {
        timerIndex = i;
    }

    @Override
    public long timerDue() {
        return timerDue;
    }

    @Override
    public void timerDue(long due) {
        timerDue = due;
    }

    // ---- the steps: serialises the backend steps of this hold --------------------------------------------------

    /*
     * Serialises the backend steps of this hold (check, verify, renew: e.g. the keep-alive thread and the holder's own
     * check), so that a failed compare-and-set on the state always means the hold became final (lost or released),
     * never that another step of the same holder got there first. Release and loss do not take it. Reentrant, like the
     * ReentrantLock it replaces: the synchronizer's state counts the owner's holds.
     */

    /** Takes the steps lock, waiting for a step in flight. */
    void lockSteps() {
        if (!tryLockSteps()) {
            acquire(1);
        }
    }

    /** Takes the steps lock if no other thread has it; false at once otherwise. */
    boolean tryLockSteps() {
        return tryAcquire(1);
    }

    void unlockSteps() {
        release(1);
    }

    @Override
    protected boolean tryAcquire(int n) {
        Thread me = Thread.currentThread();
        int c = getState();
        if (c == 0) {
            if (compareAndSetState(0, n)) {
                setExclusiveOwnerThread(me);
                return true;
            }
            return false;
        }
        if (getExclusiveOwnerThread() == me) {
            setState(c + n);
            return true;
        }
        return false;
    }

    @Override
    protected boolean tryRelease(int n) {
        if (getExclusiveOwnerThread() != Thread.currentThread()) {
            throw new IllegalMonitorStateException("the steps of " + lock + " are not held by this thread");
        }
        int c = getState() - n;
        if (c == 0) {
            setExclusiveOwnerThread(null);
        }
        setState(c);
        return c == 0;
    }

    @Override
    protected boolean isHeldExclusively() {
        return getExclusiveOwnerThread() == Thread.currentThread();
    }

    // ---- the state ---------------------------------------------------------------------------------------------

    State state() {
        return state;
    }

    private boolean cas(State expected, State next) {
        return STATE.compareAndSet(this, expected, next);
    }

    /** Records a backend status (with its deadline) if the state is still {@code expected}; false if it moved on. */
    boolean update(State expected, LockStatus status, boolean reported) {
        if (expected.isFinal()) {
            return false;
        }
        return cas(expected, new State(Phase.CLAIMED, status, status.deadlineNanos(), reported));
    }

    /** Marks the hold lost (unless it is already final); returns the state before. */
    State lose(LossReason reason, String why) {
        return lose(reason, why, null);
    }

    /** Marks the hold lost, naming the new holder where known (unless it is already final); returns the state before. */
    State lose(LossReason reason, String why, LockOwner newHolder) {
        while (true) {
            State s = state;
            if (s.isFinal()) {
                return s;
            }
            if (cas(s, new Ended(Phase.LOST, s.status, s.deadlineNanos, s.reported, reason, why, newHolder))) {
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
        if (cas(expected, new Ended(Phase.LOST, expected.status, expected.deadlineNanos, expected.reported, reason, why,
                null))) {
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
            State s = state;
            if (s.phase == Phase.LOST) {
                return true;
            }
            if (s.phase == Phase.RELEASED) {
                return nowNanos - s.deadlineNanos >= 0;
            }
            if (nowNanos - s.deadlineNanos < 0) {
                return false;
            }
            if (cas(s, new Ended(Phase.LOST, s.status, s.deadlineNanos, s.reported, LossReason.EXPIRED, why, null))) {
                lostSink.accept(this);
                return true;
            }
        }
    }

    /** Marks the hold released; returns the state before (whose status, if any, is the claim to delete). */
    State release() {
        while (true) {
            State s = state;
            if (s.phase == Phase.RELEASED) {
                return s;
            }
            State released = s.lostWhy() == null && s.reason() == null && s.newHolder() == null
                    ? new State(Phase.RELEASED, s.status, s.deadlineNanos, s.reported) // lostWhy() is "released"
                    : new Ended(Phase.RELEASED, s.status, s.deadlineNanos, s.reported, s.reason(),
                            s.lostWhy() != null ? s.lostWhy() : "released", s.newHolder());
            if (cas(s, released)) {
                return s;
            }
        }
    }

    boolean isLiveAt(long nowNanos) {
        State s = state;
        return !s.isFinal() && nowNanos - s.deadlineNanos < 0;
    }

    /** Adds a listener; returns the loss to tell it at once if the hold was already lost, else null. */
    synchronized LockLost addListener(Consumer<LockLost> listener) {
        if (lost != null) {
            return lost;
        }
        if (listeners == null) {
            listeners = new ArrayList<>(1);
        }
        listeners.add(listener);
        return null;
    }

    synchronized boolean hasListeners() {
        return listeners != null && !listeners.isEmpty();
    }

    /** Records the loss and hands out the listeners to tell (each once). */
    synchronized List<Consumer<LockLost>> takeListeners(LockLost loss) {
        lost = loss;
        if (listeners == null) {
            return List.of();
        }
        List<Consumer<LockLost>> out = new ArrayList<>(listeners);
        listeners.clear();
        return out;
    }

    @Override
    public String toString() {
        State s = state;
        return "Hold[" + lock + ", " + tx + ", " + s.phase + (s.lostWhy() != null ? " (" + s.lostWhy() + ")" : "") + "]";
    }
}
