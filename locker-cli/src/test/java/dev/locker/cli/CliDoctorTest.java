package dev.locker.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.locker.api.KeyColumn;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.Lockers;
import dev.locker.mongo.InProcessMongo;
import dev.locker.redis.RedisServerProcess;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static dev.locker.cli.CliChecks.JSON;
import static dev.locker.cli.CliChecks.assertNoSecret;
import static dev.locker.cli.CliChecks.finding;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * {@code locker doctor} on real servers: a check that cannot read its input never says OK, and each hazard is judged.
 * Redis runs as a master with a replica; MongoDB is the in-process server; file: and mem: need none.
 */
class CliDoctorTest {

    private static RedisServerProcess master;
    private static RedisServerProcess replica;

    @BeforeAll
    static void start() throws Exception {
        master = RedisServerProcess.start();
        replica = RedisServerProcess.start("--replicaof", "127.0.0.1", Integer.toString(master.port()));
        try (Jedis admin = new Jedis(new HostAndPort("127.0.0.1", master.port()))) {
            // generous wait for the replica's handshake; not a timing assertion
            for (int i = 0; i < 600 && !admin.info("replication").contains("connected_slaves:1"); i++) {
                Thread.sleep(50);
            }
            assertTrue(admin.info("replication").contains("connected_slaves:1"), "the replica attached");
            // a least-privilege user: every command, but INFO only for its server and memory sections
            admin.aclSetUser("norepl", "on", ">N0replPw42", "~*", "&*", "+@all", "-info", "+info|server",
                    "+info|memory");
        }
    }

    @AfterAll
    static void stop() {
        replica.close();
        master.close();
    }

    /**
     * A least-privilege user may read INFO server and memory only, on a master with an asynchronous replica. The
     * replication and server checks cannot read their input, so neither says OK.
     */
    @Test
    void aCheckThatCannotReadItsInputIsNotReportedOk() throws Exception {
        CliRun run = CliRun.run(Map.of(), "--json", "doctor", "--uri",
                "redis://norepl:N0replPw42@127.0.0.1:" + master.port());
        assertNoSecret(run, "N0replPw42");
        JsonNode doc = JSON.readTree(run.out());
        assertNotEquals("OK", finding(doc, "replication").get("level").asText(), doc::toString);
        assertNotEquals("OK", finding(doc, "server").get("level").asText(), doc::toString);
    }

    /** A user without any INFO right gets "could not check", never a verdict read from nothing. */
    @Test
    void aUserWithoutInfoGetsCouldNotCheckNeverOkOrAFailReadFromNothing() throws Exception {
        try (Jedis admin = new Jedis(new HostAndPort("127.0.0.1", master.port()))) {
            admin.aclSetUser("noinfo", "on", ">N0infoPw42", "~*", "&*", "+@all", "-info", "-config");
        }
        CliRun run = CliRun.run(Map.of(), "--json", "doctor", "--uri",
                "redis://noinfo:N0infoPw42@127.0.0.1:" + master.port() + "?expiry=30s&restartGuard=10s");
        assertNoSecret(run, "N0infoPw42");
        JsonNode doc = JSON.readTree(run.out());
        for (String check : List.of("server", "maxmemory-policy", "persistence", "restart-guard", "replication")) {
            JsonNode f = finding(doc, check);
            assertEquals("WARN", f.get("level").asText(), doc::toString);
            assertTrue(f.get("why").asText().contains("could not check"), f::toString);
        }
    }

    /**
     * An acknowledged write without the journal on a standalone server can be lost in a crash, with its token. The
     * doctor does not pass w=1 there.
     */
    @Test
    void mongoWriteConcernWithoutJournalOnAStandaloneIsNotOk() throws Exception {
        try (InProcessMongo mongo = InProcessMongo.start()) {
            CliRun run = CliRun.run(Map.of(), "--json", "doctor", "--uri", mongo.uri() + "&w=1");
            JsonNode doc = JSON.readTree(run.out());
            assertNotEquals("OK", finding(doc, "write-concern").get("level").asText(), doc::toString);
        }
    }

    /**
     * A numeric write concern below a majority of the replica set lets a failover roll a grant back. It needs a real
     * five-member set in LOCKER_MONGO_RS_URI.
     */
    @Test
    void mongoNumericWriteConcernBelowAMajorityOfTheSetFails() throws Exception {
        String rs = System.getenv("LOCKER_MONGO_RS_URI");
        assumeTrue(rs != null, "LOCKER_MONGO_RS_URI (a 5-member replica set) is not set");
        CliRun run = CliRun.run(Map.of(), "--json", "doctor", "--uri", rs + (rs.contains("?") ? "&" : "?") + "w=2");
        assertEquals("FAIL", finding(JSON.readTree(run.out()), "write-concern").get("level").asText(), run::toString);
    }

    @Test
    void doctorJudgesEvictionReplicasAndAReplicaTarget() throws Exception {
        try (RedisServerProcess volatileLru = RedisServerProcess.start("--maxmemory-policy", "volatile-lru")) {
            JsonNode doc = JSON.readTree(CliRun.run(Map.of(), "--json", "doctor", "--uri", volatileLru.uri()).out());
            assertEquals("FAIL", finding(doc, "maxmemory-policy").get("level").asText(), doc::toString);
        }
        CliRun withReplica = CliRun.run(Map.of(), "--json", "doctor", "--uri", master.uri());
        JsonNode doc = JSON.readTree(withReplica.out());
        assertEquals("WARN", finding(doc, "replication").get("level").asText(), doc::toString);
        CliRun onReplica = CliRun.run(Map.of(), "--json", "doctor", "--uri", replica.uri());
        assertEquals(Cli.NO, onReplica.code(), onReplica::toString);
        assertEquals("FAIL", finding(JSON.readTree(onReplica.out()), "server").get("level").asText(), onReplica::toString);
        CliRun unguarded = CliRun.run(Map.of(), "--json", "doctor", "--uri", master.uri() + "?restartGuard=0");
        assertEquals(Cli.NO, unguarded.code(), unguarded::toString);
        assertEquals("FAIL", finding(JSON.readTree(unguarded.out()), "persistence").get("level").asText());
    }

    /**
     * Without AOF a restart loses the records of finished runOnce jobs, which no guard brings back: WARN. With a
     * replica, two clocks judge claims: WARN under serverClockSkew=0, OK within a bound they keep.
     */
    @Test
    void doctorWarnsOfRunRecordsWithoutAofAndJudgesEveryServersClock() throws Exception {
        JsonNode doc = JSON.readTree(CliRun.run(Map.of(), "--json", "doctor", "--uri", master.uri()).out());
        JsonNode records = finding(doc, "run-records");
        assertEquals("WARN", records.get("level").asText(), doc::toString);
        assertTrue(records.get("why").asText().contains("runOnce"), records::toString);
        JsonNode unbounded = finding(doc, "server-clocks");
        assertEquals("WARN", unbounded.get("level").asText(), doc::toString);
        assertTrue(unbounded.get("why").asText().contains("2 server clock(s) read"), unbounded::toString);
        JsonNode bounded = finding(JSON.readTree(CliRun.run(Map.of(), "--json", "doctor", "--uri",
                master.uri() + "?serverClockSkew=5s").out()), "server-clocks");
        assertEquals("OK", bounded.get("level").asText(), bounded::toString);
    }

    /** A URI whose restartGuard differs from the one its prefix's lockers recorded on the server fails the doctor. */
    @Test
    void doctorFailsARestartGuardOtherThanTheOneItsPrefixRecorded() throws Exception {
        try (Jedis admin = new Jedis(new HostAndPort("127.0.0.1", master.port()))) {
            // the recording locker's 2 s guard refuses grants on a younger server; a generous wait, not an assertion
            for (int i = 0; i < 200 && uptimeSeconds(admin) < 3; i++) {
                Thread.sleep(50);
            }
        }
        try (Locker recording = Lockers.open(master.uri() + "?prefix=guarded:&expiry=1s&restartGuard=2s",
                LockerConfig.builder().rid("guard-recorder").build())) {
            recording.acquire(KeyColumn.named("nightly"), "records the guard").close();
            CliRun other = CliRun.run(Map.of(), "--json", "doctor", "--uri",
                    master.uri() + "?prefix=guarded:&expiry=1s&restartGuard=1s");
            assertEquals(Cli.NO, other.code(), other::toString);
            JsonNode f = finding(JSON.readTree(other.out()), "restart-guard");
            assertEquals("FAIL", f.get("level").asText(), f::toString);
            assertTrue(f.get("why").asText().contains("differs"), f::toString);
            CliRun same = CliRun.run(Map.of(), "--json", "doctor", "--uri",
                    master.uri() + "?prefix=guarded:&expiry=1s&restartGuard=2s");
            assertNotEquals("FAIL", finding(JSON.readTree(same.out()), "restart-guard").get("level").asText(),
                    same::toString);
        }
    }

    private static long uptimeSeconds(Jedis admin) {
        for (String line : admin.info("server").split("\r?\n")) {
            if (line.startsWith("uptime_in_seconds:")) {
                return Long.parseLong(line.substring("uptime_in_seconds:".length()).trim());
            }
        }
        return 0;
    }

    @Test
    void doctorOnMemWarnsAndOnAFileDirectoryReadsWithoutCreatingIt(@TempDir Path dir) throws Exception {
        CliRun mem = CliRun.run(Map.of(), "--json", "doctor", "--uri", "mem:doctor");
        assertEquals(Cli.OK, mem.code(), mem::toString);
        assertEquals("WARN", finding(JSON.readTree(mem.out()), "in-jvm").get("level").asText());
        Path missing = dir.resolve("not/yet");
        CliRun file = CliRun.run(Map.of(), "--json", "doctor", "--uri", "file:" + missing);
        assertEquals(Cli.OK, file.code(), file::toString);
        assertFalse(java.nio.file.Files.exists(missing), "doctor only reads");
        java.nio.file.Files.writeString(dir.resolve("plain"), "x");
        CliRun notDir = CliRun.run(Map.of(), "--json", "doctor", "--uri", "file:" + dir.resolve("plain"));
        assertEquals(Cli.NO, notDir.code(), notDir::toString);
    }
}
