package dev.locker.redis;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockInfo;
import dev.locker.api.LockOwner;
import dev.locker.api.LockTransaction;
import dev.locker.api.LockerConfig;
import dev.locker.api.TemporaryLockingException;
import dev.locker.engine.ClaimStatus;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.UnifiedJedis;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static dev.locker.redis.RedisWaitingFixture.lock;
import static dev.locker.redis.RedisWaitingFixture.withRid;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The compact claim (see common.lua and {@link RedisOwners}): a held lock's hash stays a small listpack whatever its
 * owner's names, while every reader still learns the owner in full; tokens keep rising although a held claim carries
 * its own token instead of a separate field.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RedisCompactClaimTest {

    private static final String LONG = "x".repeat(300);

    @RegisterExtension
    static final RedisWaitingFixture fixture = RedisWaitingFixture.onFreshTarget("cct");

    private final String prefix = fixture.prefix();

    private static UnifiedJedis admin() {
        return fixture.admin();
    }

    private RedisLocker locker(String name, Duration expiry) {
        RedisLocker l = fixture.onTarget()
                .config(LockerConfig.builder().rid(name + "-" + LONG.substring(0, 40)).host("host-" + LONG)
                        .expiry(expiry).build())
                .restartGuard(Duration.ZERO)
                .build();
        fixture.adopt(l);
        return l;
    }

    /** A locker whose rid is {@code rid} exactly. */
    private RedisLocker locker(String rid) {
        return fixture.open(withRid(fixture.onTarget(), rid, Duration.ofSeconds(30)));
    }

    /** A locker of a rid never used before: {@code name} and the current nano time. */
    private RedisLocker freshLocker(String name) {
        return fixture.open(withRid(fixture.onTarget(), name + "-" + System.nanoTime(), Duration.ofSeconds(30)));
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

    private String encoding(byte[] key) {
        return new String((byte[]) admin().sendCommand(Protocol.Command.OBJECT,
                "ENCODING".getBytes(StandardCharsets.US_ASCII), key), StandardCharsets.US_ASCII);
    }

    private static String ascii(byte[] b) {
        return b == null ? "(none)" : new String(b, StandardCharsets.ISO_8859_1).replace("\n", "\\n");
    }

    @Test
    void aHeldLockIsOneSmallListpackWhateverTheOwnersNames() throws Exception {
        RedisLocker a = locker("a", Duration.ofSeconds(30));
        KeyColumn lock = lock("small");
        Thread t = new Thread(() -> {
            // the first claim of a thread/reason pair carries its owner in full while the record is written
            a.acquire(lock("warm-up"), "why " + LONG).close();
            try {
                a.awaitOwnerRecord();
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
            try (Lease lease = a.acquire(lock, "why " + LONG)) {
                byte[] key = a.redisKey(lock);
                assertEquals(1, admin().hlen(key), "one field: the claim, carrying its token");
                byte[] value = admin().hget(key, a.claimField());
                assertTrue(value.length < 48, "a compact claim: " + new String(value, StandardCharsets.UTF_8));
                String encoding = new String((byte[]) admin().sendCommand(redis.clients.jedis.Protocol.Command.OBJECT,
                        "ENCODING".getBytes(StandardCharsets.US_ASCII), key), StandardCharsets.US_ASCII);
                assertTrue(encoding.equals("listpack") || encoding.equals("ziplist"), encoding);
                LockOwner seen = locker("b", Duration.ofSeconds(30)).holder(lock).orElseThrow();
                assertEquals(a.rid(), seen.rid());
                assertEquals("host-" + LONG, seen.host());
                assertEquals("why " + LONG, seen.why());
                assertEquals("long-thread-" + LONG, seen.thread());
                assertEquals(ProcessHandle.current().pid(), seen.pid());
            }
        }, "long-thread-" + LONG);
        List<Throwable> failed = new ArrayList<>();
        t.setUncaughtExceptionHandler((th, e) -> failed.add(e));
        t.start();
        t.join();
        assertEquals(List.of(), failed);
    }

    @Test
    void exceptionsAndListingsNameTheOwnerFromItsRecord() {
        RedisLocker a = locker("a", Duration.ofSeconds(30));
        RedisLocker b = locker("b", Duration.ofSeconds(30));
        KeyColumn lock = lock("named");
        try (Lease lease = a.acquire(lock, "the nightly job")) {
            TemporaryLockingException e = org.junit.jupiter.api.Assertions.assertThrows(
                    TemporaryLockingException.class, () -> b.acquire(lock, "me too"));
            assertEquals(a.rid(), e.holder().rid());
            assertEquals("the nightly job", e.holder().why());
            List<LockInfo> listed = b.list(lock.key(), 10, null).locks();
            assertEquals(1, listed.size());
            assertEquals(a.rid(), listed.get(0).holder().rid());
            assertEquals("the nightly job", listed.get(0).holder().why());
            assertEquals(lease.fencingToken(), listed.get(0).fencingToken());
        }
    }

    @Test
    void moreReasonsThanTheRecordKeepsAreStoredInTheirClaims() throws Exception {
        RedisLocker a = locker("a", Duration.ofSeconds(30));
        RedisLocker b = locker("b", Duration.ofSeconds(30));
        KeyColumn lock = lock("reasons");
        for (int i = 0; i < RedisOwners.MAX_REFS + 3; i++) {
            a.acquire(lock, "reason " + i).close();
        }
        a.awaitOwnerRecord();
        a.acquire(lock, "reason 7").close(); // the last write may have begun before the last pairs were numbered
        a.awaitOwnerRecord();
        try (Lease lease = a.acquire(lock, "one reason too many")) {
            assertEquals("one reason too many", b.holder(lock).orElseThrow().why());
            byte[] value = admin().hget(a.redisKey(lock), a.claimField());
            assertTrue(new String(value, StandardCharsets.ISO_8859_1).contains(" ="), "the owner in full");
        }
        try (Lease lease = a.acquire(lock, "reason 7")) {
            assertEquals("reason 7", b.holder(lock).orElseThrow().why(), "an early reason: by reference");
        }
    }

    @Test
    void anOwnerRecordLostOnTheServerIsWrittenAgainByTheNextAcquire() throws Exception {
        RedisLocker a = locker("a", Duration.ofSeconds(30));
        RedisLocker b = locker("b", Duration.ofSeconds(30));
        assumeTrue(a.client() instanceof RedisClient, "a single server (in a Cluster the record is refreshed by time)");
        KeyColumn first = lock("first");
        KeyColumn second = lock("second");
        a.acquire(lock("warm-up"), "kept").close(); // the pair's first claim carries the owner in full
        a.awaitOwnerRecord();
        try (Lease one = a.acquire(first, "kept")) {
            byte[] record = prefixed("{}o" + new String(a.claimField(), 1, 16, StandardCharsets.US_ASCII));
            assertTrue(admin().exists(record));
            admin().del(record); // a flush, a restart without persistence
            assertEquals("instance:" + new String(a.claimField(), 1, 16, StandardCharsets.US_ASCII),
                    b.holder(first).orElseThrow().rid(), "without its record a holder is named by its instance");
            Thread.sleep(1_100); // an acquire looks for its locker's record at most once a second
            try (Lease two = a.acquire(second, "kept")) {
                a.awaitOwnerRecord();
                assertTrue(admin().exists(record), "the acquire found the record gone and wrote it again");
                assertTrue(admin().pttl(record) > 0, "with a time to live");
                RedisLocker fresh = fixture.open(fixture.onTarget().restartGuard(Duration.ZERO)); // no cached records
                assertEquals(a.rid(), fresh.holder(first).orElseThrow().rid());
            }
        }
    }

    @Test
    void tokensRiseAcrossReleaseForceAndScrub() throws Exception {
        RedisLocker a = locker("a", Duration.ofMillis(300));
        RedisLocker b = locker("b", Duration.ofSeconds(30));
        KeyColumn lock = lock("tokens");
        long last;
        try (Lease l = a.acquire(lock, "1")) {
            last = l.fencingToken();
        }
        try (Lease l = b.acquire(lock, "2")) {
            assertTrue(l.fencingToken() > last);
            last = l.fencingToken();
            b.forceRelease(lock);
        }
        dev.locker.api.LockTransaction dead = new dev.locker.api.LockTransaction("3"); // not renewed: it will die
        a.writeLock(lock, dead);
        a.checkLocks(dead);
        assertTrue(a.fencingToken(lock, dead) > last);
        last = a.fencingToken(lock, dead);
        byte[] key = a.redisKey(lock);
        assertFalse(admin().hexists(key, "t".getBytes(StandardCharsets.US_ASCII)),
                "while held, the claim carries the last token");
        Thread.sleep(400); // the claim dies unreleased
        assertTrue(b.holder(lock).isEmpty()); // a scrubbing read: the dead claim's token goes to field t
        assertTrue(admin().pttl(key) > 0, "the key keeps its time to live");
        try (Lease l = b.acquire(lock, "4")) {
            assertTrue(l.fencingToken() > last, l.fencingToken() + " > " + last);
        }
        assertTrue(admin().pttl(key) > 0, "released: the token field lives on with the key's time to live");
    }

    private byte[] prefixed(String tail) {
        return (prefix + tail).getBytes(StandardCharsets.UTF_8);
    }

    /**
     * A lock that once had a waiter is a compact listpack again when held: one field, the claim. Redis never
     * converts a hashtable back, so no queue entry may pass hash-max-listpack-value.
     */
    @Test
    void aLockThatHadAWaiterIsACompactListpackAgainWhenHeld() throws Exception {
        RedisLocker a = locker("first");
        RedisLocker b = locker("waiter");
        KeyColumn lock = lock("contended");
        byte[] key = a.redisKey(lock);
        // each pair's first claim (and queue entry) carries its owner in full while the record is written: warm both
        a.acquire(lock("warm-a"), "first").close();
        Thread warm = new Thread(() -> b.acquire(lock("warm-b"), "patient").close(), "waiter");
        warm.start();
        warm.join();
        a.awaitOwnerRecord();
        b.awaitOwnerRecord();
        Lease held = a.acquire(lock, "first");
        AtomicReference<Lease> got = new AtomicReference<>();
        Thread waiter = new Thread(() -> got.set(b.tryAcquire(lock, "patient", Duration.ofSeconds(60)).orElseThrow()),
                "waiter");
        waiter.start();
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (admin().hkeys(key).stream().noneMatch(f -> f.length > 0 && f[0] == 'q')) {
            assertTrue(System.nanoTime() < until, "the waiter never queued");
            Thread.sleep(5);
        }
        held.close();
        waiter.join();
        got.get().close();
        try (Lease again = a.acquire(lock, "first")) {
            assertEquals(1, admin().hlen(key), "one field again: the claim");
            String encoding = new String((byte[]) admin().sendCommand(redis.clients.jedis.Protocol.Command.OBJECT,
                    "ENCODING".getBytes(StandardCharsets.US_ASCII), key), StandardCharsets.US_ASCII);
            assertEquals("listpack", encoding, "a held lock's hash is the compact listpack");
        }
    }

    /**
     * A live claim in the previous layout ({@code <written> <expiry> <token> <32-hex nonce>\n<owner>}) is not
     * taken over. An unreadable claim is a live holder, not a dead one, so builds sharing a prefix never make two
     * holders.
     */
    @Test
    void aLiveClaimOfThePreviousLayoutIsNotTakenOver() {
        RedisLocker a = locker("new-build");
        KeyColumn lock = lock("mixed");
        byte[] key = a.redisKey(lock);
        long now = fixture.serverMicros();
        byte[] owner = new LockOwner("old-build", "old-host", 1, "main", "old work", null).toBytes();
        byte[] head = (now + " " + (now + 60_000_000L) + " " + now + " " + "0123456789abcdef0000000000000001" + "\n")
                .getBytes(StandardCharsets.US_ASCII);
        byte[] value = new byte[head.length + owner.length];
        System.arraycopy(head, 0, value, 0, head.length);
        System.arraycopy(owner, 0, value, head.length, owner.length);
        admin().hset(key, "cold-build".getBytes(StandardCharsets.US_ASCII), value); // as the old build writes it
        admin().hset(key, "t".getBytes(StandardCharsets.US_ASCII),
                Long.toString(now).getBytes(StandardCharsets.US_ASCII));
        admin().pexpire(key, 120_000);
        assertThrows(TemporaryLockingException.class, () -> a.acquire(lock, "new work").close(),
                "the old build's live claim holds the lock");
    }

    /**
     * The first acquire of a fresh locker, kept alive by renewals, leaves a compact listpack. Its owner record is
     * written before the first claim that references it, so no owner goes inline.
     */
    @Test
    void aLockTakenByAFreshLockerAndKeptAliveIsACompactListpack() throws Exception {
        RedisLocker a = locker("service-leader");
        KeyColumn leader = lock("leader");
        byte[] key = a.redisKey(leader);
        String held;
        String heldEncoding;
        try (Lease l = a.acquire(leader, "leading")) { // the locker's first acquire: its record is not written yet
            a.awaitOwnerRecord(); // the record is on the server now
            l.renew(); // a keep-alive renewal, long after the record was written
            held = ascii(admin().hget(key, a.claimField()));
            heldEncoding = encoding(key);
        }
        // the next holder (same locker and pair: its reference is published) in the same key
        try (Lease again = a.acquire(leader, "leading")) {
            assertEquals(1, admin().hlen(key), "one field: the claim");
            String encoding = encoding(key);
            assertTrue(heldEncoding.equals("listpack") && encoding.equals("listpack"),
                    "a held lock's hash is the compact listpack (while held and renewed: " + heldEncoding
                            + ", claim " + held + "; held again: " + encoding + ", claim "
                            + ascii(admin().hget(key, a.claimField())) + ")");
        }
    }

    /**
     * A claim id kept as (instance prefix, acquire number) and rebuilt when sent is the bytes the acquire wrote.
     * Renew, verify and delete compare on it, so a wrong id would fail them or leave the claim behind.
     */
    @Test
    void theRebuiltClaimIdRenewsVerifiesAndDeletesTheWrittenClaim() {
        RedisLocker a = freshLocker("a");
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

    /** Multi-lock leases and JanusGraph-style transactions renew, verify and delete the claims they wrote too. */
    @Test
    void multiLockLeasesAndTransactionsKeepTheirIdsToo() {
        RedisLocker a = freshLocker("b");
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
