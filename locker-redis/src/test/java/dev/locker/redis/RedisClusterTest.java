package dev.locker.redis;

import dev.locker.testkit.RedisServer;
import dev.locker.api.KeyColumn;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.api.PermanentLockingException;
import dev.locker.api.TemporaryLockingException;
import dev.locker.engine.ExpectedValueCheckingStore;
import dev.locker.engine.InMemoryStore;
import dev.locker.testkit.BackendOutageSection;
import dev.locker.testkit.ClockFaultSection;
import dev.locker.testkit.ConformanceHalves;
import dev.locker.testkit.ConformanceBase;
import dev.locker.testkit.ExpectedValueCheckingSection;
import dev.locker.testkit.ExpiryAndFencingSection;
import dev.locker.testkit.ForcedReleaseSection;
import dev.locker.testkit.LifecycleSection;
import dev.locker.testkit.LimitsSection;
import dev.locker.testkit.ListingSection;
import dev.locker.testkit.LockerFixture;
import dev.locker.testkit.RunOnceSection;
import dev.locker.testkit.ThreePhaseSection;
import dev.locker.testkit.UnknownOutcomeSection;
import dev.locker.testkit.WaitingSection;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.util.JedisClusterCRC16;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The conformance suite on a local three-master Redis Cluster, but for the lease sections, plus the cluster-specific
 * facts: each lock's key hashes by the tag the locker derived (whatever braces the lock name holds), and locks spread
 * over all masters. {@link RedisClusterLeaseTest} runs the lease sections beside it, on a cluster of its own.
 */
class RedisClusterTest extends ConformanceBase implements
        ThreePhaseSection,
        ExpiryAndFencingSection,
        WaitingSection,
        ForcedReleaseSection,
        UnknownOutcomeSection,
        ClockFaultSection,
        BackendOutageSection,
        LifecycleSection,
        RunOnceSection,
        LimitsSection,
        ListingSection,
        ExpectedValueCheckingSection {

    private RedisServer.Cluster cluster;
    private final InMemoryStore data = new InMemoryStore("guarded-data");

    @Override
    protected KeyColumnValueStore expectedValueChecking(Locker locker) {
        return new ExpectedValueCheckingStore(data, locker);
    }

    @Override
    protected LockerFixture createFixture() {
        Assumptions.assumeFalse(RedisTarget.isExternal(), "runs its own cluster");
        RedisClusterFixture fixture = new RedisClusterFixture();
        cluster = fixture.cluster();
        return fixture;
    }

    @Test
    void theTwoHalvesTogetherRunEverySectionOfTheSuite() {
        ConformanceHalves.assertTogetherRunEverySection(RedisClusterTest.class, RedisClusterLeaseTest.class);
    }

    @Test
    void eachLockHashesByItsEscapedNameAndLocksSpreadOverAllMasters() {
        RedisLocker a = (RedisLocker) process("a");
        RedisLocker b = (RedisLocker) process("b");
        assertInstanceOf(RedisClusterClient.class, a.client());
        Set<Integer> slots = new HashSet<>();
        List<Lease> leases = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            KeyColumn lock = lock("{same}" + i + "}{");
            byte[] key = a.redisKey(lock);
            String k = new String(key, StandardCharsets.ISO_8859_1);
            String tag = k.substring(k.indexOf('{') + 1, k.indexOf('}'));
            assertEquals(k.length() - 1, k.indexOf('}'), "the name's own braces are escaped: " + k);
            int slot = JedisClusterCRC16.getSlot(key);
            assertEquals(JedisClusterCRC16.getSlot(tag.getBytes(StandardCharsets.US_ASCII)), slot,
                    "the key's slot is its whole escaped name's, not the lock name's {same}");
            slots.add(slot);
            leases.add(a.acquire(lock, "spread"));
            TemporaryLockingException e = assertThrows(TemporaryLockingException.class, () -> b.acquire(lock, ""));
            assertEquals(a.rid(), e.holder().rid());
        }
        assertTrue(slots.size() > 30, "names with the same {tag} still spread: " + slots.size() + " slots");
        for (RedisServer node : cluster.nodes()) {
            long keys = Long.parseLong(node.cli("DBSIZE").trim());
            assertTrue(keys > 0, "every master holds some of the locks: " + node);
        }
        leases.forEach(Lease::close);
    }

    /**
     * A single-server client pointed at one Cluster node: for the keys of other nodes' slots the node answers MOVED,
     * now and forever, so that is permanent and says to use cluster mode.
     */
    @Test
    void aClusterNodeSpokenToAsASingleServerIsPermanent() {
        RedisServer node = cluster.nodes().get(0);
        try (RedisLocker single = RedisLocker.builder().node("127.0.0.1", node.port()).cluster(false)
                .keyPrefix("single:").restartGuard(Duration.ZERO).build()) {
            PermanentLockingException moved = null;
            for (int i = 0; moved == null && i < 100; i++) {
                try {
                    single.acquire(lock("moved-" + i), "").close();
                } catch (PermanentLockingException e) {
                    moved = e;
                }
            }
            assertNotNull(moved, "two thirds of the slots live on other nodes");
            assertTrue(moved.getMessage().contains("MOVED") && moved.getMessage().contains("cluster mode"),
                    moved.getMessage());
        }
    }

    /**
     * The eviction check runs where the lock's key lives: with one master of three set to evict, exactly the locks
     * whose slots that master serves are refused; the others are granted.
     */
    @Test
    void theEvictionCheckRunsOnEachMaster() {
        RedisServer evicting = cluster.nodes().get(0);
        Set<Integer> itsSlots = ownSlots(evicting);
        RedisLocker a = (RedisLocker) process("a");
        evicting.cli("CONFIG", "SET", "maxmemory", "1gb");
        evicting.cli("CONFIG", "SET", "maxmemory-policy", "volatile-lru");
        try {
            int refused = 0;
            int granted = 0;
            for (int i = 0; i < 30; i++) {
                KeyColumn lock = lock("per-master-" + i);
                boolean onEvicting = itsSlots.contains(JedisClusterCRC16.getSlot(a.redisKey(lock)));
                try (Lease lease = a.acquire(lock, "")) {
                    assertTrue(!onEvicting, "granted on the evicting master: " + lock);
                    granted++;
                } catch (PermanentLockingException e) {
                    assertTrue(onEvicting && e.getMessage().contains("volatile-lru"), e.getMessage());
                    refused++;
                }
            }
            assertTrue(refused > 0 && granted > 0, refused + " refused, " + granted + " granted");
        } finally {
            evicting.cli("CONFIG", "SET", "maxmemory-policy", "noeviction");
            evicting.cli("CONFIG", "SET", "maxmemory", "0");
        }
    }

    /** The slots a node serves, from the {@code myself} line of CLUSTER NODES ({@code ... 0-5460 ...}). */
    private static Set<Integer> ownSlots(RedisServer node) {
        Set<Integer> slots = new HashSet<>();
        for (String line : node.cli("CLUSTER", "NODES").split("\\R")) {
            if (line.contains("myself")) {
                String[] parts = line.trim().split(" ");
                for (int i = 8; i < parts.length; i++) {
                    String[] range = parts[i].split("-");
                    int from = Integer.parseInt(range[0]);
                    int to = range.length > 1 ? Integer.parseInt(range[1]) : from;
                    for (int slot = from; slot <= to; slot++) {
                        slots.add(slot);
                    }
                }
            }
        }
        assertTrue(!slots.isEmpty(), "no slots found for " + node);
        return slots;
    }

    @Test
    void tokensIncreaseOnEveryNode() {
        Locker a = process("a");
        for (String name : List.of("x", "y", "z", "w")) {
            KeyColumn lock = lock(name);
            long last = 0;
            for (int i = 0; i < 3; i++) {
                try (Lease lease = a.acquire(lock, "")) {
                    assertTrue(lease.fencingToken() > last);
                    last = lease.fencingToken();
                }
            }
        }
    }
}
