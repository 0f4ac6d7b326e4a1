package dev.locker.redis;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockInfo;
import dev.locker.api.LockPage;
import dev.locker.api.LockTransaction;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.PermanentLockingException;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.UnifiedJedis;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static dev.locker.redis.RedisWaitingFixture.withRid;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Listing on one Redis server: what SCAN-based listing costs (counted with {@code INFO commandstats}), keys under the
 * pattern that are not lock hashes, the server-clock expiry, and the ACL a listing needs.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RedisListingTest {

    @RegisterExtension
    static final RedisWaitingFixture fixture = RedisWaitingFixture.onFreshTarget("rls");

    private final String prefix = fixture.prefix();

    private static UnifiedJedis admin() {
        return fixture.admin();
    }

    private RedisLocker locker(String name, RedisLockerBuilder b) {
        return fixture.open(withRid(b, name, Duration.ofSeconds(30)));
    }

    private static LockTransaction take(Locker l, KeyColumn lock) {
        LockTransaction tx = new LockTransaction("listing test");
        l.writeLock(lock, tx);
        l.checkLocks(tx);
        return tx;
    }

    /**
     * 5000 other keys and three held locks: every call makes at most 8 SCANs and at most one script call per SCAN
     * (only for a batch that found candidate keys); the calls together list the three locks once each.
     */
    @Test
    void aListingWalksTheDatabaseInBoundedCallsOfScansAndOneScriptPerBatch() {
        Assumptions.assumeFalse(RedisTarget.isExternal(), "an external server may have other traffic");
        RedisLocker a = locker("a", fixture.onTarget());
        String scenario = "bounded-" + LockerConfig.randomRid().substring(0, 6) + "/";
        try (AbstractPipeline p = admin().pipelined()) {
            for (int i = 0; i < 5000; i++) {
                p.set(prefix + "other:" + i, "x");
            }
            p.sync();
        }
        Set<KeyColumn> held = Set.of(KeyColumn.of(scenario + "1", ""), KeyColumn.of(scenario + "2", "c"),
                KeyColumn.of(scenario + "three", "c"));
        for (KeyColumn l : held) {
            take(a, l);
        }
        List<LockInfo> listed = new ArrayList<>();
        String cursor = null;
        int calls = 0;
        do {
            resetStats();
            LockPage page = a.list(scenario, 10, cursor);
            long scans = calls("scan");
            long scripts = calls("evalsha") + calls("eval");
            assertTrue(scans >= 1 && scans <= RedisListing.SCANS_PER_CALL, "SCANs per call: " + scans);
            assertTrue(scripts <= scans, "at most one script call per SCAN batch: " + scripts + " for " + scans);
            listed.addAll(page.locks());
            cursor = page.nextCursor().orElse(null);
            calls++;
        } while (cursor != null && calls < 1000);
        assertEquals(null, cursor, "the listing ends");
        assertTrue(calls > 1, "5000 keys take more than one bounded call (" + calls + ")");
        assertEquals(held.size(), listed.size(), "each held lock once: " + listed);
        assertEquals(held, new HashSet<>(listed.stream().map(LockInfo::lock).toList()));
    }

    /** A string stored under the very key a lock would use matches the pattern and the tag: list.lua skips it. */
    @Test
    void aKeyOfAnotherTypeWhereALockWouldLiveIsNotListed() {
        RedisLocker a = locker("a", fixture.onTarget());
        String scenario = "typed-" + LockerConfig.randomRid().substring(0, 6) + "/";
        KeyColumn squatted = KeyColumn.of(scenario + "string", "c");
        admin().set(a.redisKey(squatted), "not a lock hash".getBytes(StandardCharsets.US_ASCII));
        KeyColumn held = KeyColumn.of(scenario + "held", "c");
        take(a, held);
        List<LockInfo> listed = listAll(a, scenario);
        assertEquals(List.of(held), listed.stream().map(LockInfo::lock).toList());
    }

    /** The listed token is the holder's, and the expiry is the claim's, both written by the script on server time. */
    @Test
    void theListedTokenAndExpiryAreTheClaimsOnTheServersClock() {
        RedisLocker a = locker("a", fixture.onTarget());
        KeyColumn lock = KeyColumn.of("clock-" + LockerConfig.randomRid().substring(0, 6), "c");
        LockTransaction tx = take(a, lock);
        LockInfo info = listAll(a, new String(lock.key(), StandardCharsets.UTF_8)).get(0);
        assertEquals(a.fencingToken(lock, tx), info.fencingToken());
        assertEquals(info.holder().since().plus(Duration.ofSeconds(30)), info.expiresAt(),
                "expiry = the server time the claim was written + the expiry");
        assertEquals(a.rid(), info.holder().rid());
    }

    /**
     * The least-privilege ACL for locking (README) does not allow SCAN and TYPE: listing is refused for good, naming the
     * ACL; with {@code +scan +type} added it works.
     */
    @Test
    void listingNeedsScanAndTypeOnTopOfTheLockingAcl() {
        Assumptions.assumeFalse(RedisTarget.isExternal(), "needs a server it can configure");
        String keys = "~" + prefix + "*";
        aclSetUser("locking", "on", ">pw", "resetkeys", keys, "-@all", "+evalsha", "+eval", "+time", "+hgetall",
                "+hget", "+hset", "+hdel", "+hkeys", "+pexpire", "+info");
        aclSetUser("lister", "on", ">pw", "resetkeys", keys, "-@all", "+evalsha", "+eval", "+time", "+hgetall",
                "+hget", "+hset", "+hdel", "+hkeys", "+pexpire", "+info", "+scan", "+type");
        RedisLocker locking = locker("locking", fixture.onTarget().user("locking").password("pw"));
        RedisLocker lister = locker("lister", fixture.onTarget().user("lister").password("pw"));
        KeyColumn lock = KeyColumn.of("acl-" + LockerConfig.randomRid().substring(0, 6), "c");
        take(locking, lock);
        PermanentLockingException e = assertThrows(PermanentLockingException.class, () -> locking.list("", 10, null));
        assertTrue(e.getMessage().contains("ACL") || e.getMessage().contains("NOPERM"), e.getMessage());
        List<LockInfo> listed = listAll(lister, new String(lock.key(), StandardCharsets.UTF_8));
        assertEquals(List.of(lock), listed.stream().map(LockInfo::lock).toList());
    }

    private static List<LockInfo> listAll(Locker l, String keyPrefix) {
        List<LockInfo> out = new ArrayList<>();
        String cursor = null;
        do {
            LockPage page = l.list(keyPrefix, 100, cursor);
            out.addAll(page.locks());
            cursor = page.nextCursor().orElse(null);
        } while (cursor != null);
        return out;
    }

    @SuppressWarnings("deprecation") // Jedis has no typed ACL SETUSER / CONFIG RESETSTAT on its unified client
    private void aclSetUser(String user, String... rules) {
        List<byte[]> args = new ArrayList<>();
        args.add("SETUSER".getBytes(StandardCharsets.US_ASCII));
        args.add(user.getBytes(StandardCharsets.US_ASCII));
        for (String r : rules) {
            args.add(r.getBytes(StandardCharsets.UTF_8));
        }
        admin().sendCommand(Protocol.Command.ACL, args.toArray(new byte[0][]));
    }

    @SuppressWarnings("deprecation")
    private void resetStats() {
        admin().sendCommand(Protocol.Command.CONFIG, "RESETSTAT".getBytes(StandardCharsets.US_ASCII));
    }

    /** Calls of {@code command} since the last CONFIG RESETSTAT (0 when none). */
    private long calls(String command) {
        for (String line : admin().info("commandstats").split("\r?\n")) {
            if (line.startsWith("cmdstat_" + command + ":")) {
                return Long.parseLong(line.replaceAll("^[^:]*:calls=(\\d+),.*", "$1"));
            }
        }
        return 0;
    }
}
