package dev.locker.api;

import java.time.Duration;
import java.util.Objects;

/**
 * How one lease lives: its expiry, whether it is kept alive, and how long its claim stays at least. Immutable.
 *
 * <p>{@code LeaseOptions.expiry(Duration.ofSeconds(5)).keepAlive(false).holdAtLeast(Duration.ofSeconds(2))} reads
 * like ShedLock's lockAtMostFor and lockAtLeastFor. {@link #DEFAULTS} is what {@link Locker#acquire(KeyColumn, String)}
 * uses: the locker's configured expiry, kept alive, no hold-at-least.
 *
 * <p>The expiry is how long the claim lives on the backend unless renewed; a kept-alive lease renews every third of
 * it. The hold-at-least counts from the acquire: a lease released before it leaves its claim on the backend until
 * then, so the claim outlives the process. The locker refuses options it cannot keep (an expiry over its maximum)
 * with an {@link IllegalArgumentException} before any I/O.
 */
public final class LeaseOptions {

    /** The locker's configured expiry, kept alive, no hold-at-least. */
    public static final LeaseOptions DEFAULTS = new LeaseOptions(null, true, Duration.ZERO);

    /** Null for the locker's configured expiry. */
    private final Duration expiry;
    private final boolean keepAlive;
    private final Duration holdAtLeast;

    private LeaseOptions(Duration expiry, boolean keepAlive, Duration holdAtLeast) {
        this.expiry = expiry;
        this.keepAlive = keepAlive;
        this.holdAtLeast = holdAtLeast;
    }

    /**
     * The defaults with {@code expiry} instead of the locker's.
     *
     * @param expiry how long the claim lives unless renewed; positive
     * @return the options
     * @throws IllegalArgumentException when {@code expiry} is null, zero or negative
     */
    public static LeaseOptions expiry(Duration expiry) {
        return DEFAULTS.withExpiry(expiry);
    }

    /**
     * These options with {@code expiry} instead.
     *
     * @param expiry how long the claim lives unless renewed; positive
     * @return the options
     * @throws IllegalArgumentException when {@code expiry} is null, zero or negative
     */
    public LeaseOptions withExpiry(Duration expiry) {
        return new LeaseOptions(positive(expiry, "expiry"), keepAlive, holdAtLeast);
    }

    /**
     * These options with keep-alive on or off.
     *
     * @param on true to renew in the background until the lease is closed; false to let it expire unless renewed
     * @return the options
     */
    public LeaseOptions keepAlive(boolean on) {
        return new LeaseOptions(expiry, on, holdAtLeast);
    }

    /**
     * These options with a hold-at-least: a release before it leaves the claim on the backend until then.
     *
     * @param atLeast from the acquire; zero for none, else positive and at most the expiry
     * @return the options
     * @throws IllegalArgumentException when {@code atLeast} is null or negative
     */
    public LeaseOptions holdAtLeast(Duration atLeast) {
        if (atLeast == null || atLeast.isNegative()) {
            throw new IllegalArgumentException("holdAtLeast must be zero or positive, was " + atLeast);
        }
        return new LeaseOptions(expiry, keepAlive, atLeast);
    }

    /**
     * The expiry, or null for the locker's configured one.
     *
     * @return the expiry, or null for the locker's configured one
     */
    public Duration expiry() {
        return expiry;
    }

    /**
     * The expiry these options give on a locker configured with {@code configured}.
     *
     * @param configured the locker's configured expiry
     * @return this expiry, else {@code configured}
     */
    public Duration expiryOr(Duration configured) {
        return expiry != null ? expiry : configured;
    }

    /**
     * Whether the lease is renewed in the background.
     *
     * @return whether the lease is renewed in the background
     */
    public boolean keepAlive() {
        return keepAlive;
    }

    /**
     * How long from the acquire the claim stays at least; zero for none.
     *
     * @return how long from the acquire the claim stays at least; zero for none
     */
    public Duration holdAtLeast() {
        return holdAtLeast;
    }

    private static Duration positive(Duration d, String name) {
        if (d == null || d.isZero() || d.isNegative()) {
            throw new IllegalArgumentException(name + " must be positive, was " + d);
        }
        return d;
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof LeaseOptions)) {
            return false;
        }
        LeaseOptions other = (LeaseOptions) o;
        return keepAlive == other.keepAlive && Objects.equals(expiry, other.expiry)
                && holdAtLeast.equals(other.holdAtLeast);
    }

    @Override
    public int hashCode() {
        return Objects.hash(expiry, keepAlive, holdAtLeast);
    }

    @Override
    public String toString() {
        return "LeaseOptions{expiry=" + (expiry == null ? "the locker's" : expiry) + ", keepAlive=" + keepAlive
                + ", holdAtLeast=" + holdAtLeast + "}";
    }
}
