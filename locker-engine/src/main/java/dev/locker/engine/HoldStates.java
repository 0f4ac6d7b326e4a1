package dev.locker.engine;

import dev.locker.api.LockOwner;
import dev.locker.api.LockStatus;
import dev.locker.api.LossReason;

/**
 * The states of a {@link Hold}, immutable snapshots it moves through by compare-and-set, never backwards. Hold
 * implements this interface so that {@code Hold.State} and {@code Hold.Phase} keep naming these types.
 */
interface HoldStates {

    /** Where a hold is: its claim being written, claimed, or in one of the two final phases. */
    enum Phase { CLAIMING, CLAIMED, LOST, RELEASED }

    /**
     * An immutable snapshot of a hold. {@code status} is null while CLAIMING and may be null after that if the claim
     * was never written; {@code reported} is true once a checkLocks call told the caller the claim is held. The
     * deadline of a state is {@link Hold#deadlineOf}: its status's, or the hold's provisional deadline while no
     * status was recorded, so the CLAIMING state, and the RELEASED state of a claim never written, are shared
     * constants.
     *
     * <p>The steady state of a held lock is CLAIMED, reported, and nothing but its status: the smallest snapshot, as
     * there is one per held lock. A status that is a {@code State} itself ({@link ClaimStatus},
     * {@link ConsistentKeyClaim}) is that state ({@link #steady}), so it costs no snapshot at all; any other is wrapped
     * in a {@link Held}. The other states: {@link Unreported} (CLAIMED, the claim not reported yet),
     * {@link Snapshot} (any phase, without a loss), {@link Ended} (a final state with a loss).
     */
    abstract class State {

        abstract LockStatus status();

        Phase phase() {
            return Phase.CLAIMED;
        }

        boolean reported() {
            return true;
        }

        /** Why the hold was lost, or null. */
        LossReason reason() {
            return null;
        }

        /** Why the hold ended: the loss's explanation, "released" for a plain release, else null. */
        String lostWhy() {
            return phase() == Phase.RELEASED ? "released" : null;
        }

        /** The new holder where the loss named one, else null. */
        LockOwner newHolder() {
            return null;
        }

        boolean isFinal() {
            Phase phase = phase();
            return phase == Phase.LOST || phase == Phase.RELEASED;
        }

        /** The steady state of {@code status}: itself if it is a state, else a {@link Held}. */
        static State steady(LockStatus status) {
            return status instanceof State ? (State) status : new Held(status);
        }

        /** For a status that is its own steady state, whose toString is its own. */
        final String describe() {
            return "State[" + phase() + ", " + status() + ", reported=" + reported()
                    + (lostWhy() != null ? ", " + lostWhy() : "") + "]";
        }
    }

    /** CLAIMED with {@code status}, reported: the steady state of a status that is not a state itself. */
    class Held extends State {
        private final LockStatus status;

        Held(LockStatus status) {
            this.status = status;
        }

        @Override
        LockStatus status() {
            return status;
        }

        @Override
        public String toString() {
            return describe();
        }
    }

    /** CLAIMED with a status that no checkLocks reported yet (the claim was just written). */
    final class Unreported extends Held {
        Unreported(LockStatus status) {
            super(status);
        }

        @Override
        boolean reported() {
            return false;
        }
    }

    /** A state of any phase, without a loss. */
    class Snapshot extends Held {
        private final Phase phase;
        private final boolean reported;

        Snapshot(Phase phase, LockStatus status, boolean reported) {
            super(status);
            this.phase = phase;
            this.reported = reported;
        }

        @Override
        Phase phase() {
            return phase;
        }

        @Override
        boolean reported() {
            return reported;
        }
    }

    /** A final state that carries a loss: LOST, or RELEASED after a loss. */
    final class Ended extends Snapshot {
        private final LossReason reason;
        private final String lostWhy;
        private final LockOwner newHolder;

        Ended(Phase phase, LockStatus status, boolean reported, LossReason reason, String lostWhy,
              LockOwner newHolder) {
            super(phase, status, reported);
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
}
