package dev.locker.hbase;

import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.parallel.ResourceLock;
import org.junit.jupiter.api.Test;

/**
 * A grant its claimer gave up on leaves no claim behind for long, on a table whose releases leave "free@token" (a
 * grant after a release checks that one cell): the claim it writes is given back, whenever it lands within its
 * lifetime. {@link HBaseGivenUpGrantOnEmptyReleaseTest} runs the cases of a table whose releases leave the empty value.
 */
@Order(2) // among the longest classes: started early
// one given-up-grant class at a time: each holds region server handlers at its gates for seconds, and two at once
// starve the real-time lease cases of the classes beside them
@ResourceLock("given-up-grants")
class HBaseGivenUpGrantTest extends GivenUpGrantCases {

    HBaseGivenUpGrantTest() {
        super("locker_given_up_grant_token", TableLayout.TOKEN_ON_RELEASE);
    }

    /**
     * Given a lock released at t ("free@t"), a claimer's one-cell grant held on the region server, and another
     * locker's claim taken over "free@t" before the claimer is interrupted: that claim expires and shows "free@t"
     * again, and the held grant the claimer gave up on lands on it. Its claim is given back once the grant's RPC
     * deadline passed, long before the claim's own expiry.
     */
    @Test
    void aGrantGivenUpOnThatLandsOnAFreeValueShownAgainIsGivenBackOnceItsDeadlinePassed() throws Exception {
        grantGivenUpOnWhileAnotherClaimHeldTheLock(false, false);
    }

    /**
     * The same, with the claimer's locker closed once the claimer gave up, its connection kept open by its owner: the
     * claim the held grant writes is still given back once its deadline passed, long before the claim's own expiry.
     */
    @Test
    void aGrantGivenUpOnThatLandsAfterItsLockerClosedIsGivenBackOnceItsDeadlinePassed() throws Exception {
        grantGivenUpOnWhileAnotherClaimHeldTheLock(true, false);
    }

    /**
     * The same, with the lock's region offline from before the grant's deadline until after the claimer's give-back
     * failed: the claim is still given back once the region is back, before the claim's own expiry.
     */
    @Test
    void aGrantGivenUpOnThatLandsIsGivenBackOnceItsRegionIsBackThoughItWasOfflineAtTheDeadline() throws Exception {
        grantGivenUpOnWhileAnotherClaimHeldTheLock(false, true);
    }
}
