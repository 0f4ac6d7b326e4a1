package dev.locker.engine;

import dev.locker.api.LockerConfig;

import java.util.Objects;

/**
 * What every backend's builder shares: the locker configuration and the JVM-local mediator. Backends extend it with
 * their own connection options.
 *
 * @param <B> the concrete builder, returned by the setters for chaining
 */
public abstract class LockerBuilder<B extends LockerBuilder<B>> {

    protected LockerConfig config = LockerConfig.defaults();
    protected LocalLockMediator mediator;

    protected LockerBuilder() {
    }

    @SuppressWarnings("unchecked")
    private B self() {
        return (B) this;
    }

    /** The configuration the locker will run with: {@link #config} plus whatever the backend's options add. */
    protected LockerConfig effectiveConfig() {
        return config;
    }

    /** The locker configuration (expiry, rid, time source...); default {@link LockerConfig#defaults()}. */
    public B config(LockerConfig c) {
        this.config = Objects.requireNonNull(c, "config must not be null");
        return self();
    }

    /**
     * Shares JVM-local arbitration with other lockers of this process on the same backend, so their transactions meet
     * here before they meet in the store (default: a mediator of the locker's own).
     */
    public B mediator(LocalLockMediator m) {
        this.mediator = m;
        return self();
    }
}
