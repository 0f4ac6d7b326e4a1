package dev.locker.redis;

import dev.locker.testkit.RedisServer;
import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockProbe;
import dev.locker.api.LockTransaction;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.Lockers;
import dev.locker.api.TemporaryLockingException;
import dev.locker.api.TimeSource;
import dev.locker.testkit.Pause;
import dev.locker.testkit.StepPauses;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.UnifiedJedis;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static dev.locker.redis.RedisWaitingFixture.withRid;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Redis-specific behaviour on one server: key layout, tokens past data loss, the safety net, scrubbing, scripts. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RedisLockerTest {

    // a server of its own: it counts the server's commands and flushes its scripts, which concurrent classes disturb
    @RegisterExtension
    static final RedisWaitingFixture fixture = RedisWaitingFixture.onFreshTarget("rlt");

    private final String prefix = fixture.prefix();

    private static UnifiedJedis admin() {
        return fixture.admin();
    }

    private RedisLocker locker(String name, Duration expiry) {
        String rid = name + "-" + LockerConfig.randomRid().substring(0, 8);
        return fixture.open(withRid(fixture.onTarget(), rid, expiry));
    }

    private static KeyColumn lock(String name) {
        return KeyColumn.of(name + "-" + LockerConfig.randomRid().substring(0, 6), "col");
    }

    private static Object take(Locker l, KeyColumn lock) {
        LockTransaction tx = new LockTransaction("test");
        l.writeLock(lock, tx);
        l.checkLocks(tx);
        return tx;
    }

    @Test
    void theKeyIsThePrefixThenTheLegibleLockNameAsItsHashTag() {
        RedisLocker a = locker("a", Duration.ofSeconds(5));
        assertEquals(prefix + "{orders/42}", new String(a.redisKey(KeyColumn.named("orders/42")),
                StandardCharsets.UTF_8), "redis-cli --scan shows the lock's name");
        assertEquals(prefix + "{row-7#col:a}", new String(a.redisKey(KeyColumn.of("row-7", "col:a")),
                StandardCharsets.UTF_8), "a column follows a #");
        KeyColumn hostile = KeyColumn.of("}{evil}#%", "{x}");
        byte[] key = a.redisKey(hostile);
        assertEquals(prefix + "{%7D%7Bevil%7D%23%25#%7Bx%7D}", new String(key, StandardCharsets.UTF_8),
                "braces, # and % of the name are escaped: the name cannot end the tag or fake the separator");
        byte[] p = prefix.getBytes(StandardCharsets.UTF_8);
        assertArrayEquals(p, Arrays.copyOf(key, p.length));
        assertEquals('{', key[p.length]);
        assertEquals('}', key[key.length - 1]);
        for (int i = p.length + 1; i < key.length - 1; i++) {
            assertTrue(key[i] > 0x20 && key[i] < 0x7f && key[i] != '{' && key[i] != '}', "printable, no brace");
        }
        byte[] binary = new byte[256];
        for (int i = 0; i < binary.length; i++) {
            binary[i] = (byte) i;
        }
        Set<String> distinct = new java.util.HashSet<>();
        for (KeyColumn kc : List.of(KeyColumn.of("a", ":x"), KeyColumn.of("a:", "x"), KeyColumn.of("a#b", ""),
                KeyColumn.of("a", "b"), KeyColumn.of("a%23b", ""), KeyColumn.of(binary, binary),
                KeyColumn.of(binary, new byte[0]), KeyColumn.of("%", ""), KeyColumn.of("%25", ""))) {
            assertTrue(distinct.add(new String(a.redisKey(kc), StandardCharsets.ISO_8859_1)), "injective: " + kc);
        }

        take(a, hostile);
        assertTrue(admin().exists(key), "the claim lives under exactly that key");
        assertThrows(IllegalArgumentException.class, () -> fixture.target().locker("bad{prefix}"));
    }

    @Test
    void tokensKeepIncreasingAfterTheSafetyNetRemovedTheKey() {
        RedisLocker a = locker("a", Duration.ofSeconds(5));
        KeyColumn lock = lock("vanishing");
        Object t1 = take(a, lock);
        long first = a.fencingToken(lock, t1);
        a.deleteLocks(t1);
        assertEquals(1, admin().hlen(a.redisKey(lock)), "after release only the last token is left");
        admin().del(a.redisKey(lock)); // what the safety-net PEXPIRE (or a restart without data) does
        Object t2 = take(a, lock);
        long second = a.fencingToken(lock, t2);
        assertTrue(second > first, second + " > " + first);
        a.deleteLocks(t2);
        Object t3 = take(a, lock);
        assertTrue(a.fencingToken(lock, t3) > second);
    }

    @Test
    void theSafetyNetTtlOutlivesTheClaimByOneExpiry() {
        RedisLocker a = locker("a", Duration.ofSeconds(5));
        KeyColumn lock = lock("ttl");
        Object tx = take(a, lock);
        long pttl = admin().pttl(a.redisKey(lock));
        assertTrue(pttl > 5_000 && pttl <= 10_001, "PTTL " + pttl);
        a.renewLocks(tx);
        assertTrue(admin().pttl(a.redisKey(lock)) > 5_000);
        a.deleteLocks(tx);
        assertTrue(admin().pttl(a.redisKey(lock)) > 0, "the token field keeps a TTL: abandoned keys vanish");
    }

    @Test
    void deadClaimsAreScrubbedByTheScriptsThatMeetThem() throws Exception {
        RedisLocker crashed = locker("crashed", Duration.ofMillis(300));
        RedisLocker b = locker("b", Duration.ofSeconds(5));
        KeyColumn lock = lock("scrub");
        take(crashed, lock); // never released
        byte[] key = crashed.redisKey(lock);
        assertEquals(1, admin().hlen(key), "one claim (it carries its token)");
        Thread.sleep(400);
        assertEquals(Optional.empty(), b.holder(lock));
        assertEquals(1, admin().hlen(key), "the holder read removed the dead claim");
        Object tb = take(b, lock);
        assertTrue(b.status(lock, tb).orElseThrow().isHeld());
    }

    @Test
    void aStaleReleaseDoesNotDeleteTheSameLockersNewerClaim() throws Exception {
        RedisLocker a = locker("a", Duration.ofMillis(300));
        RedisLocker b = locker("b", Duration.ofSeconds(5));
        KeyColumn lock = lock("same-rid");
        Object old = take(a, lock);
        Thread.sleep(700); // old transaction stalls past its expiry and past its JVM-local record (one expiry more)
        Object fresh = take(a, lock);
        a.renewLocks(fresh);
        a.deleteLocks(old); // compare-and-delete: the nonce differs, nothing happens
        TemporaryLockingException e = assertThrows(TemporaryLockingException.class, () -> take(b, lock));
        assertEquals(a.rid(), e.holder().rid());
        a.checkLocks(fresh);
    }

    @Test
    void renewalExtendsTheServerSideExpiryInPlace() throws Exception {
        RedisLocker a = locker("a", Duration.ofSeconds(2));
        KeyColumn lock = lock("renew");
        Object tx = take(a, lock);
        byte[] field = a.claimField();
        String[] before = header(admin().hget(a.redisKey(lock), field));
        Thread.sleep(50);
        a.renewLocks(tx);
        String[] after = header(admin().hget(a.redisKey(lock), field));
        assertEquals(before[0], after[0], "written time (seniority) unchanged");
        // "<written> <expms> <tokdelta> <counter> <owner>" (common.lua): expms counts from the written time
        assertTrue(Long.parseLong(after[1]) > Long.parseLong(before[1]), "server-side expiry moved forward");
        assertEquals(before[2], after[2], "same token");
        assertEquals(before[3], after[3], "same nonce");
        assertEquals(Long.parseLong(after[0]) + Long.parseLong(after[2]), a.fencingToken(lock, tx));
    }

    /**
     * Two lockers opened with one {@link LockerConfig} share its rid, hence the claim field {@code "c" + rid}. The
     * second one's acquire must not take that field over while the first one's claim in it is alive.
     */
    @Test
    void twoLockersOpenedWithOneConfigNeverBothHold() {
        LockerConfig shared = LockerConfig.builder().expiry(Duration.ofSeconds(5)).build();
        RedisLocker a = fixture.onTarget().config(shared).restartGuard(Duration.ZERO).build();
        fixture.adopt(a);
        RedisLocker b = fixture.onTarget().config(shared).restartGuard(Duration.ZERO).build();
        fixture.adopt(b);
        KeyColumn lock = lock("shared-config");
        Object ta = take(a, lock);
        TemporaryLockingException e = assertThrows(TemporaryLockingException.class, () -> take(b, lock));
        assertEquals(a.rid(), e.holder().rid());
        a.renewLocks(ta); // a's claim is intact: same nonce, same token
        a.deleteLocks(ta);
        Object tb = take(b, lock);
        assertTrue(b.fencingToken(lock, tb) > 0);
    }

    /**
     * Given one locker whose first transaction stalled past its local deadline while its claim lives on by the
     * server's clock: a second transaction takes the mediator entry (the first one's hold is lost for good); before its
     * script runs, the first one wakes up and tries to renew. The renewal is refused locally, and the second
     * transaction is refused by the server (the first's claim is alive, with another nonce): nobody holds the lock
     * twice.
     */
    @Test
    void aSecondTransactionOfTheSameLockerCannotTakeOverTheFirstOnesLiveClaim() throws Exception {
        VirtualClock clock = new VirtualClock(Instant.now());
        StepPauses pauses = new StepPauses();
        RedisLocker a = fixture.onTarget()
                .config(LockerConfig.builder().expiry(Duration.ofSeconds(5)).timeSource(clock).probe(pauses).build())
                .restartGuard(Duration.ZERO).build();
        fixture.adopt(a);
        KeyColumn lock = lock("same-locker");
        LockTransaction first = new LockTransaction("first");
        a.writeLock(lock, first);
        a.checkLocks(first);
        clock.advance(Duration.ofSeconds(11)); // a local pause; on the server's clock the claim is still alive

        LockTransaction second = new LockTransaction("second");
        Pause beforeWrite = pauses.before(LockProbe.Step.WRITE);
        CompletableFuture<Void> secondTakes = CompletableFuture.runAsync(() -> {
            a.writeLock(lock, second);
            a.checkLocks(second);
        });
        beforeWrite.awaitArrival();
        assertThrows(ExpiredLockException.class, () -> a.renewLocks(first), "its local entry belongs to the second now");
        beforeWrite.resume();

        ExecutionException e = assertThrows(ExecutionException.class, () -> secondTakes.get(30, TimeUnit.SECONDS));
        assertInstanceOf(TemporaryLockingException.class, e.getCause(), e.getCause().toString());
        assertThrows(ExpiredLockException.class, () -> a.checkLocks(first));
        assertEquals("first", a.holder(lock).orElseThrow().why(), "the server still has the first claim, untouched");
        a.deleteLocks(first);
        a.deleteLocks(second);
    }

    private static String[] header(byte[] value) {
        assertNotNull(value);
        return new String(value, StandardCharsets.ISO_8859_1).split(" ");
    }

    @Test
    void scriptsAreLoadedAgainAfterTheServerForgotThem() {
        RedisLocker a = locker("a", Duration.ofSeconds(5));
        take(a, lock("before-flush"));
        admin().scriptFlush();
        KeyColumn after = lock("after-flush");
        Object tx = take(a, after);
        assertTrue(a.status(after, tx).orElseThrow().isHeld());
        assertTrue(admin().scriptExists(RedisScript.ACQUIRE.sha(), "any"), "EVAL loaded it again");
    }

    @Test
    void theProviderOpensARedisLockerFromAUri() {
        String target = fixture.target().uri();
        String uri = target + (target.contains("?") ? "&" : "?") + "prefix=" + prefix
                + "&restartGuard=0&expiry=7s&why=from-uri";
        try (Locker l = Lockers.open(uri, LockerConfig.builder().rid("provider-test").build())) {
            assertInstanceOf(RedisLocker.class, l);
            assertEquals(Duration.ofSeconds(7), l.config().expiry());
            assertTrue(l.rid().startsWith("provider-test-"), l.rid());
            KeyColumn lock = lock("provider");
            try (Lease lease = l.acquire(lock, "")) {
                assertTrue(lease.fencingToken() > 0);
                assertEquals("from-uri", l.holder(lock).orElseThrow().why());
            }
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Lockers.open("redis://127.0.0.1:1?prefx=oops"));
        assertTrue(e.getMessage().contains("prefx"), e.getMessage());
    }

    /**
     * Counts the commands the server executed ({@code INFO commandstats}) for N uncontended acquires and releases:
     * each is one EVALSHA, i.e. one round trip; nothing else reaches the server.
     */
    @Test
    void oneRoundTripPerAcquireAndPerRelease() {
        Assumptions.assumeFalse(RedisTarget.isExternal(), "an external server may have other traffic");
        RedisTarget.awaitUptime(admin(), Duration.ofSeconds(1));
        RedisLocker a = fixture.onTarget().config(LockerConfig.builder().expiry(Duration.ofSeconds(1)).build())
                .restartGuard(Duration.ofSeconds(1)).build(); // the guard's INFO is part of a production acquire
        fixture.adopt(a);
        RedisLocker b = locker("b", Duration.ofSeconds(30));
        KeyColumn warm = lock("warm");
        for (int i = 0; i < 5; i++) {
            Object tx = take(a, warm);
            b.holder(warm);
            assertThrows(TemporaryLockingException.class, () -> take(b, warm));
            a.deleteLocks(tx);
        }
        int n = 200;
        List<KeyColumn> locks = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            locks.add(lock("rt" + i));
        }
        resetStats();
        long t0 = System.nanoTime();
        List<Object> txs = new ArrayList<>();
        for (KeyColumn l : locks) {
            txs.add(take(a, l));
        }
        long t1 = System.nanoTime();
        Map<String, Long> acquire = commandCalls();
        resetStats();
        for (Object tx : txs) {
            a.deleteLocks(tx);
        }
        long t2 = System.nanoTime();
        Map<String, Long> release = commandCalls();
        Object held = take(a, locks.get(0));
        resetStats();
        for (int i = 0; i < n; i++) {
            assertThrows(TemporaryLockingException.class, () -> take(b, locks.get(0)));
        }
        Map<String, Long> contended = commandCalls();
        a.deleteLocks(held);

        System.out.printf("round trips: %d acquires (writeLock+checkLocks) -> %s; %d releases -> %s; %d contended "
                        + "acquires -> %s; mean acquire %.0f us, release %.0f us on loopback; server time per script "
                        + "(acquire, release, contended) %s us%n",
                n, acquire, n, release, n, contended, (t1 - t0) / 1e3 / n, (t2 - t1) / 1e3 / n, serverMicrosPerScript);
        assertEquals(Long.valueOf(n), acquire.get("evalsha"), "one EVALSHA per acquire: " + acquire);
        assertEquals(Long.valueOf(n), release.get("evalsha"), "one EVALSHA per release: " + release);
        assertEquals(Long.valueOf(n), contended.get("evalsha"), "one EVALSHA per refused acquire: " + contended);
        for (Map<String, Long> m : List.of(acquire, release, contended)) {
            for (String top : List.of("eval", "ping", "hello", "auth", "client", "select", "wait", "script", "multi")) {
                assertFalse(m.containsKey(top), "no " + top + " round trip: " + m);
            }
        }
    }

    @SuppressWarnings("deprecation") // Jedis has no typed CONFIG RESETSTAT on its unified client
    private void resetStats() {
        admin().sendCommand(Protocol.Command.CONFIG, "RESETSTAT".getBytes(StandardCharsets.US_ASCII));
    }

    /**
     * Top-level and in-script command calls since the last CONFIG RESETSTAT; the INFO that reads them has not
     * been counted yet, so an {@code info} entry comes from the acquire script's restart guard.
     */
    private final List<String> serverMicrosPerScript = new ArrayList<>();

    private Map<String, Long> commandCalls() {
        Map<String, Long> out = new LinkedHashMap<>();
        for (String line : admin().info("commandstats").split("\r?\n")) {
            if (line.startsWith("cmdstat_")) {
                String name = line.substring(8, line.indexOf(':'));
                long calls = Long.parseLong(line.replaceAll("^[^:]*:calls=(\\d+),.*", "$1"));
                if (!name.equals("config|resetstat")) {
                    out.put(name, calls);
                }
                if (name.equals("evalsha")) {
                    serverMicrosPerScript.add(line.replaceAll(".*usec_per_call=([0-9.]+),.*", "$1"));
                }
            }
        }
        return out;
    }

    /**
     * Withdrawn acquires leave tombstones, bounded: one field per locker instance and lock whatever the number of
     * withdrawals (its counter rises), a key that lives at least as long, and nothing once {@code tombstoneTtl} is
     * over. Withdrawals are provoked by asking for a replica acknowledgement that a server without replicas never
     * gives (WAIT answers 0), so each acquire is granted by the script and then withdrawn.
     */
    @Test
    void tombstonesAreOnePerInstanceAndVanishAfterTheirTtl() throws Exception {
        LockerConfig config = LockerConfig.builder().expiry(Duration.ofSeconds(5)).build();
        RedisLocker unacknowledged = fixture.onTarget().config(config).restartGuard(Duration.ZERO)
                .replicas(1).replicaTimeout(Duration.ofMillis(10)).tombstoneTtl(Duration.ofMillis(500)).build();
        fixture.adopt(unacknowledged);
        RedisLocker sameRid = fixture.onTarget().config(config).restartGuard(Duration.ZERO).build();
        fixture.adopt(sameRid);
        KeyColumn lock = lock("tombstones");
        for (int i = 0; i < 3; i++) {
            assertThrows(TemporaryLockingException.class, () -> take(unacknowledged, lock));
        }
        byte[] key = unacknowledged.redisKey(lock);
        Map<byte[], byte[]> fields = admin().hgetAll(key);
        List<String> tombs = fields.keySet().stream().map(f -> new String(f, StandardCharsets.US_ASCII))
                .filter(f -> f.startsWith("w")).toList();
        assertEquals(1, tombs.size(), "one tombstone for three withdrawals: " + tombs);
        assertTrue(admin().pttl(key) > 0, "the key lives at least as long as its tombstone");
        Object tx = take(sameRid, lock); // another instance, the same rid: its acquires are not covered
        sameRid.deleteLocks(tx);
        Thread.sleep(600); // past tombstoneTtl on the server's clock
        assertEquals(Optional.empty(), sameRid.holder(lock)); // a scrubbing pass
        assertFalse(admin().hkeys(key).stream().anyMatch(f -> f[0] == 'w'), "the expired tombstone was scrubbed");
    }

    @Test
    void contentionNamesTheHolderAndLeavesNoLosingClaim() {
        RedisLocker a = locker("a", Duration.ofSeconds(5));
        RedisLocker b = locker("b", Duration.ofSeconds(5));
        KeyColumn lock = lock("contended");
        take(a, lock);
        TemporaryLockingException e = assertThrows(TemporaryLockingException.class,
                () -> take(b, lock));
        assertEquals(a.rid(), e.holder().rid());
        assertNotNull(e.holder().since(), "since = the claim's server time");
        RedisServer server = fixture.target().process();
        assertTrue(e.getMessage().contains(server == null ? "Redis" : ":" + server.port()), e.getMessage());
        assertEquals(1, admin().hlen(a.redisKey(lock)), "only the holder's claim: b left nothing");
        assertNotEquals(0, admin().pttl(a.redisKey(lock)));
    }
}
