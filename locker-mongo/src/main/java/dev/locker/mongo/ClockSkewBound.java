package dev.locker.mongo;

import java.time.Duration;
import java.util.Date;

/**
 * The bound on how far the clocks of the members that may judge a claim differ, and what it costs a claim. A holder
 * counts on its expiry less the bound. A lock document's TTL field outlives its holder by twice the bound.
 */
final class ClockSkewBound {

    /** How far the clocks of the members that may judge a claim can differ: taken off every holder's validity. */
    private final Duration serverClockSkew;
    /**
     * What the TTL field carries beyond a claim's expiry or a release: twice {@link #serverClockSkew}, in milliseconds.
     * A document then outlives its last token long enough that a member behind by the bound issues a higher base.
     */
    private final long keepTokenMillis;

    ClockSkewBound(Duration serverClockSkew) {
        this.serverClockSkew = serverClockSkew;
        this.keepTokenMillis = ceilMillis(serverClockSkew.multipliedBy(2));
    }

    /** The bound itself, {@code serverClockSkew}. */
    Duration serverClockSkew() {
        return serverClockSkew;
    }

    /** The bound in whole milliseconds, rounded up. */
    long millis() {
        return ceilMillis(serverClockSkew);
    }

    /**
     * What a holder counts on: the expiry, less the uncertainty of the reading its expiry was written from, less
     * {@code serverClockSkew}, since a member ahead by that much judges the claim dead that much sooner.
     */
    Duration validity(Duration expiry, Duration uncertainty) {
        return expiry.minus(uncertainty).minus(serverClockSkew);
    }

    /**
     * The TTL field's value for a document whose holder expires (or that was released) at {@code at}: later by twice
     * {@code serverClockSkew}. A member ahead by the bound may delete it; one behind by it may create the next.
     */
    Date keptUntil(Date at) {
        return keepTokenMillis == 0 ? at : new Date(at.getTime() + keepTokenMillis);
    }

    private static long ceilMillis(Duration d) {
        long millis = d.toMillis();
        return d.minusMillis(millis).isZero() ? millis : millis + 1;
    }
}
