package dev.locker.redis;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockTransaction;
import dev.locker.local.ClaimStatus;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static dev.locker.redis.RedisWaitingFixture.lock;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Adversarial review of the heap branch on Redis: a claim id kept as (instance prefix, acquire number) and rebuilt
 * when sent must be the bytes the acquire wrote, for leases on one lock and on several, for JanusGraph-style
 * transactions, and after renewals (renew, verify and delete are compare-on-nonce scripts: a wrong id would make them
 * fail, or leave the claim behind).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RedisHeapReviewTest {

    @RegisterExtension
    static final RedisWaitingFixture fixture = RedisWaitingFixture.onTarget("heaprev");

    private RedisLocker locker(String name) {
        return fixture.open(RedisWaitingFixture.withRid(fixture.onTarget(), name + "-" + System.nanoTime(),
                Duration.ofSeconds(30)));
    }

    /** The claim id the locker keeps for {@code lease}'s lock, as text (Redis nonces are ASCII hex). */
    private static String claimIdOf(Lease lease) {
        return new String(((ClaimStatus) lease.status()).claimId(), StandardCharsets.US_ASCII);
    }

    /** Our field holds a claim that is not released (a release leaves "0 0 <token> <counter> " there: common.lua). */
    private boolean claimed(RedisLocker l, KeyColumn lock) {
        byte[] v = fixture.admin().hget(l.redisKey(lock), l.claimField());
        return v != null && !new String(v, StandardCharsets.US_ASCII).startsWith("0 0 ");
    }

    @Test
    void theRebuiltClaimIdRenewsVerifiesAndDeletesTheWrittenClaim() {
        RedisLocker a = locker("a");
        for (int round = 0; round < 20; round++) { // acquire numbers 1..20: every hex digit position moves
            KeyColumn lock = lock("one");
            Lease lease = a.acquire(lock, "round " + round);
            String id = claimIdOf(lease);
            assertEquals(32, id.length(), id);
            assertTrue(id.matches("[0-9a-f]{32}"), id);
            String stored = new String(fixture.admin().hget(a.redisKey(lock), a.claimField()),
                    StandardCharsets.ISO_8859_1);
            // the compact claim: the instance half in the field's name, the acquire number in the value
            assertTrue(new String(a.claimField(), StandardCharsets.ISO_8859_1).endsWith(id.substring(0, 16)), id);
            assertTrue(List.of(stored.split(" ")).contains(Long.toHexString(Long.parseUnsignedLong(id.substring(16), 16))),
                    "the stored claim " + stored + " carries the acquire number of the id the locker keeps " + id);
            long token = lease.fencingToken();
            lease.renew();
            lease.renew();
            assertEquals(id, claimIdOf(lease), "a renewal keeps the id");
            lease.check();
            assertEquals(token, lease.fencingToken());
            assertTrue(claimed(a, lock));
            lease.close();
            assertFalse(claimed(a, lock), "the rebuilt id deleted the written claim");
        }
    }

    @Test
    void multiLockLeasesAndTransactionsKeepTheirIdsToo() {
        RedisLocker a = locker("b");
        KeyColumn x = lock("x");
        KeyColumn y = lock("y");
        Lease both = a.acquireAll(List.of(x, y), "both");
        both.renew();
        both.check();
        both.close();
        assertFalse(claimed(a, x));
        assertFalse(claimed(a, y));
        LockTransaction tx = new LockTransaction("janus");
        a.writeLock(x, tx);
        a.checkLocks(tx);
        a.renewLocks(tx);
        a.verifyLocks(tx);
        assertTrue(claimed(a, x));
        a.deleteLocks(tx);
        assertFalse(claimed(a, x));
    }
}
