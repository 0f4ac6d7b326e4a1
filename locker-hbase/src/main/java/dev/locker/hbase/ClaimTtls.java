package dev.locker.hbase;

import dev.locker.api.KeyColumn;
import dev.locker.api.PermanentLockingException;

import java.time.Duration;

/**
 * The holder cell's TTL for a claim of a given expiry, on one table: the expiry plus the region servers' clock
 * allowance ({@link LockTable#cellTtl}), below the claims family's TTL, which would otherwise remove the claim while
 * held.
 */
final class ClaimTtls {

    private final Duration serverClockSkew;
    /** The claims family's TTL, or null when it has none. */
    private final Duration claimsFamilyTtl;
    private final String where;

    /**
     * @param serverClockSkew the region servers' clock allowance
     * @param claimsFamilyTtl the claims family's TTL as the table has it, or null when it has none
     * @param where           the cluster and table, for messages
     */
    ClaimTtls(Duration serverClockSkew, Duration claimsFamilyTtl, String where) {
        this.serverClockSkew = serverClockSkew;
        this.claimsFamilyTtl = claimsFamilyTtl;
        this.where = where;
    }

    /**
     * The cell TTL for a claim of {@code expiry}.
     *
     * @throws IllegalArgumentException when HBase cannot set it, or the claims family's TTL would end it first
     */
    Duration of(Duration expiry) {
        Duration ttl = LockTable.cellTtl(expiry, serverClockSkew);
        if (claimsFamilyTtl != null && claimsFamilyTtl.compareTo(ttl) <= 0) {
            throw new IllegalArgumentException("expiry " + expiry + " plus the region servers' clock allowance "
                    + serverClockSkew + " must be shorter than the TTL of the claims family of " + where + ", "
                    + claimsFamilyTtl.toSeconds() + " s: the claim would vanish while held");
        }
        return ttl;
    }

    /**
     * {@link #of} in milliseconds, for a claim on {@code lock}. The engine checked the expiry before any I/O: a
     * refusal here is the locker's own expiry, and so permanent.
     */
    long millis(KeyColumn lock, Duration expiry) {
        try {
            return of(expiry).toMillis();
        } catch (IllegalArgumentException tooLong) {
            throw new PermanentLockingException(tooLong.getMessage(), lock, null, tooLong);
        }
    }
}
