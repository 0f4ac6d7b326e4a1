package dev.locker.redis;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockerConfig;
import dev.locker.testkit.RedisServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static dev.locker.redis.RedisWaitingFixture.awaitTrue;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** On a Redis Cluster, a release wakes its waiter through the lock's channel, also after the lock's slot moved. */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class RedisClusterWakingTest {

    private final List<AutoCloseable> closeAfter = new ArrayList<>();

    @AfterEach
    void close() throws Exception {
        for (int i = closeAfter.size() - 1; i >= 0; i--) {
            closeAfter.get(i).close();
        }
    }

    private <T extends AutoCloseable> T closing(T c) {
        closeAfter.add(c);
        return c;
    }

    private RedisLocker open(RedisServer.Cluster cluster, String name) {
        return closing(RedisLocker.builder().uri(cluster.uri()).keyPrefix("cw:").restartGuard(Duration.ZERO)
                .config(LockerConfig.builder().rid(name + "-" + LockerConfig.randomRid().substring(0, 8))
                        .expiry(Duration.ofSeconds(5)).build()).build());
    }

    /**
     * A waiter listens on its lock's channel; the lock's slot then moves to another master, as {@code redis-cli
     * --cluster reshard} moves it. The release, run on the new owner, still reaches the waiter on its connection.
     */
    @Test
    void aReleaseAfterTheLocksSlotMovedStillWakesItsWaiter() throws Exception {
        Assumptions.assumeFalse(RedisTarget.isExternal(), "runs its own cluster");
        RedisServer.Cluster cluster = closing(RedisServer.startCluster());
        ExecutorService pool = Executors.newCachedThreadPool();
        closing(pool::shutdownNow);
        RedisLocker a = open(cluster, "a");
        RedisLocker b = open(cluster, "b");
        KeyColumn lock = KeyColumn.named("moving-" + LockerConfig.randomRid().substring(0, 8));
        String key = new String(a.redisKey(lock), StandardCharsets.US_ASCII);
        Lease held = a.acquire(lock, "holding");
        Future<Optional<Lease>> waits = pool.submit(() -> b.tryAcquire(lock, "waiting", Duration.ofSeconds(60)));
        awaitTrue(() -> b.wakeupListening(lock), "never listened on the lock's channel");
        long told = b.wakeupMessages();

        RedisServer owner = ownerOf(cluster, key);
        RedisServer target = cluster.nodes().stream().filter(n -> n != owner).findFirst().orElseThrow();
        String slot = owner.cli("CLUSTER", "KEYSLOT", key).trim();
        String targetId = myId(target);
        assertEquals("OK", target.cli("CLUSTER", "SETSLOT", slot, "IMPORTING", myId(owner)).trim());
        assertEquals("OK", owner.cli("CLUSTER", "SETSLOT", slot, "MIGRATING", targetId).trim());
        String moved = owner.cli("MIGRATE", "127.0.0.1", Integer.toString(target.port()), key, "0", "5000").trim();
        assertTrue(moved.equals("OK"), "MIGRATE: " + moved);
        for (RedisServer n : cluster.nodes()) {
            assertEquals("OK", n.cli("CLUSTER", "SETSLOT", slot, "NODE", targetId).trim());
        }
        assertEquals(target, ownerOf(cluster, key), "the slot moved");

        held.close();
        Lease got = waits.get(60, TimeUnit.SECONDS).orElseThrow();
        assertTrue(got.fencingToken() > 0);
        got.close();
        awaitTrue(() -> b.wakeupMessages() > told, "the release on the new owner did not reach the waiter");
        assertEquals(1, b.wakeupSubscriptions(), "the slot's move left the wake-up connection alone");
    }

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
}
