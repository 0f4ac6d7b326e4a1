package dev.locker.redis;

import dev.locker.testkit.RedisServer;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.PermanentLockingException;
import dev.locker.api.TemporaryLockingException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import redis.clients.jedis.UnifiedJedis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A Redis that may evict keys ({@code maxmemory} set, {@code maxmemory-policy} other than {@code noeviction}) may drop
 * a held lock's key, and then grants the lock to a second process while the first still holds it. Volatile policies
 * are no better: every lock key carries the safety-net {@code PEXPIRE}, so it is a candidate for them too.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RedisEvictionTest {

    private final List<Locker> opened = new ArrayList<>();
    private final List<UnifiedJedis> admins = new ArrayList<>();
    private RedisServer server;

    @BeforeEach
    void start() {
        Assumptions.assumeFalse(RedisTarget.isExternal(), "needs a server it can configure");
        server = RedisServer.start("--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru");
    }

    @AfterEach
    void stop() {
        opened.forEach(Locker::close);
        opened.clear();
        admins.forEach(UnifiedJedis::close);
        admins.clear();
        if (server != null) {
            server.close();
        }
    }

    private RedisLockerBuilder on(RedisServer s) {
        return RedisLocker.builder().node("127.0.0.1", s.port()).keyPrefix("evict:").restartGuard(Duration.ZERO)
                .config(LockerConfig.builder().rid("p-" + LockerConfig.randomRid().substring(0, 8))
                        .expiry(Duration.ofSeconds(30)).build());
    }

    private RedisLocker open(RedisLockerBuilder b) {
        RedisLocker l = b.build();
        opened.add(l);
        return l;
    }

    private static KeyColumn lock(String name) {
        return KeyColumn.named(name + "-" + LockerConfig.randomRid().substring(0, 8));
    }

    /** By default a server that may evict is refused, permanently, naming its policy and the way out. */
    @Test
    void aServerThatMayEvictIsRefusedByDefault() {
        RedisLocker l = open(on(server));
        for (String policy : List.of("allkeys-lru", "volatile-lru", "volatile-ttl", "allkeys-random")) {
            server.cli("CONFIG", "SET", "maxmemory-policy", policy);
            PermanentLockingException e = assertThrows(PermanentLockingException.class,
                    () -> l.acquire(lock("evicting"), "must not be granted"));
            assertTrue(e.getMessage().contains(policy) && e.getMessage().contains("127.0.0.1:" + server.port())
                    && e.getMessage().contains("evictionCheck"), e.getMessage());
        }
        server.cli("CONFIG", "SET", "maxmemory-policy", "noeviction");
        l.acquire(lock("noeviction"), "a full server refuses writes instead: safe").close();
        server.cli("CONFIG", "SET", "maxmemory-policy", "allkeys-lru");
        server.cli("CONFIG", "SET", "maxmemory", "0");
        l.acquire(lock("no-limit"), "without maxmemory nothing is evicted").close();
    }

    /**
     * Why the check exists. With it off, process A holds a lock; memory runs short (here: {@code maxmemory} squeezed
     * to 1 byte and back, which makes the server evict every key it may); process B acquires the same lock while A
     * still holds it. Two holders at once.
     */
    @Test
    void withoutTheCheckAnEvictedLockIsGrantedTwice() {
        RedisLocker a = open(on(server).evictionCheck(RedisLocker.EvictionCheck.OFF));
        RedisLocker b = open(on(server).evictionCheck(RedisLocker.EvictionCheck.OFF));
        KeyColumn lock = lock("evicted");
        try (Lease first = a.acquire(lock, "first holder")) {
            squeezeMemory(server);
            assertFalse(admin(server).exists(a.redisKey(lock)), "the held lock's key was evicted");
            try (Lease second = b.acquire(lock, "second holder")) {
                long firstToken = first.fencingToken();
                assertTrue(first.isValid() && second.isValid(), "both believe they hold the lock");
                assertTrue(second.fencingToken() > firstToken, "only fencing tokens still tell them apart");
                second.check();
                // the first holder learns it only when it asks the server (or at its next renewal)
                assertThrows(dev.locker.api.ExpiredLockException.class, first::check);
            }
        }
    }

    /** The same squeeze under {@code noeviction}: the held key stays, and B is refused (temporarily, OOM). */
    @Test
    void underNoevictionTheHeldKeyStays() {
        server.cli("CONFIG", "SET", "maxmemory-policy", "noeviction");
        RedisLocker a = open(on(server));
        RedisLocker b = open(on(server));
        KeyColumn lock = lock("kept");
        try (Lease first = a.acquire(lock, "first holder")) {
            server.cli("CONFIG", "SET", "maxmemory", "1");
            assertThrows(TemporaryLockingException.class, () -> b.acquire(lock, "second"), "OOM, or held");
            server.cli("CONFIG", "SET", "maxmemory", "64mb");
            TemporaryLockingException held = assertThrows(TemporaryLockingException.class,
                    () -> b.acquire(lock, "second"));
            assertEquals(a.rid(), held.holder().rid());
            first.renew();
        }
    }

    /** {@code warn} grants, and logs once; {@code off} does not even look. */
    @Test
    void warnGrantsOnAServerThatMayEvict() {
        RedisLocker l = open(on(server).evictionCheck(RedisLocker.EvictionCheck.WARN));
        l.acquire(lock("warned"), "accepted risk").close();
        l.acquire(lock("warned-again"), "logged once").close();
        open(on(server).evictionCheck(RedisLocker.EvictionCheck.OFF)).acquire(lock("unchecked"), "").close();
    }

    /**
     * The check needs {@code INFO} (the documented least-privilege ACL has {@code +info}). A user without it cannot
     * tell whether the server evicts: {@code fail} refuses permanently and says so, {@code warn} grants.
     */
    @Test
    void withoutInfoTheCheckFailsClosed() {
        server.cli("ACL", "SETUSER", "noinfo", "on", ">noinfo-pw", "resetkeys", "~evict:*", "-@all", "+evalsha",
                "+eval", "+time", "+hgetall", "+hget", "+hset", "+hdel", "+hkeys", "+pexpire");
        RedisLocker failing = open(on(server).user("noinfo").password("noinfo-pw"));
        PermanentLockingException e = assertThrows(PermanentLockingException.class,
                () -> failing.acquire(lock("no-info"), ""));
        assertTrue(e.getMessage().contains("eviction check needs the INFO command"), e.getMessage());
        RedisLocker warning = open(on(server).user("noinfo").password("noinfo-pw")
                .evictionCheck(RedisLocker.EvictionCheck.WARN));
        warning.acquire(lock("no-info-warned"), "").close();
    }

    /** {@code maxmemory} 1 byte and back: the server evicts every key its policy allows, at once. */
    static void squeezeMemory(RedisServer s) {
        String max = s.cli("CONFIG", "GET", "maxmemory").split("\\R")[1].trim();
        s.cli("CONFIG", "SET", "maxmemory", "1");
        s.cli("CONFIG", "SET", "maxmemory", max);
    }

    private UnifiedJedis admin(RedisServer s) {
        UnifiedJedis c = RedisLocker.builder().node("127.0.0.1", s.port()).newClient(1);
        admins.add(c);
        return c;
    }
}
