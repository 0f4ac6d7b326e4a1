package dev.locker.testkit;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockProbe;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;

/**
 * What a backend gives the conformance suite: a shared backend (one server, one store) on which any number of
 * locker instances — "processes", each with its own rid and its own JVM-local mediator — can be opened.
 * Created once per test class; tests use fresh lock names, so nothing needs cleaning between them.
 */
public interface LockerFixture extends AutoCloseable {

    /**
     * Opens a new locker instance on the shared backend. The config's rid, expiry, lockWait, retries and time source
     * must be honoured. The suite closes the lockers it opens.
     */
    Locker open(LockerConfig config);

    /**
     * True when claim expiry is measured on the config's {@link dev.locker.api.TimeSource} (then the suite drives
     * it with a {@link VirtualClock} and runs in milliseconds). False when the server's clock decides expiry (then
     * the suite uses the system clock, short expiries and real pauses).
     */
    boolean expiryFollowsConfiguredClock();

    /**
     * The backend step whose answer makes a claim the holder: {@link LockProbe.Step#WRITE} on a backend that grants
     * atomically (the default), {@link LockProbe.Step#CHECK} on wait-and-read-back.
     */
    default LockProbe.Step grantingStep() {
        return LockProbe.Step.WRITE;
    }

    /** True when {@link #breakBackend()} / {@link #repairBackend()} are supported. */
    default boolean canBreakBackend() {
        return false;
    }

    /** Makes the backend unreachable or failing for lockers already open (stop the server, close the connection). */
    default void breakBackend() {
        throw new IllegalStateException(getClass().getSimpleName() + " cannot break its backend");
    }

    /** Undoes {@link #breakBackend()}; the backend may have lost its claims. */
    default void repairBackend() {
        throw new IllegalStateException(getClass().getSimpleName() + " cannot repair its backend");
    }

    /** True when {@link #loseClaims} is supported. */
    default boolean canLoseClaims() {
        return false;
    }

    /**
     * The backend loses everything it kept for {@code lock} (claims, token, metadata) while every locker stays
     * connected: what a server restarted without its data, or a failover to a replica that missed the writes, does to a
     * lock (with no restart guard in the way).
     */
    default void loseClaims(KeyColumn lock) {
        throw new IllegalStateException(getClass().getSimpleName() + " cannot lose claims");
    }

    /** True when {@link #openFreezable}, {@link #freezeConnections} and {@link #thawConnections} are supported. */
    default boolean canFreezeConnections() {
        return false;
    }

    /** Opens a locker like {@link #open} whose connections to the backend all pass through a {@link FaultProxy}. */
    default Locker openFreezable(LockerConfig config) {
        throw new IllegalStateException(getClass().getSimpleName() + " cannot freeze connections");
    }

    /** The connections of the lockers from {@link #openFreezable} stop passing bytes, and stay open. */
    default void freezeConnections() {
        throw new IllegalStateException(getClass().getSimpleName() + " cannot freeze connections");
    }

    /** Undoes {@link #freezeConnections()}. */
    default void thawConnections() {
        throw new IllegalStateException(getClass().getSimpleName() + " cannot freeze connections");
    }

    @Override
    void close() throws Exception;
}
