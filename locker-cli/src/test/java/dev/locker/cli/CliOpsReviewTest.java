package dev.locker.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockLost;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.Lockers;
import dev.locker.api.LossReason;
import dev.locker.mongo.InProcessMongo;
import dev.locker.redis.RedisServerProcess;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;

import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Adversarial review of the {@code locker} command (review-ops). Findings are {@code @Disabled("finding N: ...")}
 * tests that fail on today's code; the other tests pin down what was checked and found sound. Real servers only:
 * redis-server processes (a master, a replica of it), the in-process MongoDB server, {@code file:} in a temp dir,
 * {@code mem:} in this JVM.
 */
class CliOpsReviewTest {

    private static final ObjectMapper JSON = new ObjectMapper();

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

    private static Locker holder(String rid) {
        return Lockers.open(master.uri() + "?restartGuard=0", LockerConfig.builder().rid(rid).build());
    }

    private static CliRun cli(String... args) {
        return CliRun.run(Map.of("LOCKER_URI", master.uri()), args);
    }

    private static int deadPort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private static void assertNoSecret(CliRun run, String... secrets) {
        for (String s : secrets) {
            assertFalse((run.out() + run.err()).contains(s), "'" + s + "' printed:\n" + run);
        }
    }

    private static JsonNode finding(JsonNode doctor, String check) {
        for (JsonNode f : doctor.get("findings")) {
            if (f.get("check").asText().equals(check)) {
                return f;
            }
        }
        throw new AssertionError("no " + check + " in " + doctor);
    }

    // =================================================================================================================
    // Findings (each fails on today's code)
    // =================================================================================================================

    /**
     * Finding 1. A URI whose scheme separator is mistyped ({@code redis//}, {@code redis:/}) is echoed with its password:
     * Cli.uri() prints {@code Secrets.mask(uri)} before {@code terminal.hide(uri)} runs, and Secrets.USER_INFO only
     * knows {@code scheme://user:pw@}, so neither the mask nor the scrubber finds the password.
     */
    @Test
    void aMistypedSchemeSeparatorDoesNotPrintThePassword() throws Exception {
        int dead = deadPort();
        CliRun noColon = CliRun.run(Map.of(), "list", "--uri", "redis//locker:S3cretPw99@127.0.0.1:" + dead);
        assertEquals(Cli.USAGE, noColon.code(), noColon::toString);
        assertNoSecret(noColon, "S3cretPw99");
        CliRun oneSlash = CliRun.run(Map.of(), "list", "--uri", "redis:/locker:S3cretPw99@127.0.0.1:" + dead);
        assertEquals(Cli.USAGE, oneSlash.code(), oneSlash::toString);
        assertNoSecret(oneSlash, "S3cretPw99");
        CliRun env = CliRun.run(Map.of("LOCKER_URI", "mongodb:/locker:S3cretPw99@127.0.0.1:" + dead), "list");
        assertNoSecret(env, "S3cretPw99");
    }

    /**
     * Finding 2. A password that holds a raw {@code /} or {@code ?} (not percent-encoded: the URI is malformed, and the
     * operator typed their real password) is printed whole or in part: Secrets.USER_INFO stops the password at
     * {@code /?#}, so the scrubber learns nothing (or only the part before the {@code ?}), and the backends' "bad URI"
     * messages echo the user info.
     */
    @Test
    void aPasswordWithARawSlashOrQuestionMarkIsNotPrinted() throws Exception {
        int dead = deadPort();
        CliRun slash = CliRun.run(Map.of(), "list", "--uri", "redis://locker:S3c/retPw99@127.0.0.1:" + dead);
        assertEquals(Cli.USAGE, slash.code(), slash::toString);
        assertNoSecret(slash, "retPw99", "S3c/");
        CliRun question = CliRun.run(Map.of(), "list", "--uri", "redis://locker:S3c?retPw99@127.0.0.1:" + dead);
        assertNoSecret(question, "'S3c'", "retPw99");
        CliRun mongo = CliRun.run(Map.of(), "list", "--uri", "mongodb://locker:S3c/retPw99@127.0.0.1:" + dead + "/");
        assertNoSecret(mongo, "retPw99");
    }

    /**
     * Finding 3. A MongoDB URI can carry a secret in an option whose name says nothing of passwords:
     * {@code authMechanismProperties=AWS_SESSION_TOKEN:...} (MONGODB-AWS). Secrets.secretName() only knows
     * password/secret/passwd/pwd, so the token is neither masked nor scrubbed; any message that echoes the URI
     * prints it (here the bad-URI message of a typo'd port).
     */
    @Test
    void anAwsSessionTokenInTheMongoUriIsNotPrinted() {
        CliRun run = CliRun.run(Map.of(), "list", "--uri", "mongodb://AKIAEXAMPLE:S3cretPw99@127.0.0.1:27O17/"
                + "?authMechanism=MONGODB-AWS&authMechanismProperties=AWS_SESSION_TOKEN:T0kenSecret77");
        assertEquals(Cli.USAGE, run.code(), run::toString);
        assertNoSecret(run, "S3cretPw99", "T0kenSecret77");
    }

    /**
     * Finding 4. Bad input that is not refused as a usage error: a duration too large for a long number of
     * milliseconds passes Numbers.duration and blows up later (exit 5, "unexpected failure", after the backend was
     * opened); a malformed {@code lockerMaxClockSkewMS} (which the MongoDB locker refuses cleanly) makes
     * {@code doctor} fail with a NumberFormatException (MongoDoctor.java:55, exit 5).
     */
    @Test
    void overflowingDurationsAndMalformedDoctorOptionsAreUsageErrors() throws Exception {
        Map<String, String> env = Map.of("LOCKER_URI", "redis://127.0.0.1:" + deadPort());
        CliRun huge = CliRun.run(env, "watch", "x", "--interval", "9223372036854775807s");
        assertEquals(Cli.USAGE, huge.code(), huge::toString);
        CliRun minutes = CliRun.run(env, "watch", "x", "--interval", "999999999999999999m");
        assertEquals(Cli.USAGE, minutes.code(), minutes::toString);
        CliRun tooLong = CliRun.run(env, "watch", "x", "--interval", "61m");
        assertEquals(Cli.USAGE, tooLong.code(), tooLong::toString);
        try (InProcessMongo mongo = InProcessMongo.start()) {
            CliRun skew = CliRun.run(Map.of(), "doctor", "--uri", mongo.uri() + "&lockerMaxClockSkewMS=10s");
            assertEquals(Cli.USAGE, skew.code(), skew::toString);
        }
    }

    /**
     * Finding 5. {@code watch} turns every LockingException into an "unreachable" line and keeps polling: a backend
     * that refuses the operator (wrong password, missing ACL right: a PermanentLockingException, which every other
     * command exits 4 on) is shown as "unreachable", never ends the watch, and with {@code --count 1} exits 0.
     */
    @Test
    void watchExitsFourWhenTheBackendRefusesTheCredentials() {
        CliRun run = CliRun.run(Map.of("LOCKER_URI", "redis://nouser:Wr0ngPw55@127.0.0.1:" + master.port()),
                "watch", "x", "--count", "1");
        assertEquals(Cli.REFUSED, run.code(), run::toString);
        assertFalse(run.out().contains("unreachable"), run::toString);
    }

    /**
     * Finding 6. {@code release} has no compare step. The operator looks ({@code show}: worker-a holds it, dead), the
     * lock changes hands (worker-a's claim ends, worker-b acquires), and {@code release --force} then removes
     * worker-b's live claim: nothing lets the operator say "only if it is still worker-a's / token N". The test asks
     * for {@code --holder RID} (or {@code --token N}), checked atomically with the removal on the server (it needs a
     * {@code Locker.forceRelease(lock, reason, expected holder or token)}). Fixed: {@code --token N} calls
     * {@code Locker.forceRelease(lock, reason, N)}, which removes only the claim carrying token N; {@code --holder RID}
     * reads the holder, refuses when its rid differs, else releases by the token it read.
     */
    @Test
    void releaseOnlyTakesTheLockFromTheHolderTheOperatorNamed() throws Exception {
        KeyColumn lock = KeyColumn.named("review/changed-hands");
        try (Locker a = holder("worker-a"); Locker b = holder("worker-b")) {
            Lease la = a.acquire(lock, "nightly");
            JsonNode shown = JSON.readTree(cli("--json", "show", "review/changed-hands").out());
            String seen = shown.get("holder").get("rid").asText();
            long seenToken = shown.get("token").asLong();
            la.close(); // worker-a's claim ends (released, or expired) ...
            try (Lease lb = b.acquire(lock, "nightly")) { // ... and worker-b, alive, holds the lock now
                CliRun byHolder = cli("release", "review/changed-hands", "--force", "--reason", "worker-a is dead",
                        "--holder", seen);
                assertEquals(Cli.NO, byHolder.code(), byHolder::toString);
                CliRun byToken = cli("release", "review/changed-hands", "--force", "--reason", "worker-a is dead",
                        "--token", Long.toString(seenToken));
                assertEquals(Cli.NO, byToken.code(), byToken::toString);
                assertTrue(lb.isValid() && b.holder(lock).isPresent(), "worker-b keeps the lock");
            }
        }
    }

    /**
     * Finding 7. {@code list} without {@code --limit} reads every page of the whole listing into one in-memory list
     * (ListCommand.java:38-48) and prints nothing until the last page: on a deployment with a million locks that is a
     * thousand round trips and a million LockInfo objects (and one JSON string of all of them) before the first line.
     * The test asks for a default bound (1000 here), reported as truncated.
     */
    @Test
    void listWithoutALimitStopsAtADefaultBound() throws Exception {
        List<Lease> leases = new ArrayList<>();
        try (Locker worker = holder("many")) {
            for (int i = 0; i < 1001; i++) {
                leases.add(worker.acquire(KeyColumn.named("review-many/" + i), "many"));
            }
            CliRun run = cli("--json", "list", "review-many/");
            assertEquals(Cli.OK, run.code(), run::toString);
            JsonNode doc = JSON.readTree(run.out());
            assertTrue(doc.get("count").asInt() <= 1000, "count " + doc.get("count"));
            assertTrue(doc.get("truncated").asBoolean(), "truncated");
            // fixed: the bound is said in text too, and --limit lists past it, page by page (the JSON stays one document)
            CliRun text = cli("list", "review-many/");
            assertEquals(Cli.OK, text.code(), text::toString);
            assertTrue(text.out().contains("stopped at the default limit of 1000"), text.err());
            CliRun all = cli("--json", "list", "review-many/", "--limit", "5000");
            assertEquals(Cli.OK, all.code(), all::toString);
            JsonNode every = JSON.readTree(all.out());
            assertEquals(1001, every.get("count").asInt());
            assertEquals(1001, every.get("locks").size());
            assertFalse(every.get("truncated").asBoolean());
            CliRun allText = cli("list", "review-many/", "--limit", "5000");
            assertTrue(allText.out().contains("1001 locks held under 'review-many/'\n"), allText.err());
            assertEquals(1001 + 2, allText.out().lines().count(), "a header, 1001 rows, the summary");
        } finally {
            leases.forEach(Lease::close);
        }
    }

    /**
     * Finding 8. A Redis check that cannot run reports OK. RedisDoctor.info() (RedisDoctor.java:358-363) turns a
     * refused INFO section into an empty map, and the checks then read its absence as a fact: with INFO replication
     * denied (a least-privilege user allowed INFO server and memory only, which is all Locker needs; its acl check
     * passes) on a master that has an asynchronous replica,
     * {@code replication} says OK "no replicas" (the truth is WARN: a failover can lose a claim) and {@code server}
     * says OK for role "?" (RedisDoctor.java:283 and 299: a missing connected_slaves reads as -1, "no replicas").
     * A check that could not read its input must say so (WARN "could not check"), never OK.
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

    /** Finding 8, fixed: a user without any INFO right gets "could not check", never a verdict read from nothing. */
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
     * Finding 9. MongoDB doctor passes {@code w=1} (journal unset) on a standalone server: write-concern OK. A grant
     * acknowledged with w=1 and no j is in memory only until the next journal commit (up to 100 ms by default), so a
     * crash of the server loses acknowledged claims, and the fencing token counters written with them: after the
     * restart the lock is granted again while its holder still works, with a token that may repeat. Redis's doctor
     * FAILs the same hazard ("a restart can lose claims"); MongoDoctor only WARNs about the standalone in general.
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
     * Finding 10 (needs a real replica set: set LOCKER_MONGO_RS_URI to one of 5 members). MongoDoctor.java:121
     * counts any numeric {@code w > 1} as majority ({@code w instanceof Integer n && n > 1}): w=2 on a 5-member set
     * is reported "OK: a grant survives a failover", yet a failover can elect one of the 3 members that lack the
     * grant and roll it back. The check needs the set's size (hello.hosts) to compare w against a majority.
     */
    @Test
    void mongoNumericWriteConcernBelowAMajorityOfTheSetFails() throws Exception {
        String rs = System.getenv("LOCKER_MONGO_RS_URI");
        assumeTrue(rs != null, "LOCKER_MONGO_RS_URI (a 5-member replica set) is not set");
        CliRun run = CliRun.run(Map.of(), "--json", "doctor", "--uri", rs + (rs.contains("?") ? "&" : "?") + "w=2");
        assertEquals("FAIL", finding(JSON.readTree(run.out()), "write-concern").get("level").asText(), run::toString);
    }

    // =================================================================================================================
    // Checked and found sound
    // =================================================================================================================

    @Test
    void passwordsWithEncodedOrRawAtHashAndColonAreNeitherMaskedWrongNorPrinted() throws Exception {
        int dead = deadPort();
        for (String uri : List.of("redis://locker:S3cr@tPw99@127.0.0.1:" + dead,
                "redis://locker:S3c#retPw99@127.0.0.1:" + dead,
                "redis://locker:S3c:retPw99@127.0.0.1:" + dead,
                "redis://locker:S3c%2Fr%40tPw99@127.0.0.1:" + dead,
                "redis://:S3cretPw99@127.0.0.1:" + dead,
                "rediss://127.0.0.1:" + dead + "?keystorePassword=S3cretPw99&truststorePassword=S3cretPw98")) {
            CliRun run = CliRun.run(Map.of(), "--verbose", "list", "--uri", uri);
            assertNotEquals(Cli.OK, run.code(), run::toString);
            assertNoSecret(run, "S3cretPw99", "S3cretPw98", "tPw99", "retPw99", "S3c/r@tPw99", "S3c%2Fr%40tPw99");
            assertFalse(run.err().contains("unexpected failure"), run::toString);
        }
        CliRun json = CliRun.run(Map.of("LOCKER_URI", "redis://locker:S3cretPw99@127.0.0.1:" + dead), "--json",
                "show", "x");
        assertEquals(Cli.UNREACHABLE, json.code(), json::toString);
        assertNoSecret(json, "S3cretPw99");
    }

    @Test
    void everyBadArgumentIsAUsageErrorBeforeAnyIoWithoutAStackTrace() throws Exception {
        // a dead port: any I/O would end in 3, not 2
        Map<String, String> env = Map.of("LOCKER_URI", "redis://127.0.0.1:" + deadPort());
        List<String[]> bad = List.of(
                new String[] {"list", "--limit", "-1"}, new String[] {"list", "--limit", "0"},
                new String[] {"list", "--limit", "1e3"}, new String[] {"list", "--limit"},
                new String[] {"watch", "x", "--count", "0"}, new String[] {"watch", "x", "--interval", "0ms"},
                new String[] {"watch", "x", "--interval", "-1s"}, new String[] {"watch", "x", "--interval", "1h"},
                new String[] {"watch", "x", "--interval", "10ms"}, new String[] {"show", "x%0"},
                new String[] {"show", "%zz"}, new String[] {"show", ""}, new String[] {"show", "x", "y"},
                new String[] {"release", "x", "--force=yes", "--reason", "r"},
                new String[] {"release", "x", "--reason", "r"}, new String[] {"release", "x", "--force"},
                new String[] {"release", "x", "--force", "--reason", "  "}, new String[] {"doctor", "extra"},
                new String[] {"list", "--uri", "localhost"}, new String[] {"list", "--uri", ":6379"},
                new String[] {"list", "--uri", " "}, new String[] {"-x", "list"}, new String[] {"list", "--uri=a", "--uri=b"},
                new String[] {"show", "\uD800"}, new String[] {"show", "a".repeat(5000)},
                new String[] {"release", "a".repeat(5000), "--force", "--reason", "r"});
        for (String[] args : bad) {
            CliRun run = CliRun.run(env, args);
            assertEquals(Cli.USAGE, run.code(), () -> String.join(" ", args) + "\n" + run);
            assertFalse(run.err().contains("\tat ") || run.err().contains("Exception"), run::toString);
            assertTrue(run.out().isEmpty(), run::toString);
        }
    }

    @Test
    void releaseRemovesExactlyTheNamedLockNeverOneSharingItsPrefixOrAnotherColumn() throws Exception {
        KeyColumn named = KeyColumn.named("review-exact/a");
        KeyColumn longer = KeyColumn.named("review-exact/ab");
        KeyColumn column = KeyColumn.of("review-exact/a", "c");
        KeyColumn binary = KeyColumn.of(new byte[] {'r', 0, (byte) 0xff, '%'}, new byte[0]);
        KeyColumn binaryLookalike = KeyColumn.named("r%00%FF%25");
        try (Locker w = holder("exact"); Lease l1 = w.acquire(named, "x"); Lease l2 = w.acquire(longer, "x");
             Lease l3 = w.acquire(column, "x"); Lease l4 = w.acquire(binary, "x");
             Lease l5 = w.acquire(binaryLookalike, "x")) {
            assertEquals(Cli.OK, cli("release", "review-exact/a", "--force", "--reason", "exact").code());
            assertTrue(w.holder(named).isEmpty());
            assertTrue(w.holder(longer).isPresent() && w.holder(column).isPresent(), "only the named lock");
            assertEquals(Cli.OK, cli("release", "r%00%FF%25", "--force", "--reason", "binary").code());
            assertTrue(w.holder(binary).isEmpty(), "%XX names the bytes");
            assertTrue(w.holder(binaryLookalike).isPresent(), "not the lock whose text is 'r%00%FF%25'");
            assertEquals(Cli.OK, cli("release", "r%2500%25FF%2525", "--force", "--reason", "literal").code());
            assertTrue(w.holder(binaryLookalike).isEmpty());
            assertEquals(Cli.OK, cli("release", "--key", "review-exact/a", "--column", "c", "--force", "--reason",
                    "col").code());
            assertTrue(w.holder(column).isEmpty() && w.holder(longer).isPresent());
        }
    }

    @Test
    void releaseOnTheFileBackendIsRecordedAndTheFormerHolderIsTold(@TempDir Path dir) throws Exception {
        String uri = "file:" + dir.resolve("locks");
        KeyColumn lock = KeyColumn.named("file-job");
        try (Locker worker = Lockers.open(uri, LockerConfig.builder().rid("file-worker").build());
             Lease lease = worker.acquire(lock, "file job")) {
            CompletableFuture<LockLost> lost = new CompletableFuture<>();
            lease.onLost(lost::complete);
            CliRun run = CliRun.run(Map.of("LOCKER_URI", uri), "--json", "release", "file-job", "--force", "--reason",
                    "INC-9 file worker hung");
            assertEquals(Cli.OK, run.code(), run::toString);
            JsonNode doc = JSON.readTree(run.out());
            assertTrue(doc.get("released").asBoolean());
            assertEquals("INC-9 file worker hung", doc.get("record").get("reason").asText());
            assertTrue(doc.get("record").get("released").get("rid").asText().startsWith("file-worker"), doc::toString);
            assertTrue(doc.get("record").get("by").get("rid").asText().startsWith("locker-cli"), doc::toString);
            try {
                lease.check();
            } catch (RuntimeException expected) {
                // the claim is gone
            }
            assertEquals(LossReason.FORCE_RELEASED, lost.get(30, TimeUnit.SECONDS).reason());
            CliRun show = CliRun.run(Map.of("LOCKER_URI", uri), "show", "file-job");
            assertEquals(Cli.NO, show.code(), show::toString);
            assertTrue(show.out().contains("INC-9 file worker hung") && show.out().contains("from file-worker"),
                    show::toString);
        }
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

    @Test
    void doctorOnMemWarnsAndOnAFileDirectoryReadsWithoutCreatingIt(@TempDir Path dir) throws Exception {
        CliRun mem = CliRun.run(Map.of(), "--json", "doctor", "--uri", "mem:review");
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

    @Test
    void releaseExitsOneWhenNothingWasHeldAndTheRecordSaysSo() throws Exception {
        CliRun run = cli("--json", "release", "review/never-held", "--force", "--reason", "checking");
        assertEquals(Cli.NO, run.code(), run::toString);
        JsonNode doc = JSON.readTree(run.out());
        assertFalse(doc.get("released").asBoolean());
        assertTrue(doc.get("record").get("released").isNull(), "the record does not invent a former holder");
        CliRun unreachable = CliRun.run(Map.of("LOCKER_URI", "redis://127.0.0.1:" + deadPort()), "release", "x",
                "--force", "--reason", "r");
        assertEquals(Cli.UNREACHABLE, unreachable.code(), unreachable::toString);
    }
}
