package dev.locker.redis;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockInfo;
import dev.locker.api.LockOwner;
import dev.locker.api.LockerConfig;
import dev.locker.api.TemporaryLockingException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.UnifiedJedis;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static dev.locker.redis.RedisWaitingFixture.lock;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
    static final RedisWaitingFixture fixture = RedisWaitingFixture.onTarget("cct");

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
}
