package dev.locker.redis;

import dev.locker.testkit.RedisServer;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.PermanentLockingException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The admission marker (the guard and eviction answers kept 1 s) under Cluster, replication and a bare prefix. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RedisAdmissionMarkerTest {

    private final List<Locker> opened = new ArrayList<>();
    private final List<AutoCloseable> servers = new ArrayList<>();

    @BeforeEach
    void needsOwnServers() {
        Assumptions.assumeFalse(RedisTarget.isExternal(), "needs servers it can configure, promote and kill");
    }

    @AfterEach
    void closeAll() throws Exception {
        opened.forEach(Locker::close);
        opened.clear();
        for (AutoCloseable s : servers) {
            s.close();
        }
        servers.clear();
    }

    private RedisServer server(RedisServer s) {
        servers.add(s);
        return s;
    }

    private RedisLocker open(RedisLockerBuilder b, String name) {
        RedisLocker l = b.config(LockerConfig.builder().rid(name + "-" + LockerConfig.randomRid().substring(0, 8))
                .expiry(Duration.ofSeconds(10)).build()).build();
        opened.add(l);
        return l;
    }

    private static KeyColumn lock(String name) {
        return KeyColumn.named(name + "-" + LockerConfig.randomRid().substring(0, 8));
    }

    /**
     * While a slot migrates, a request naming keys not all on the node is refused with TRYAGAIN. The acquire
     * names only the lock's key in Cluster mode, so locks of that slot are still granted, on the owner or by ASK.
     */
    @Test
    void aSlotUnderMigrationStillGrantsLocks() {
        RedisServer.Cluster cluster = RedisServer.startCluster();
        servers.add(cluster);
        RedisLocker l = open(RedisLocker.builder().uri(cluster.uri()).keyPrefix("mig:").restartGuard(Duration.ZERO),
                "a");
        KeyColumn used = lock("used");
        l.acquire(used, "leaves its key behind (the token field outlives the release)").close();
        String usedKey = new String(l.redisKey(used), StandardCharsets.US_ASCII);
        RedisServer owner = ownerOf(cluster, usedKey);
        RedisServer target = cluster.nodes().stream().filter(n -> n != owner).findFirst().orElseThrow();
        String slot = owner.cli("CLUSTER", "KEYSLOT", usedKey).trim();
        assertTrue(owner.cli("EXISTS", usedKey).trim().equals("1"), "the released lock's key stays on its owner");

        // open the slot for migration, as redis-cli --cluster reshard does before it moves keys
        assertEquals("OK", target.cli("CLUSTER", "SETSLOT", slot, "IMPORTING", myId(owner)).trim());
        assertEquals("OK", owner.cli("CLUSTER", "SETSLOT", slot, "MIGRATING", myId(target)).trim());
        RedisServer.sleep(1100); // the marker the first grant wrote has lapsed (as in any steady state)

        // a lock whose key is still on the owner: served there before the change (one key, present)
        try (Lease again = l.acquire(used, "same lock, during the migration")) {
            assertTrue(again.isValid());
        }
        // a new lock of the same slot: sent to the target by ASK and served there before the change
        KeyColumn fresh = sameSlot(l, slot, cluster);
        try (Lease lease = l.acquire(fresh, "new lock, during the migration")) {
            assertTrue(lease.isValid());
        }
    }

    /**
     * The marker is a fact about one server, and LASTSAVE values often coincide across a master and its replica. A
     * promoted replica that evicts must be refused at once, so the marker is never replicated.
     */
    @Test
    void aPromotedReplicaThatMayEvictIsRefusedAtOnce() {
        RedisServer master = server(RedisServer.start("--repl-diskless-sync", "no"));
        RedisServer replica = server(RedisServer.start("--replicaof", "127.0.0.1",
                Integer.toString(master.port()), "--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru"));
        awaitReplicaLinked(replica);
        long masterSave = Long.parseLong(master.cli("LASTSAVE").trim());
        long replicaSave = Long.parseLong(replica.cli("LASTSAVE").trim());
        Assumptions.assumeTrue(masterSave == replicaSave, "precondition: the sync's BGSAVE ended in the second the"
                + " replica booted (master " + masterSave + ", replica " + replicaSave + ")");
        awaitServerSecondAfter(master, masterSave); // a marker is written only in a later second than LASTSAVE

        RedisLocker onMaster = open(RedisLocker.builder().node("127.0.0.1", master.port()).keyPrefix("promo:")
                .restartGuard(Duration.ZERO), "m");
        master.cli("DEL", "promo:{}guard0"); // the marker of restartGuard 0
        onMaster.acquire(lock("on-master"), "writes a fresh marker: ok=1 (noeviction)").close();
        assertEquals("1", master.cli("WAIT", "1", "1000").trim(), "the replica has the master's writes");
        assertTrue(master.cli("GET", "promo:{}guard0").startsWith(Long.toString(masterSave)), "the master has its marker");
        assertEquals("", replica.cli("GET", "promo:{}guard0").trim(), "the marker is never replicated");

        assertEquals("OK", replica.cli("REPLICAOF", "NO", "ONE").trim()); // failover (what Sentinel does)
        RedisLocker onPromoted = open(RedisLocker.builder().node("127.0.0.1", replica.port()).keyPrefix("promo:")
                .restartGuard(Duration.ZERO), "p");
        PermanentLockingException refused = assertThrows(PermanentLockingException.class,
                () -> onPromoted.acquire(lock("on-promoted"), "must not be granted: this server evicts"));
        assertTrue(refused.getMessage().contains("allkeys-lru"), refused.getMessage());
    }

    /**
     * With {@code keyPrefix("")} the marker must not overwrite an application's key named {@code guard}. The locker
     * writes no key without braces of its own.
     */
    @Test
    void anEmptyPrefixLeavesOtherKeysAlone() {
        RedisServer s = server(RedisServer.start());
        s.cli("HSET", "guard", "gate", "north"); // an application's data, in the same database
        awaitServerSecondAfter(s, Long.parseLong(s.cli("LASTSAVE").trim())); // past the boot second, as in service
        RedisLocker l = open(RedisLocker.builder().node("127.0.0.1", s.port()).keyPrefix("")
                .restartGuard(Duration.ZERO), "a");
        l.acquire(lock("any"), "grant").close();
        assertEquals("hash", s.cli("TYPE", "guard").trim(), "the application's key was overwritten: "
                + s.cli("GET", "guard").trim());
        assertEquals("north", s.cli("HGET", "guard", "gate").trim());
    }

    // ---- helpers ----------------------------------------------------------------------------------------------

    private static RedisServer ownerOf(RedisServer.Cluster cluster, String key) {
        for (RedisServer n : cluster.nodes()) {
            if (!n.cli("EXISTS", key).contains("MOVED")) {
                return n;
            }
        }
        throw new IllegalStateException("no node owns " + key);
    }

    private static String myId(RedisServer n) {
        return n.cli("CLUSTER", "MYID").trim();
    }

    /** A new lock whose key hashes to {@code slot}. */
    private static KeyColumn sameSlot(RedisLocker l, String slot, RedisServer.Cluster cluster) {
        RedisServer any = cluster.nodes().get(0);
        for (int i = 0; ; i++) {
            KeyColumn candidate = KeyColumn.named("fresh-" + i);
            String key = new String(l.redisKey(candidate), StandardCharsets.US_ASCII);
            if (Integer.parseInt(slot) == redis.clients.jedis.util.JedisClusterCRC16.getSlot(key)) {
                assertEquals(slot, any.cli("CLUSTER", "KEYSLOT", key).trim());
                return candidate;
            }
        }
    }

    private static void awaitReplicaLinked(RedisServer replica) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!replica.cli("INFO", "replication").contains("master_link_status:up")) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("replica did not sync: " + replica.cli("INFO", "replication"));
            }
            RedisServer.sleep(20);
        }
    }

    /** Waits until the server's clock is in a later whole second than {@code second}. */
    private static void awaitServerSecondAfter(RedisServer s, long second) {
        while (Long.parseLong(s.cli("TIME").split("\\R")[0].trim()) <= second) {
            RedisServer.sleep(50);
        }
    }
}
