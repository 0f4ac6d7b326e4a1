package dev.locker.redis;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockingException;
import dev.locker.spi.DeploymentCheck;
import dev.locker.testkit.RedisServer;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The doctor reports how old a server's data is known to be, and what that means for the next grant. */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class RedisLineageDoctorTest {

    private static final Duration GUARD = Duration.ofSeconds(10);
    private static final String OPTIONS = "?prefix=lineage:&expiry=1s&restartGuard=" + GUARD.toSeconds() + "s";

    @BeforeEach
    void needsOwnServers() {
        Assumptions.assumeFalse(RedisTarget.isExternal(), "needs servers it can promote");
    }

    private static List<DeploymentCheck.Finding> doctor(String uri) {
        return new RedisDoctor().check(uri, p -> { });
    }

    private static List<DeploymentCheck.Finding> lineage(List<DeploymentCheck.Finding> findings) {
        return findings.stream().filter(f -> f.check().equals("lineage")).toList();
    }

    private static String replid(RedisServer s) {
        Matcher m = Pattern.compile("master_replid:(\\w+)").matcher(s.cli("INFO", "replication"));
        assertTrue(m.find());
        return m.group(1);
    }

    private static RedisLocker open(RedisServer s) {
        return RedisLocker.builder().uri(s.address() + OPTIONS)
                .config(LockerConfig.builder().expiry(Duration.ofSeconds(1)).build()).build();
    }

    @Test
    void aSingleServerWhoseRecordNamesItsOwnIdIsReportedWithTheRecordsStart() {
        try (RedisServer server = RedisServer.start()) {
            try (RedisLocker a = open(server)) {
                // refused for the guard, or granted: either way the admission records the lineage
                try (Lease ignored = a.acquire(KeyColumn.named("nightly"), "nightly")) {
                    // held a moment
                } catch (LockingException refused) {
                    GuardedLockers.namesTheGuard(refused);
                }
            }
            List<DeploymentCheck.Finding> found = lineage(doctor(server.address() + OPTIONS));
            assertEquals(1, found.size(), found::toString);
            DeploymentCheck.Finding f = found.get(0);
            assertTrue(f.why().contains("names " + replid(server) + " (this server's id)"), f::toString);
            assertTrue(f.why().contains("its data continues that lineage"), f::toString);
            assertTrue(f.why().contains("master_replid2 unset"), f::toString);
        }
    }

    @Test
    void aPromotedReplicaThatNoRecordNamesIsReportedAsWaitingOutTheGuardFromItsNextGrant() {
        try (RedisServer master = RedisServer.start("--repl-diskless-sync-delay", "0");
             RedisServer replica = RedisServer.start("--replicaof", "127.0.0.1", Integer.toString(master.port()),
                     "--repl-diskless-sync-delay", "0")) {
            while (!replica.cli("INFO", "replication").contains("master_link_status:up")) {
                RedisServer.sleep(50);
            }
            // up longer than the guard: only its data's lineage can hold grants back, not its uptime
            GuardedLockers.awaitUptime(replica, GUARD.plusSeconds(1));
            assertEquals("OK", replica.cli("REPLICAOF", "NO", "ONE").trim());

            DeploymentCheck.Finding before = lineage(doctor(replica.address() + OPTIONS)).get(0);
            assertEquals(DeploymentCheck.Level.WARN, before.level(), before::toString);
            assertTrue(before.why().contains("no lineage record"), before::toString);
            assertTrue(before.why().contains("it took data over since it started"), before::toString);
            assertTrue(before.why().contains("the next grant starts its lineage"), before::toString);

            try (RedisLocker b = open(replica)) {
                LockingException refused = assertThrows(LockingException.class,
                        () -> b.acquire(KeyColumn.named("nightly"), "nightly").close());
                GuardedLockers.namesTheGuard(refused);
            }
            DeploymentCheck.Finding after = lineage(doctor(replica.address() + OPTIONS)).get(0);
            assertEquals(DeploymentCheck.Level.WARN, after.level(), after::toString);
            assertTrue(after.why().contains("names " + replid(replica) + " (this server's id)"), after::toString);
            assertTrue(after.why().contains("grants are refused for about"), after::toString);
        }
    }

    @Test
    void aClusterMasterPromotedFromAReplicaIsReportedAsOfUnknownDataAge() {
        RedisServer.Cluster cluster = RedisServer.startCluster();
        try (RedisServer extra = RedisServer.start("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                "--cluster-node-timeout", "5000")) {
            RedisServer master = cluster.nodes().get(0);
            String masterId = master.cli("CLUSTER", "MYID").trim();
            extra.cli("CLUSTER", "MEET", "127.0.0.1", Integer.toString(master.port()));
            while (!extra.cli("CLUSTER", "NODES").contains(masterId)) {
                RedisServer.sleep(50);
            }
            while (!extra.cli("CLUSTER", "REPLICATE", masterId).trim().equals("OK")) {
                RedisServer.sleep(100); // the new node learns the master's role first
            }
            while (!extra.cli("INFO", "replication").contains("master_link_status:up")) {
                RedisServer.sleep(50);
            }
            DeploymentCheck.Finding none = lineage(doctor(cluster.uri() + OPTIONS)).stream()
                    .filter(f -> f.why().contains("took its data over")).findFirst().orElse(null);
            assertEquals(null, none, "no master took data over yet");

            extra.cli("CLUSTER", "FAILOVER");
            while (!extra.cli("INFO", "replication").contains("role:master")) {
                RedisServer.sleep(50);
            }
            // the doctor reads the topology from the seed nodes: wait until each one's gossip names the new master
            String extraId = extra.cli("CLUSTER", "MYID").trim();
            for (RedisServer node : cluster.nodes()) {
                while (!node.cli("CLUSTER", "NODES").lines()
                        .anyMatch(l -> l.startsWith(extraId) && l.contains("master"))) {
                    RedisServer.sleep(50);
                }
            }
            List<DeploymentCheck.Finding> found = lineage(doctor(cluster.uri() + OPTIONS));
            List<DeploymentCheck.Finding> promoted = found.stream()
                    .filter(f -> f.why().startsWith("127.0.0.1:" + extra.port() + ": ")).toList();
            assertEquals(1, promoted.size(), found::toString);
            DeploymentCheck.Finding f = promoted.get(0);
            assertEquals(DeploymentCheck.Level.WARN, f.level(), f::toString);
            assertTrue(f.why().contains("took its data over from another server"), f::toString);
            assertTrue(f.why().contains("keeps no lineage record"), f::toString);
        } finally {
            cluster.close();
        }
    }
}
