package dev.locker.redis;

import dev.locker.api.KeyColumn;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.Run;
import dev.locker.testkit.RedisServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A run reported RAN with {@code replicas=1} is recorded on the replica that a failover promotes. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RedisRunRecordDurabilityTest {

    private static final Duration EXPIRY = Duration.ofSeconds(2);
    private final List<Locker> opened = new ArrayList<>();

    @BeforeEach
    void needsOwnServers() {
        Assumptions.assumeFalse(RedisTarget.isExternal(), "needs servers it can promote and kill");
    }

    @AfterEach
    void closeLockers() {
        opened.forEach(Locker::close);
        opened.clear();
    }

    private RedisLocker open(RedisServer s, String name, int replicas) {
        RedisLocker l = RedisLocker.builder().node("127.0.0.1", s.port()).keyPrefix("runs:")
                .config(LockerConfig.builder().rid(name + "-" + LockerConfig.randomRid().substring(0, 8))
                        .expiry(EXPIRY).build())
                .replicas(replicas).replicaTimeout(Duration.ofMillis(500)).restartGuard(Duration.ZERO).build();
        opened.add(l);
        return l;
    }

    /**
     * Given A running a job on the master with {@code replicas=1}: its claim reaches the replica, which is promoted
     * while the task runs (the failover Sentinel makes when it loses sight of the master), so the run's record written
     * afterwards never reaches it; then the old master dies. If A was told RAN, B on the promoted replica must find
     * the job done, never run it a second time.
     */
    @Test
    void aRunReportedRanIsKeptByTheReplicaAFailoverPromotes() {
        RedisServer master = RedisServer.start("--repl-diskless-sync-delay", "0");
        RedisServer replica = RedisServer.start("--replicaof", "127.0.0.1",
                Integer.toString(master.port()));
        try {
            while (!master.cli("INFO", "replication").contains("connected_slaves:1")
                    || !replica.cli("INFO", "replication").contains("master_link_status:up")
                    || !master.cli("WAIT", "1", "100").trim().equals("1")) {
                RedisServer.sleep(50);
            }
            RedisLocker a = open(master, "a", 1);
            KeyColumn job = KeyColumn.named("invoice-run-" + LockerConfig.randomRid().substring(0, 8));
            AtomicInteger runs = new AtomicInteger();
            Run first = a.runOnce(job, "monthly invoices", lease -> {
                runs.incrementAndGet();
                // the claim is on the replica; from now on nothing the old master writes reaches it
                assertEquals("OK", replica.cli("REPLICAOF", "NO", "ONE").trim());
            });
            master.kill9();
            RedisLocker b = open(replica, "b", 0);
            Run second = b.runOnce(job, "monthly invoices", lease -> runs.incrementAndGet());
            while (second.outcome() == Run.Outcome.BUSY) { // A's claim lives on the promoted replica until it expires
                RedisServer.sleep(200);
                second = b.runOnce(job, "monthly invoices", lease -> runs.incrementAndGet());
            }
            if (first.ran()) {
                assertEquals(Run.Outcome.ALREADY_DONE, second.outcome(), "A was told RAN, yet after the failover to "
                        + "the replica that acknowledged its claim B found no record and ran the job again");
            }
            assertNotEquals(Run.Outcome.RAN, first.outcome(), "no replica acknowledged the record");
            assertTrue(first.failure().map(Throwable::getMessage).orElse("").contains("replica"), first::toString);
            assertEquals(2, runs.get(), "unrecorded, the run happens again after the failover");
        } finally {
            replica.close();
            master.close();
        }
    }
}
