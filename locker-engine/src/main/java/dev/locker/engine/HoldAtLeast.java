package dev.locker.engine;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.LockProbe;
import dev.locker.api.LockStatus;
import dev.locker.api.LockerConfig;
import dev.locker.api.LossReason;
import dev.locker.spi.LockDriver;

import java.time.Duration;

/**
 * How a release leaves a claim on the backend for the rest of its hold-at-least, instead of deleting it. The backend,
 * not this process, then keeps the lock until the hold-at-least ends.
 *
 * @param <S> what the backend remembers of one claim
 */
final class HoldAtLeast<S extends LockStatus> {

    private final LockerConfig config;
    private final LockDriver<S> driver;
    private final Steps<S> steps;

    HoldAtLeast(LockerConfig config, LockDriver<S> driver, Steps<S> steps) {
        this.config = config;
        this.driver = driver;
        this.steps = steps;
    }

    /**
     * May a release leave this claim for its hold-at-least? A held claim may, and so may one lost by local expiry (the
     * early lost signal, a keep-alive that stopped): the backend may still keep it. The leave touches only our own
     * live claim, so a claim that died, went or was taken over meanwhile stays as it is.
     */
    static boolean mayLeave(Hold.State before, LockStatus status) {
        return status.isHeld() && (before.phase() == Hold.Phase.CLAIMED
                || before.phase() == Hold.Phase.LOST && before.reason() == LossReason.EXPIRED);
    }

    /**
     * Renews the claim to the {@code leftNanos} its hold-at-least still lasts, and leaves it there: the backend, not
     * this process, keeps it until then. False when the claim was no longer ours.
     */
    boolean leave(Hold hold, S status, long leftNanos) {
        Duration leave = atLeastTheDriversMinimum(hold, Duration.ofNanos(leftNanos));
        try {
            steps.step(LockProbe.Step.RENEW, hold.lock, "leaving a claim for its hold-at-least",
                    () -> driver.leave(hold.lock, status, leave));
            return true;
        } catch (ExpiredLockException gone) {
            return false;
        }
    }

    /**
     * The time left, doubled until the driver accepts it, and at most the claim's own (accepted) expiry. A driver
     * may refuse a short expiry meant for a new lease. Leaving the claim longer than its hold-at-least is safe.
     */
    private Duration atLeastTheDriversMinimum(Hold hold, Duration left) {
        Duration own = hold.expiry() != null ? hold.expiry() : config.expiry();
        Duration leave = left;
        while (leave.compareTo(own) < 0) {
            try {
                driver.checkExpiry(leave); // writes nothing
                return leave;
            } catch (IllegalArgumentException tooShort) {
                leave = leave.multipliedBy(2);
            }
        }
        return left.compareTo(own) < 0 ? own : left;
    }
}
