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
import dev.locker.redis.RedisServerProcess;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;

import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The {@code locker} command end to end against real redis-server processes: a safe one, one started with
 * {@code --maxmemory-policy allkeys-lru}, and a dead port. Holders are real lockers of this JVM on the same server.
 */
class CliRedisTest {

    private static final ObjectMapper JSON = new ObjectMapper();

    private static RedisServerProcess safe;
    private static RedisServerProcess unsafe;

    @BeforeAll
    static void start() {
        safe = RedisServerProcess.start();
        unsafe = RedisServerProcess.start("--maxmemory-policy", "allkeys-lru");
    }

    @AfterAll
    static void stop() {
        safe.close();
        unsafe.close();
    }

    /** A holder on the safe server: the restart guard is off for it, since the server was just started on purpose. */
    private static Locker holder(String rid) {
        return Lockers.open(safe.uri() + "?restartGuard=0", LockerConfig.builder().rid(rid).build());
    }

    private static CliRun cli(String... args) {
        return CliRun.run(Map.of("LOCKER_URI", safe.uri()), args);
    }

    // ---- list and show ------------------------------------------------------------------------------------------

    @Test
    void listShowsEachHeldLockWithItsHolderWhyAndTokenInTextAndJson() throws Exception {
        try (Locker worker = holder("worker-7");
             Lease a = worker.acquire(KeyColumn.named("list/nightly report"), "nightly report");
             Lease b = worker.acquire(KeyColumn.of(new byte[] {'l', 'i', 's', 't', '/', 0, (byte) 0xff}, new byte[] {'c'}),
                     "binary")) {
            CliRun text = cli("list", "list/");
            assertEquals(Cli.OK, text.code(), text::toString);
            assertTrue(text.out().contains("list/nightly%20report"), text::toString);
            assertTrue(text.out().contains("list/%00%FF --column c"), text::toString);
            assertTrue(text.out().contains("worker-7") && text.out().contains("nightly report"), text::toString);
            assertTrue(text.out().contains(Long.toString(a.fencingToken())), text::toString);
            assertTrue(text.out().contains("2 locks held under 'list/'"), text::toString);

            CliRun json = cli("--json", "list", "list/");
            assertEquals(Cli.OK, json.code(), json::toString);
            JsonNode doc = JSON.readTree(json.out());
            assertEquals(2, doc.get("count").asInt());
            assertFalse(doc.get("truncated").asBoolean());
            JsonNode nightly = null;
            for (JsonNode l : doc.get("locks")) {
                if (l.get("key").asText().equals("list/nightly%20report")) {
                    nightly = l;
                }
            }
            assertNotNull(nightly, json::toString);
            assertEquals("", nightly.get("column").asText());
            assertEquals("list/nightly%20report", nightly.get("serverName").asText(), "KeyColumn.legible, as redis-cli shows it");
            assertEquals(a.fencingToken(), nightly.get("token").asLong());
            assertEquals("nightly report", nightly.get("holder").get("why").asText());
            assertTrue(nightly.get("holder").get("rid").asText().startsWith("worker-7"));
            assertEquals(ProcessHandle.current().pid(), nightly.get("holder").get("pid").asLong());
            assertNotNull(java.time.Instant.parse(nightly.get("expiresAt").asText()));

            CliRun limited = cli("--json", "list", "list/", "--limit", "1");
            JsonNode one = JSON.readTree(limited.out());
            assertEquals(1, one.get("count").asInt(), limited::toString);
        }
        CliRun none = cli("list", "list/");
        assertEquals(Cli.OK, none.code());
        assertTrue(none.out().contains("no locks held under 'list/'"), none::toString);
    }

    @Test
    void showNamesTheHolderAndTokenAndExitsOneForAFreeLock() throws Exception {
        try (Locker worker = holder("worker-8");
             Lease lease = worker.acquire(KeyColumn.named("show/job"), "show me")) {
            CliRun text = cli("show", "show/job");
            assertEquals(Cli.OK, text.code(), text::toString);
            assertTrue(text.out().contains("held by   worker-8"), text::toString);
            assertTrue(text.out().contains("token     " + lease.fencingToken()), text::toString);
            JsonNode doc = JSON.readTree(cli("--json", "show", "--key", "show/job").out());
            assertTrue(doc.get("held").asBoolean());
            assertEquals(lease.fencingToken(), doc.get("token").asLong());
            assertEquals("show me", doc.get("holder").get("why").asText());
            assertTrue(doc.get("lastForcedRelease").isNull());
        }
        CliRun free = cli("show", "show/job");
        assertEquals(Cli.NO, free.code(), free::toString);
        assertTrue(free.out().contains("nobody"), free::toString);
    }

    @Test
    void showPrintsTheLastRunOfAJob() throws Exception {
        try (Locker worker = holder("migrator")) {
            worker.runOnce(KeyColumn.named("show/migration-1"), "migration 1", lease -> { });
        }
        CliRun text = cli("show", "show/migration-1");
        assertTrue(text.out().contains("last run  migrator"), text::toString);
        JsonNode doc = JSON.readTree(cli("--json", "show", "show/migration-1").out());
        assertTrue(doc.get("lastRun").get("ranBy").get("rid").asText().startsWith("migrator"));
    }

    // ---- release --------------------------------------------------------------------------------------------------

    @Test
    void releaseRefusesWithoutForceAndReasonThenRecordsWhoWhenWhyForTheHolderAndShow() throws Exception {
        KeyColumn lock = KeyColumn.named("release/stuck job");
        try (Locker worker = holder("stuck-worker");
             Lease lease = worker.acquire(lock, "stuck")) {
            LinkedBlockingQueue<LockLost> losses = new LinkedBlockingQueue<>();
            lease.onLost(losses::add);

            CliRun noForce = cli("release", "release/stuck%20job", "--reason", "dead");
            assertEquals(Cli.USAGE, noForce.code(), noForce::toString);
            assertTrue(noForce.err().contains("--force"), noForce::toString);
            CliRun noReason = cli("release", "release/stuck%20job", "--force");
            assertEquals(Cli.USAGE, noReason.code(), noReason::toString);
            assertTrue(noReason.err().contains("--reason"), noReason::toString);
            assertTrue(worker.holder(lock).isPresent(), "refused releases change nothing");

            CliRun released = cli("--json", "release", "release/stuck%20job", "--force", "--reason",
                    "worker died at 03:12, INC-4711");
            assertEquals(Cli.OK, released.code(), released::toString);
            JsonNode doc = JSON.readTree(released.out());
            assertTrue(doc.get("released").asBoolean());
            assertEquals("worker died at 03:12, INC-4711", doc.get("record").get("reason").asText());
            assertTrue(doc.get("record").get("by").get("rid").asText().startsWith("locker-cli"));
            assertTrue(doc.get("record").get("released").get("rid").asText().startsWith("stuck-worker"));
            assertTrue(worker.holder(lock).isEmpty());

            lease.check(); // the holder asks: it learns the loss, with the record
        } catch (dev.locker.api.ExpiredLockException expected) {
            // check() throws once the claim is gone; the lost signal below says why
        }
        CliRun show = cli("show", "release/stuck%20job");
        assertEquals(Cli.NO, show.code(), show::toString);
        assertTrue(show.out().contains("worker died at 03:12, INC-4711"), show::toString);
        assertTrue(show.out().contains("from stuck-worker"), show::toString);

        CliRun again = cli("release", "release/stuck%20job", "--force", "--reason", "again");
        assertEquals(Cli.NO, again.code(), again::toString);
        assertTrue(again.out().contains("nothing to release"), again::toString);
    }

    /** {@code --token} and {@code --holder} name the claim to release: the claim they name is taken, on the record. */
    @Test
    void releaseByTokenOrHolderTakesTheNamedClaim() throws Exception {
        KeyColumn lock = KeyColumn.named("release/named");
        CliRun badToken = cli("release", "release/named", "--force", "--reason", "r", "--token", "0");
        assertEquals(Cli.USAGE, badToken.code(), badToken::toString);
        CliRun notANumber = cli("release", "release/named", "--force", "--reason", "r", "--token", "12x");
        assertEquals(Cli.USAGE, notANumber.code(), notANumber::toString);
        try (Locker worker = holder("named-worker")) {
            Lease first = worker.acquire(lock, "first");
            long token = first.fencingToken();
            CliRun wrong = cli("--json", "release", "release/named", "--force", "--reason", "r", "--token",
                    Long.toString(token + 1));
            assertEquals(Cli.NO, wrong.code(), wrong::toString);
            JsonNode refused = JSON.readTree(wrong.out());
            assertFalse(refused.get("released").asBoolean());
            assertEquals(token, refused.get("token").asLong(), wrong::toString);
            assertTrue(first.isValid());
            assertTrue(worker.lastForcedRelease(lock).isEmpty(), "nothing recorded");

            CliRun byToken = cli("--json", "release", "release/named", "--force", "--reason", "dead, INC-1",
                    "--token", Long.toString(token));
            assertEquals(Cli.OK, byToken.code(), byToken::toString);
            JsonNode doc = JSON.readTree(byToken.out());
            assertTrue(doc.get("released").asBoolean());
            assertEquals(token, doc.get("expectedToken").asLong());
            assertEquals(worker.rid(), doc.get("record").get("released").get("rid").asText());
            assertEquals(token, doc.get("record").get("releasedToken").asLong(), byToken::toString);
            assertTrue(worker.holder(lock).isEmpty());
            CliRun shown = cli("show", "release/named");
            assertTrue(shown.out().contains("(token " + token + ")"), shown::toString);
            first.close();

            Lease second = worker.acquire(lock, "second");
            CliRun otherRid = cli("release", "release/named", "--force", "--reason", "r", "--holder", "someone-else");
            assertEquals(Cli.NO, otherRid.code(), otherRid::toString);
            assertTrue(otherRid.out().contains("not released"), otherRid::toString);
            assertTrue(second.isValid());
            CliRun byHolder = cli("release", "release/named", "--force", "--reason", "hung, INC-2", "--holder",
                    worker.rid());
            assertEquals(Cli.OK, byHolder.code(), byHolder::toString);
            assertTrue(byHolder.out().contains("with token " + second.fencingToken()), byHolder::toString);
            assertEquals("hung, INC-2", worker.lastForcedRelease(lock).orElseThrow().reason());
            second.close();
        }
    }

    @Test
    void theFormerHolderIsToldItWasForceReleasedWithTheReason() throws Exception {
        KeyColumn lock = KeyColumn.named("release/told");
        try (Locker worker = holder("told-worker");
             Lease lease = worker.acquire(lock, "told")) {
            CompletableFuture<LockLost> lost = new CompletableFuture<>();
            lease.onLost(lost::complete);
            assertEquals(Cli.OK, cli("release", "release/told", "--force", "--reason", "hung for 2h").code());
            try {
                lease.check();
            } catch (RuntimeException expected) {
                // the claim is gone
            }
            LockLost loss = lost.get(30, TimeUnit.SECONDS);
            assertEquals(LossReason.FORCE_RELEASED, loss.reason(), loss::toString);
            assertTrue(loss.toString().contains("hung for 2h"), loss::toString);
        }
    }

    // ---- watch --------------------------------------------------------------------------------------------------

    @Test
    void watchPrintsEachHolderChangeInOrderAndCtrlCEndsItWithZero() throws Exception {
        KeyColumn lock = KeyColumn.named("watch/job");
        Cli[] running = new Cli[1];
        try (Locker first = holder("first-holder"); Locker second = holder("second-holder")) {
            Lease a = first.acquire(lock, "first");
            CompletableFuture<CliRun> watch = CompletableFuture.supplyAsync(() -> CliRun.run(running,
                    Map.of("LOCKER_URI", safe.uri()), "--json", "watch", "watch/job", "--interval", "50ms"));
            awaitOutput(running, watch);
            a.close();
            Thread.sleep(300); // a change shorter than the interval may be missed: give each state a few intervals
            Lease b = second.acquire(lock, "second");
            Thread.sleep(300);
            b.close();
            Thread.sleep(300);
            running[0].interrupt(); // what Ctrl-C does
            CliRun run = watch.get(30, TimeUnit.SECONDS);
            assertEquals(Cli.OK, run.code(), run::toString);
            List<JsonNode> lines = run.out().lines().map(CliRedisTest::parse).toList();
            assertTrue(lines.size() >= 4, run::toString);
            assertTrue(lines.get(0).get("holder").get("rid").asText().startsWith("first-holder"), run::toString);
            assertFalse(lines.get(1).get("held").asBoolean(), run::toString);
            assertTrue(lines.get(2).get("holder").get("rid").asText().startsWith("second-holder"), run::toString);
            assertFalse(lines.get(3).get("held").asBoolean(), run::toString);
        }
    }

    @Test
    void watchUntilFreeReturnsWhenTheHolderReleases() throws Exception {
        KeyColumn lock = KeyColumn.named("watch/until-free");
        try (Locker worker = holder("releasing-worker")) {
            Lease lease = worker.acquire(lock, "until free");
            Cli[] running = new Cli[1];
            CompletableFuture<CliRun> watch = CompletableFuture.supplyAsync(() -> CliRun.run(running,
                    Map.of("LOCKER_URI", safe.uri()), "watch", "watch/until-free", "--until-free", "--interval", "50ms"));
            awaitOutput(running, watch);
            lease.close();
            CliRun run = watch.get(30, TimeUnit.SECONDS);
            assertEquals(Cli.OK, run.code(), run::toString);
            List<String> lines = run.out().lines().toList();
            assertTrue(lines.get(0).contains("held by releasing-worker"), run::toString);
            assertTrue(lines.get(lines.size() - 1).endsWith("watch/until-free  free"), run::toString);
        }
    }

    /** Waits until the watch printed its first line (the CLI writes to a buffer: poll the run's holder). */
    private static void awaitOutput(Cli[] running, CompletableFuture<CliRun> watch) throws InterruptedException {
        // the first line is printed after the first holder() answer; a generous wait, not a timing assertion
        for (int i = 0; i < 100 && !watch.isDone(); i++) {
            Thread.sleep(50);
        }
        assertFalse(watch.isDone(), "watch ended early");
        assertNotNull(running[0]);
    }

    private static JsonNode parse(String line) {
        try {
            return JSON.readTree(line);
        } catch (Exception e) {
            throw new AssertionError("not JSON: " + line, e);
        }
    }

    // ---- doctor -------------------------------------------------------------------------------------------------

    @Test
    void doctorNamesAnEvictingPolicyAndExitsOne() throws Exception {
        CliRun run = CliRun.run(Map.of(), "doctor", "--uri", unsafe.uri());
        System.out.println("doctor, unsafe Redis (--maxmemory-policy allkeys-lru):\n" + run.out());
        assertEquals(Cli.NO, run.code(), run::toString);
        assertTrue(run.out().lines().anyMatch(l -> l.startsWith("FAIL") && l.contains("maxmemory-policy allkeys-lru")),
                run::toString);
        assertTrue(run.out().contains("fix: CONFIG SET maxmemory-policy noeviction"), run::toString);
        JsonNode doc = JSON.readTree(CliRun.run(Map.of(), "--json", "doctor", "--uri", unsafe.uri()).out());
        assertTrue(doc.get("fail").asInt() >= 1);
        boolean named = false;
        for (JsonNode f : doc.get("findings")) {
            named |= f.get("check").asText().equals("maxmemory-policy") && f.get("level").asText().equals("FAIL");
        }
        assertTrue(named, doc::toString);
    }

    @Test
    void doctorPassesASafeRedisAndExitsZero() {
        CliRun run = CliRun.run(Map.of(), "doctor", "--uri", safe.uri());
        System.out.println("doctor, safe Redis:\n" + run.out());
        assertEquals(Cli.OK, run.code(), run::toString);
        assertTrue(run.out().lines().anyMatch(l -> l.startsWith("OK") && l.contains("noeviction")), run::toString);
        assertFalse(run.out().lines().anyMatch(l -> l.startsWith("FAIL")), run::toString);
    }

    @Test
    void doctorFailsAnUnguardedRestartAndMissingAclRights() throws Exception {
        CliRun unguarded = CliRun.run(Map.of(), "doctor", "--uri", safe.uri() + "?restartGuard=0");
        assertEquals(Cli.NO, unguarded.code(), unguarded::toString);
        assertTrue(unguarded.out().lines().anyMatch(l -> l.startsWith("FAIL") && l.contains("persistence")),
                unguarded::toString);

        try (Jedis admin = new Jedis(new HostAndPort("127.0.0.1", safe.port()))) {
            admin.aclSetUser("nohset", "on", ">doctorPw1", "resetkeys", "~locker:*", "resetchannels",
                    "&locker:released", "-@all", "+eval", "+evalsha", "+time", "+hget", "+hgetall", "+hdel", "+hkeys",
                    "+pexpire", "+info", "+publish", "+subscribe", "+scan", "+type");
        }
        CliRun run = CliRun.run(Map.of(), "doctor", "--uri", "redis://nohset:doctorPw1@127.0.0.1:" + safe.port());
        assertEquals(Cli.NO, run.code(), run::toString);
        assertTrue(run.out().lines().anyMatch(l -> l.startsWith("FAIL") && l.contains("acl") && l.contains("hset")),
                run::toString);
        assertFalse((run.out() + run.err()).contains("doctorPw1"), run::toString);
    }

    // ---- exit codes, usage, secrets ------------------------------------------------------------------------------

    @Test
    void usageErrorsExitTwoBeforeAnyIo() throws Exception {
        String dead = "redis://127.0.0.1:" + deadPort(); // any I/O would end in 3, not 2
        Map<String, String> env = Map.of("LOCKER_URI", dead);
        assertEquals(Cli.USAGE, CliRun.run(Map.of(), "list").code(), "no URI");
        assertEquals(Cli.USAGE, CliRun.run(env, "frobnicate").code());
        assertEquals(Cli.USAGE, CliRun.run(env, "list", "--bogus").code());
        assertEquals(Cli.USAGE, CliRun.run(env, "show").code(), "no name");
        CliRun badEscape = CliRun.run(env, "show", "50%");
        assertEquals(Cli.USAGE, badEscape.code());
        assertTrue(badEscape.err().contains("%25"), badEscape::toString);
        assertEquals(Cli.USAGE, CliRun.run(env, "show", "a", "--key", "b").code());
        assertEquals(Cli.USAGE, CliRun.run(env, "watch", "a", "--interval", "500").code(), "a duration needs a unit");
        assertEquals(Cli.USAGE, CliRun.run(env, "list", "--limit", "0").code());
        assertEquals(Cli.USAGE, CliRun.run(env, "release", "a", "--force", "--reason", "x".repeat(1001)).code());
        CliRun scheme = CliRun.run(Map.of(), "list", "--uri", "nosuch://u:pw1234@h");
        assertEquals(Cli.USAGE, scheme.code());
        assertFalse(scheme.err().contains("pw1234"), scheme::toString);
        assertEquals(Cli.USAGE, CliRun.run(Map.of(), "list", "--uri", "redis://h:1?evictionCheck=maybe").code());
    }

    @Test
    void helpTeachesEachCommandWithExamples() {
        CliRun overview = CliRun.run(Map.of(), "--help");
        assertEquals(Cli.OK, overview.code());
        assertTrue(overview.out().contains("Exit codes"), overview::toString);
        for (String c : List.of("list", "show", "release", "watch", "doctor")) {
            CliRun h = CliRun.run(Map.of(), "help", c);
            assertEquals(Cli.OK, h.code());
            assertTrue(h.out().contains("Examples:") && h.out().contains("locker " + c), h::toString);
            assertEquals(h.out(), CliRun.run(Map.of(), c, "--help").out());
        }
        assertEquals(Cli.USAGE, CliRun.run(Map.of()).code(), "no command: the overview, and a usage exit");
    }

    @Test
    void anUnreachableBackendExitsThreeAndARefusalFourWithoutPrintingThePassword() throws Exception {
        CliRun unreachable = CliRun.run(Map.of(), "--uri", "redis://locker:S3cretPw99@127.0.0.1:" + deadPort()
                + "?password=0therSecret", "list");
        assertEquals(Cli.UNREACHABLE, unreachable.code(), unreachable::toString);
        assertFalse((unreachable.out() + unreachable.err()).contains("S3cretPw99"), unreachable::toString);
        assertFalse((unreachable.out() + unreachable.err()).contains("0therSecret"), unreachable::toString);

        try (Jedis admin = new Jedis(new HostAndPort("127.0.0.1", safe.port()))) {
            admin.aclSetUser("cliuser", "on", ">R1ghtPw77", "~*", "&*", "+@all");
        }
        CliRun refused = CliRun.run(Map.of("LOCKER_URI", "redis://cliuser:Wr0ngPw55@127.0.0.1:" + safe.port()),
                "show", "x");
        assertEquals(Cli.REFUSED, refused.code(), refused::toString);
        assertFalse((refused.out() + refused.err()).contains("Wr0ngPw55"), refused::toString);
        CliRun doctor = CliRun.run(Map.of(), "--verbose", "doctor", "--uri",
                "redis://cliuser:R1ghtPw77@127.0.0.1:" + safe.port());
        assertFalse((doctor.out() + doctor.err()).contains("R1ghtPw77"), doctor::toString);
        assertTrue(doctor.out().contains("redis://cliuser:***@127.0.0.1"), doctor::toString);
    }

    private static int deadPort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /**
     * A watch whose backend refuses the credentials exits 4, as every other command does, never shown as unreachable.
     */
    @Test
    void watchExitsFourWhenTheBackendRefusesTheCredentials() {
        CliRun run = CliRun.run(Map.of("LOCKER_URI", "redis://nouser:Wr0ngPw55@127.0.0.1:" + safe.port()),
                "watch", "x", "--count", "1");
        assertEquals(Cli.REFUSED, run.code(), run::toString);
        assertFalse(run.out().contains("unreachable"), run::toString);
    }

    /**
     * A list without --limit stops at a default bound of 1000, says so in text and JSON, and --limit lists past it.
     */
    @Test
    void listWithoutALimitStopsAtADefaultBound() throws Exception {
        List<Lease> leases = new ArrayList<>();
        try (Locker worker = holder("many")) {
            for (int i = 0; i < 1001; i++) {
                leases.add(worker.acquire(KeyColumn.named("many/" + i), "many"));
            }
            CliRun run = cli("--json", "list", "many/");
            assertEquals(Cli.OK, run.code(), run::toString);
            JsonNode doc = JSON.readTree(run.out());
            assertTrue(doc.get("count").asInt() <= 1000, "count " + doc.get("count"));
            assertTrue(doc.get("truncated").asBoolean(), "truncated");
            // the bound is said in text too; --limit lists past it page by page, the JSON one document
            CliRun text = cli("list", "many/");
            assertEquals(Cli.OK, text.code(), text::toString);
            assertTrue(text.out().contains("stopped at the default limit of 1000"), text.err());
            CliRun all = cli("--json", "list", "many/", "--limit", "5000");
            assertEquals(Cli.OK, all.code(), all::toString);
            JsonNode every = JSON.readTree(all.out());
            assertEquals(1001, every.get("count").asInt());
            assertEquals(1001, every.get("locks").size());
            assertFalse(every.get("truncated").asBoolean());
            CliRun allText = cli("list", "many/", "--limit", "5000");
            assertTrue(allText.out().contains("1001 locks held under 'many/'\n"), allText.err());
            assertEquals(1001 + 2, allText.out().lines().count(), "a header, 1001 rows, the summary");
        } finally {
            leases.forEach(Lease::close);
        }
    }
}
