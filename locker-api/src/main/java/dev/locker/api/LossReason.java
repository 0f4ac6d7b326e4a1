package dev.locker.api;

/** Why a holder lost its lock (not a release: a release is the holder's own choice and no loss). */
public enum LossReason {
    /** Another claim holds the lock now: ours expired on the backend's clock and someone took over. */
    TAKEN_OVER,
    /** Our claim is no longer in the backend: it expired, or the server lost it (restart, failover). */
    GONE,
    /** An operator force-released our claim ({@link Locker#forceRelease(KeyColumn, String)}); the loss names who and why. */
    FORCE_RELEASED,
    /** This process's deadline for the claim passed (or was about to) without a successful renewal. */
    EXPIRED,
    /** The locker was closed. */
    LOCKER_CLOSED
}
