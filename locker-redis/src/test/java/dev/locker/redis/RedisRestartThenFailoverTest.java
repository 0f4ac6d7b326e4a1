package dev.locker.redis;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.testkit.RedisServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import redis.clients.jedis.UnifiedJedis;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** A failover soon after a restart without data grants nothing that a lease from before the restart still holds. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RedisRestartThenFailoverTest {

    /**
     * One guard, one expiry and replicas=1 on every locker: the configuration the docs support for failover. A run
     * whose restart, resync and promotion outlast A's lease is run again with a longer guard.
     */
    private static final Duration GUARD = Duration.ofSeconds(5);

    private final List<Locker> opened = new ArrayList<>();

    @BeforeEach
    void needsOwnServers() {
        Assumptions.assumeFalse(RedisTarget.isExternal(), "needs servers it can kill, restart and promote");
    }

    @AfterEach
    void closeLockers() {
        opened.forEach(Locker::close);
        opened.clear();
    }

    private RedisLocker open(RedisServer s, String name, Duration guard) {
        RedisLocker l = RedisLocker.builder().node("127.0.0.1", s.port()).keyPrefix("failover:").restartGuard(guard)
                .replicas(1).replicaTimeout(Duration.ofSeconds(1)).serverClockSkew(Duration.ofSeconds(1))
                .config(LockerConfig.builder().rid(name + "-" + LockerConfig.randomRid().substring(0, 8))
                        .expiry(guard).build()).build();
        opened.add(l);
        return l;
    }

    /**
     * Given A holding a lock on a master without persistence, acknowledged by its replica. The master crashes and
     * restarts empty, and the replica resyncs from it, losing A's claim too. The master fails again within its guard,
     * and the replica, up for long, is promoted. B, configured as A is, must not be granted A's lock while A's lease
     * is valid: the replica's data is no older than the restart, whatever its uptime says.
     */
    @Test
    void aReplicaResyncedFromARestartedMasterGrantsNothingWhileALeaseFromBeforeTheRestartIsValid() {
        GuardedLockers.untilAskedWhileValid(stretch -> resyncedReplicaAskedWhileValid(GUARD.multipliedBy(stretch)));
    }

    /** One run of the scenario above; false when A's lease ended before B could ask. */
    private boolean resyncedReplicaAskedWhileValid(Duration guard) {
        RedisServer master = RedisServer.start("--repl-diskless-sync-delay", "0");
        RedisServer replica = RedisServer.start("--replicaof", "127.0.0.1", Integer.toString(master.port()),
                "--repl-diskless-sync-delay", "0");
        try {
            awaitLinked(master, replica);
            try (UnifiedJedis admin = RedisLocker.builder().node("127.0.0.1", master.port()).newClient(1)) {
                RedisTarget.awaitUptime(admin, guard);
            }
            RedisLocker a = open(master, "a", guard);
            KeyColumn lock = KeyColumn.named("nightly-" + LockerConfig.randomRid().substring(0, 8));
            // renewed by nobody: A counts on its deadline alone, one expiry less the skew after its grant
            Lease held = a.acquire(lock, "nightly").keepAlive(false);
            String key = new String(a.redisKey(lock), StandardCharsets.UTF_8);
            assertEquals("1", replica.cli("EXISTS", key).trim(), "the replica acknowledged A's claim");

            master.restart(); // a crash without data: A's claim is gone, the master refuses grants for its guard
            while (!replica.cli("EXISTS", key).trim().equals("0")
                    || !replica.cli("INFO", "replication").contains("master_link_status:up")) {
                RedisServer.sleep(50); // the replica resyncs from the empty master: it loses A's claim as well
            }
            master.kill9(); // the master fails again before its guard is over; the replica is promoted
            assertEquals("OK", replica.cli("REPLICAOF", "NO", "ONE").trim());
            master.startAgain();
            master.cli("REPLICAOF", "127.0.0.1", Integer.toString(replica.port()));
            awaitLinked(replica, master);

            RedisLocker b = open(replica, "b", guard);
            // a refusal, for the guard or for a holder, is what keeps one holder
            return GuardedLockers.askWhileValid(b, lock, held, 100,
                    second -> "B on the promoted replica was granted the lock", refused -> { });
        } finally {
            replica.close();
            master.close();
        }
    }

    /** Waits until {@code replica} follows {@code master} and acknowledges its writes. */
    private static void awaitLinked(RedisServer master, RedisServer replica) {
        while (!master.cli("INFO", "replication").contains("connected_slaves:1")
                || !replica.cli("INFO", "replication").contains("master_link_status:up")
                || !master.cli("WAIT", "1", "100").trim().equals("1")) {
            RedisServer.sleep(50);
        }
    }
}
