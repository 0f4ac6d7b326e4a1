package dev.locker.engine;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockLost;
import dev.locker.api.LockOwner;
import dev.locker.api.LockStatus;
import dev.locker.api.LossReason;
import dev.locker.api.TimeSource;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
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
 *
 * <p>A hold of a single-lock lease ({@code acquire(lock)}, the common case) is also its own transaction
 * ({@link #ownTransaction}): it is what the lease passes to its locker, the transaction's record of its one hold, and
 * its keep-alive renewal's timer entry (its second timer slot), so a held lease costs no transaction object, no
 * record of the transaction's holds and no map entry besides this one. {@link #markDone} then plays the part the
 * removal of a transaction's record plays for other transactions: the one release (or close) that deletes its claim.
 */
final class Hold extends AbstractQueuedSynchronizer implements HoldStates, Timer.TwoSlots, KeepAlive.Kept {

    // Hold extends the synchronizer of its steps (see lockSteps) rather than owning a ReentrantLock: one object per
    // held lock instead of three, which matters with many locks held (client heap per held lock).
    private static final long serialVersionUID = 1L;

    /** The state of every hold whose claim is being written (its deadline: {@link #provisionalDeadline}). */
    private static final State CLAIMING = new Snapshot(Phase.CLAIMING, null, false);
    /** The state of every hold released before any status was recorded. */
    private static final State RELEASED_UNWRITTEN = new Snapshot(Phase.RELEASED, null, false);

    private static final VarHandle STATE;
    private static final VarHandle DONE;

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(Hold.class, "state", State.class);
            DONE = MethodHandles.lookup().findVarHandle(Hold.class, "done", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** {@link #claimedEpochNanos} when the instant was not recorded (or lies beyond the years 1677 to 2262). */
    private static final long NOT_RECORDED = Long.MIN_VALUE;

    final KeyColumn lock;
    /** The transaction that claimed the lock: this hold itself when it is its own ({@link #ownTransaction}). */
    final Object tx;
    /** The reason its claim records, for a hold that is its own transaction; else null (the transaction's). */
    final String why;
    /**
     * When the claim was first asked for, by this process's wall clock (to tell a forced release's record apart): the
     * instant in nanoseconds since the epoch, kept as a number rather than as an object per held lock. Written once,
     * before the hold is published to other threads.
     */
    private final long claimedEpochNanos;
    /** The deadline of the states that carry no status (while the claim is written, and if it never was). */
    /**
     * Set once when the hold is made, and again only by {@link #restartProvisionalDeadline} while no other thread can
     * see the hold (before the mediator first takes it); published with the hold.
     */
    private long provisionalDeadline;
    private volatile State state;
    private final Consumer<Hold> lostSink;
    /**
     * Guarded by this hold's monitor: null, then the listeners to tell of a loss (an ArrayList), then, once the loss is
     * recorded, the {@link LockLost} itself (one field for both: a hold is kept per held lock). The same monitor is
     * where {@link LocalLockMediator#awaitRelease} waits for this hold to stop being its lock's entry.
     */
    private Object listeners;
    /** The keep-alive's watchdog slot for this hold (see {@link Timer.Timed}): no object per watched hold. */
    private int timerIndex = -1;
    private long timerDue;
    /** The renewal's slot, for a hold that is its own transaction (see {@link Timer.TwoSlots}). */
    private int timerIndex2 = -1;
    private long timerDue2;
    /** For a hold that is its own transaction: is it kept alive ({@link KeepAlive.Kept})? */
    private volatile boolean keptAlive;
    /** For a hold that is its own transaction: set once, by the release or close that finishes it. */
    private volatile boolean done;
    /**
     * This claim's expiry, which its write and renewals pass to the driver. Set before the hold is published; changed
     * only by a renewal to a new expiry, under the steps lock. Volatile: the keep-alive reads it to schedule.
     */
    private volatile Duration expiry;
    /** The monotonic instant before which a release leaves the claim on the backend; see {@link #holdsAtLeast}. */
    private long holdUntil;
    /** Whether a release before {@link #holdUntil} leaves the claim on the backend. Set before publication. */
    private boolean holdsAtLeast;

    /**
     * A hold whose claim is being written; it cannot outlive {@code deadlineNanos} before the write answers.
     * {@code lostSink} is told once when the hold is lost.
     */
    Hold(KeyColumn lock, Object tx, long deadlineNanos, Consumer<Hold> lostSink) {
        this(lock, tx, deadlineNanos, lostSink, null);
    }

    /** Likewise, recording {@code claimedAt}: when the claim was first asked for, by this process's wall clock. */
    Hold(KeyColumn lock, Object tx, long deadlineNanos, Consumer<Hold> lostSink, Instant claimedAt) {
        this(lock, tx, null, deadlineNanos, lostSink, claimedAt);
    }

    /** A hold that is its own transaction, whose claim records {@code why} (see {@link #ownTransaction}). */
    static Hold forLease(KeyColumn lock, String why, long deadlineNanos, Consumer<Hold> lostSink, Instant claimedAt) {
        return new Hold(lock, null, why == null ? "" : why, deadlineNanos, lostSink, claimedAt);
    }

    private Hold(KeyColumn lock, Object tx, String why, long deadlineNanos, Consumer<Hold> lostSink,
                 Instant claimedAt) {
        this.lock = lock;
        this.tx = why != null ? this : tx;
        this.why = why;
        this.lostSink = lostSink;
        this.claimedEpochNanos = epochNanos(claimedAt);
        this.provisionalDeadline = deadlineNanos;
        // a plain store, not a volatile one (which costs a full fence per acquire): a hold reaches other threads only
        // through the mediator's map, a transaction's holds or the keep-alive, each of which publishes it safely
        STATE.set(this, CLAIMING);
    }

    /**
     * Counts the provisional deadline from now again: for a hold that waited in this process before the mediator took
     * it, so that it does not become the entry already past its deadline (another transaction would take it over
     * while its claim is written). Only before the hold is first taken: it is not shared with any thread yet.
     */
    void restartProvisionalDeadline(long deadlineNanos) {
        this.provisionalDeadline = deadlineNanos;
    }

    private static long epochNanos(Instant at) {
        if (at == null) {
            return NOT_RECORDED;
        }
        try {
            long n = Math.addExact(Math.multiplyExact(at.getEpochSecond(), 1_000_000_000L), at.getNano());
            return n == NOT_RECORDED ? NOT_RECORDED + 1 : n;
        } catch (ArithmeticException beyondTheRange) {
            return NOT_RECORDED;
        }
    }

    /**
     * Sets the lease's terms, before the hold is published: its expiry, and a hold-at-least until {@code holdUntil}
     * (a monotonic instant) when {@code holdsAtLeast}.
     */
    void terms(Duration expiry, boolean holdsAtLeast, long holdUntil) {
        this.expiry = expiry;
        this.holdsAtLeast = holdsAtLeast;
        this.holdUntil = holdUntil;
    }

    /** This claim's expiry: what its write and its renewals ask of the backend. */
    Duration expiry() {
        return expiry;
    }

    /** After a renewal to {@code newExpiry} succeeded, under the steps lock: later renewals keep it. */
    void expiry(Duration newExpiry) {
        this.expiry = newExpiry;
    }

    /** Nanoseconds its hold-at-least still lasts at {@code nowNanos}; zero or less when there is none left. */
    long holdAtLeastLeft(long nowNanos) {
        return holdsAtLeast ? holdUntil - nowNanos : 0;
    }

    /** When the claim was first asked for, or null if not recorded. */
    Instant claimedAt() {
        return claimedEpochNanos == NOT_RECORDED ? null
                : Instant.ofEpochSecond(Math.floorDiv(claimedEpochNanos, 1_000_000_000L),
                        Math.floorMod(claimedEpochNanos, 1_000_000_000L));
    }

    /** True for the hold of a single-lock lease, which is its own transaction ({@code tx == this}). */
    boolean ownTransaction() {
        return tx == this;
    }

    /**
     * A lost sink that also names the clock its holds' deadlines are on: its locker's. Lockers that share a mediator
     * may run on different time sources, whose monotonic origins are unrelated; each hold is judged on its own.
     */
    interface ClockedSink extends Consumer<Hold> {
        TimeSource time();
    }

    /**
     * The monotonic reading now on the clock this hold's deadlines are on (its locker's, see {@link ClockedSink}), or
     * on {@code fallback} for a sink that does not name one.
     */
    long nowOn(TimeSource fallback) {
        return (lostSink instanceof ClockedSink ? ((ClockedSink) lostSink).time() : fallback).nanoTime();
    }

    /** Is {@code sink} the one this hold reports its loss to (is it a hold of that sink's locker)? */
    boolean reportsTo(Consumer<Hold> sink) {
        return lostSink == sink;
    }

    /** For a hold that is its own transaction: true for the one caller that finishes it (release or close). */
    boolean markDone() {
        return DONE.compareAndSet(this, false, true);
    }

    /** For a hold that is its own transaction: was it finished (or is it being)? */
    boolean isDone() {
        return done;
    }

    @Override
    public boolean keptAlive() {
        return keptAlive;
    }

    @Override
    public void keptAlive(boolean on) {
        keptAlive = on;
    }

    /** As its own transaction's record: its one hold. */
    @Override
    public Hold[] holds() {
        return new Hold[] {this};
    }

    @Override
    public int timerIndex2() {
        return timerIndex2;
    }

    @Override
    public void timerIndex2(int i) {
        timerIndex2 = i;
    }

    @Override
    public long timerDue2() {
        return timerDue2;
    }

    @Override
    public void timerDue2(long due) {
        timerDue2 = due;
    }

    /**
     * The deadline of {@code s} (a state of this hold) on the monotonic clock: the one recorded with its status, or,
     * when it has none, the provisional deadline the hold was made with.
     */
    long deadlineOf(State s) {
        LockStatus status = s.status();
        return status != null ? status.deadlineNanos() : provisionalDeadline;
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
     * never that another step of the same holder got there first. A release takes it before it marks the hold; a
     * loss does not take it. Reentrant, like the ReentrantLock it replaces: the synchronizer's state counts the
     * owner's holds.
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

    /** Takes the steps lock, waiting at most {@code nanos} for a step in flight; false if it did not get it. */
    boolean lockSteps(long nanos) throws InterruptedException {
        return tryLockSteps() || tryAcquireNanos(1, nanos);
    }

    void unlockSteps() {
        release(1);
    }

    /** Does this thread hold the steps lock (is it inside a step of this hold)? */
    boolean stepsHeldByMe() {
        return getExclusiveOwnerThread() == Thread.currentThread();
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
        return cas(expected, reported ? State.steady(status) : new Unreported(status));
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
            if (cas(s, new Ended(Phase.LOST, s.status(), s.reported(), reason, why, newHolder))) {
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
        if (cas(expected, new Ended(Phase.LOST, expected.status(), expected.reported(), reason, why, null))) {
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
            Phase phase = s.phase();
            if (phase == Phase.LOST) {
                return true;
            }
            if (phase == Phase.RELEASED) {
                return nowNanos - deadlineOf(s) >= 0;
            }
            if (nowNanos - deadlineOf(s) < 0) {
                return false;
            }
            if (cas(s, new Ended(Phase.LOST, s.status(), s.reported(), LossReason.EXPIRED, why, null))) {
                lostSink.accept(this);
                return true;
            }
        }
    }

    /** Marks the hold released; returns the state before (whose status, if any, is the claim to delete). */
    State release() {
        while (true) {
            State s = state;
            if (s.phase() == Phase.RELEASED) {
                return s;
            }
            State released = s.lostWhy() == null && s.reason() == null && s.newHolder() == null
                    ? (s.status() == null && !s.reported() ? RELEASED_UNWRITTEN // lostWhy() is "released"
                            : new Snapshot(Phase.RELEASED, s.status(), s.reported()))
                    : new Ended(Phase.RELEASED, s.status(), s.reported(), s.reason(),
                            s.lostWhy() != null ? s.lostWhy() : "released", s.newHolder());
            if (cas(s, released)) {
                return s;
            }
        }
    }

    boolean isLiveAt(long nowNanos) {
        State s = state;
        return !s.isFinal() && nowNanos - deadlineOf(s) < 0;
    }

    /** Adds a listener; returns the loss to tell it at once if the hold was already lost, else null. */
    @SuppressWarnings("unchecked")
    synchronized LockLost addListener(Consumer<LockLost> listener) {
        Object l = listeners;
        if (l instanceof LockLost) {
            return (LockLost) l;
        }
        if (l == null) {
            l = new ArrayList<Consumer<LockLost>>(1);
            listeners = l;
        }
        ((ArrayList<Consumer<LockLost>>) l).add(listener);
        return null;
    }

    synchronized boolean hasListeners() {
        return listeners instanceof ArrayList && !((ArrayList<?>) listeners).isEmpty();
    }

    /** Records the loss and hands out the listeners to tell (each once). */
    @SuppressWarnings("unchecked")
    synchronized List<Consumer<LockLost>> takeListeners(LockLost loss) {
        Object l = listeners;
        listeners = loss;
        if (!(l instanceof ArrayList)) {
            return List.of();
        }
        return (List<Consumer<LockLost>>) l; // nobody else holds it: handed out whole
    }

    /**
     * A hold that is its own transaction prints as that transaction (it is what messages name as the transaction, e.g.
     * the local holder); any other as {@code Hold[lock, tx, phase]}.
     */
    @Override
    public String toString() {
        if (tx == this) {
            return why.isEmpty() ? "lease-tx@" + Integer.toHexString(System.identityHashCode(this))
                    : "lease-tx(" + why + ")";
        }
        State s = state;
        return "Hold[" + lock + ", " + tx + ", " + s.phase() + (s.lostWhy() != null ? " (" + s.lostWhy() + ")" : "") + "]";
    }
}
