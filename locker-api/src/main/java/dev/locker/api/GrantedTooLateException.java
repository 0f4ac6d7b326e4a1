package dev.locker.api;

/**
 * The backend granted the lock, but the grant reached this process after the lease's validity ended: the lease was
 * never usable, and its claim was withdrawn. The lock is free again unless another claimant took it meanwhile.
 *
 * <p>The grant took longer than the expiry: a lease of a few milliseconds on a slow disk or a distant server, or a
 * pause of this process. A retry may succeed; a longer expiry avoids it. {@link Locker#acquireWithin} reports it as
 * {@link Acquisition.Outcome#GRANTED_TOO_LATE}, never as an unreachable backend.
 */
public class GrantedTooLateException extends ExpiredLockException {

    private static final long serialVersionUID = 1L;

    /**
     * A grant that came too late for {@code lock}.
     *
     * @param message what happened; the lock is appended
     * @param lock the lock
     */
    public GrantedTooLateException(String message, KeyColumn lock) {
        super(message, lock, null, null, LossReason.EXPIRED);
    }
}
