package dev.locker.redis;

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

/**
 * Adversarial review of the admission marker (commit ab00cb4: the restart guard's and the eviction check's answers
 * kept for 1 s in a marker key, trusted while {@code LASTSAVE} is unchanged). Each test is a finding of the review,
 * failing on the code it reviewed and kept as a regression test since the fixes (no marker in Cluster mode, the
 * marker never replicated, the marker named {@code <prefix>{}guard}). Real {@code redis-server} processes
 * throughout; nothing of the server is faked.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RedisGuardReviewTest {

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

    private RedisServerProcess server(RedisServerProcess s) {
        servers.add(s);
        return s;
    }

    private RedisLocker open(RedisLocker.Builder b, String name) {
        RedisLocker l = b.config(LockerConfig.builder().rid(name + "-" + LockerConfig.randomRid().substring(0, 8))
                .expiry(Duration.ofSeconds(10)).build()).build();
        opened.add(l);
        return l;
    }

    private static KeyColumn lock(String name) {
        return KeyColumn.named(name + "-" + LockerConfig.randomRid().substring(0, 8));
    }

    /**
     * Finding 1 (Cluster, availability). The acquire script now names two keys, the lock's hash and its slot's
     * marker. While a slot is being migrated (MIGRATING on its owner, IMPORTING on the target: every
     * {@code redis-cli --cluster reshard} or rebalance, and an "open slot" an interrupted reshard leaves behind until
     * {@code --cluster fix}), a multi-key request whose keys are not all on the node is refused with
     * {@code TRYAGAIN}. The marker lives one second and can be rewritten only by a script that runs, so in practice
     * it is never present: every acquire of every lock in that slot is refused for as long as the slot stays open,
     * held locks' keys or new ones alike. With one key, the owner served the locks whose key it still had and sent
     * the rest (ASK) to the target, which served them.
     */
    @Test
    void aSlotUnderMigrationStillGrantsLocks() {
        RedisClusterProcess cluster = RedisClusterProcess.start();
        servers.add(cluster);
        RedisLocker l = open(RedisLocker.builder().uri(cluster.uri()).keyPrefix("mig:").restartGuard(Duration.ZERO),
                "a");
        KeyColumn used = lock("used");
        l.acquire(used, "leaves its key behind (the token field outlives the release)").close();
        String usedKey = new String(l.redisKey(used), StandardCharsets.US_ASCII);
        RedisServerProcess owner = ownerOf(cluster, usedKey);
        RedisServerProcess target = cluster.nodes().stream().filter(n -> n != owner).findFirst().orElseThrow();
        String slot = owner.cli("CLUSTER", "KEYSLOT", usedKey).trim();
        assertTrue(owner.cli("EXISTS", usedKey).trim().equals("1"), "the released lock's key stays on its owner");

        // open the slot for migration, as redis-cli --cluster reshard does before it moves keys
        assertEquals("OK", target.cli("CLUSTER", "SETSLOT", slot, "IMPORTING", myId(owner)).trim());
        assertEquals("OK", owner.cli("CLUSTER", "SETSLOT", slot, "MIGRATING", myId(target)).trim());
        RedisServerProcess.sleep(1100); // the marker the first grant wrote has lapsed (as in any steady state)

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
     * Finding 2 (replication: a marker vouches for a server it was not written on). The marker is a fact about one
     * server (its boot, its eviction policy) but it travels with the data: it is replicated to replicas (and to the
     * AOF), and LASTSAVE is the only thing that ties it to its server. LASTSAVE values coincide across servers
     * often: a disk-based full sync ({@code repl-diskless-sync no}) ends with a BGSAVE on the master, which sets the
     * master's LASTSAVE to (usually) the very second the replica booted, and the replica's LASTSAVE is its boot
     * time; nodes started together (a Cluster, a compose file) share their boot second too. Given a master with
     * {@code noeviction} and a replica that evicts ({@code allkeys-lru}), a grant on the master writes the marker
     * (ok=1); the replica is promoted: for up to a second the promoted server grants with an evicting policy, which
     * {@code evictionCheck=fail} promises never to do (the old code read INFO memory on it at once). With a restart
     * guard the same marker also vouches the master's uptime for a replica that has just restarted.
     */
    @Test
    void aPromotedReplicaThatMayEvictIsRefusedAtOnce() {
        RedisServerProcess master = server(RedisServerProcess.start("--repl-diskless-sync", "no"));
        RedisServerProcess replica = server(RedisServerProcess.start("--replicaof", "127.0.0.1",
                Integer.toString(master.port()), "--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru"));
        awaitReplicaLinked(replica);
        long masterSave = Long.parseLong(master.cli("LASTSAVE").trim());
        long replicaSave = Long.parseLong(replica.cli("LASTSAVE").trim());
        Assumptions.assumeTrue(masterSave == replicaSave, "precondition: the sync's BGSAVE ended in the second the"
                + " replica booted (master " + masterSave + ", replica " + replicaSave + ")");
        awaitServerSecondAfter(master, masterSave); // a marker is written only in a later second than LASTSAVE

        RedisLocker onMaster = open(RedisLocker.builder().node("127.0.0.1", master.port()).keyPrefix("promo:")
                .restartGuard(Duration.ZERO), "m");
        master.cli("DEL", "promo:{}guard");
        onMaster.acquire(lock("on-master"), "writes a fresh marker: ok=1 (noeviction)").close();
        assertEquals("1", master.cli("WAIT", "1", "1000").trim(), "the replica has the master's writes");
        assertTrue(master.cli("GET", "promo:{}guard").startsWith(Long.toString(masterSave)), "the master has its marker");
        assertEquals("", replica.cli("GET", "promo:{}guard").trim(), "the marker is never replicated");

        assertEquals("OK", replica.cli("REPLICAOF", "NO", "ONE").trim()); // failover (what Sentinel does)
        RedisLocker onPromoted = open(RedisLocker.builder().node("127.0.0.1", replica.port()).keyPrefix("promo:")
                .restartGuard(Duration.ZERO), "p");
        PermanentLockingException refused = assertThrows(PermanentLockingException.class,
                () -> onPromoted.acquire(lock("on-promoted"), "must not be granted: this server evicts"));
        assertTrue(refused.getMessage().contains("allkeys-lru"), refused.getMessage());
    }

    /**
     * Finding 3 (the marker overwrites a key that is not the locker's). {@code keyPrefix("")} is accepted (lock
     * keys are then {@code {name}}, still recognisable by their braces), but the marker becomes the bare key
     * {@code guard}, which the acquire script overwrites with {@code SET} (of any type) every second. Before the
     * change the locker never wrote a key without its own braces.
     */
    @Test
    void anEmptyPrefixLeavesOtherKeysAlone() {
        RedisServerProcess s = server(RedisServerProcess.start());
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

    private static RedisServerProcess ownerOf(RedisClusterProcess cluster, String key) {
        for (RedisServerProcess n : cluster.nodes()) {
            if (!n.cli("EXISTS", key).contains("MOVED")) {
                return n;
            }
        }
        throw new IllegalStateException("no node owns " + key);
    }

    private static String myId(RedisServerProcess n) {
        return n.cli("CLUSTER", "MYID").trim();
    }

    /** A new lock whose key hashes to {@code slot}. */
    private static KeyColumn sameSlot(RedisLocker l, String slot, RedisClusterProcess cluster) {
        RedisServerProcess any = cluster.nodes().get(0);
        for (int i = 0; ; i++) {
            KeyColumn candidate = KeyColumn.named("fresh-" + i);
            String key = new String(l.redisKey(candidate), StandardCharsets.US_ASCII);
            if (Integer.parseInt(slot) == redis.clients.jedis.util.JedisClusterCRC16.getSlot(key)) {
                assertEquals(slot, any.cli("CLUSTER", "KEYSLOT", key).trim());
                return candidate;
            }
        }
    }

    private static void awaitReplicaLinked(RedisServerProcess replica) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!replica.cli("INFO", "replication").contains("master_link_status:up")) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("replica did not sync: " + replica.cli("INFO", "replication"));
            }
            RedisServerProcess.sleep(20);
        }
    }

    /** Waits until the server's clock is in a later whole second than {@code second}. */
    private static void awaitServerSecondAfter(RedisServerProcess s, long second) {
        while (Long.parseLong(s.cli("TIME").split("\\R")[0].trim()) <= second) {
            RedisServerProcess.sleep(50);
        }
    }
}
