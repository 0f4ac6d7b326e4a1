package dev.locker.api;

import java.time.Instant;

/**
 * What a locker knows about one lock one transaction wrote. Backends extend it with what their protocol needs
 * (the claim's column, the server's timestamp...).
 */
public interface LockStatus {

    /** When our claim expires, by the locker's time source (renewal moves it). */
    Instant expiry();

    /** True once the backend has confirmed that our claim is the holder. */
    boolean isHeld();

    /** The fencing token given when our claim became the holder; only meaningful when {@link #isHeld()}. */
    long fencingToken();
}
