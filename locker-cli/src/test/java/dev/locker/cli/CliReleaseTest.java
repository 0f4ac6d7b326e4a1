package dev.locker.cli;

import com.fasterxml.jackson.databind.JsonNode;
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
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static dev.locker.cli.CliChecks.JSON;
import static dev.locker.cli.CliChecks.deadPort;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code locker release}: it removes exactly the named claim, of the holder named, records why, and tells the holder. */
class CliReleaseTest {

    private static RedisServerProcess master;

    @BeforeAll
    static void start() {
        master = RedisServerProcess.start();
    }

    @AfterAll
    static void stop() {
        master.close();
    }

    private static Locker holder(String rid) {
        return Lockers.open(master.uri() + "?restartGuard=0", LockerConfig.builder().rid(rid).build());
    }

    private static CliRun cli(String... args) {
        return CliRun.run(Map.of("LOCKER_URI", master.uri()), args);
    }

    /**
     * The operator looks (worker-a holds it), then the lock changes hands to worker-b. A release by the holder or the
     * token the operator saw leaves worker-b's live claim alone.
     */
    @Test
    void releaseOnlyTakesTheLockFromTheHolderTheOperatorNamed() throws Exception {
        KeyColumn lock = KeyColumn.named("ops/changed-hands");
        try (Locker a = holder("worker-a"); Locker b = holder("worker-b")) {
            Lease la = a.acquire(lock, "nightly");
            JsonNode shown = JSON.readTree(cli("--json", "show", "ops/changed-hands").out());
            String seen = shown.get("holder").get("rid").asText();
            long seenToken = shown.get("token").asLong();
            la.close(); // worker-a's claim ends (released, or expired) ...
            try (Lease lb = b.acquire(lock, "nightly")) { // ... and worker-b, alive, holds the lock now
                CliRun byHolder = cli("release", "ops/changed-hands", "--force", "--reason", "worker-a is dead",
                        "--holder", seen);
                assertEquals(Cli.NO, byHolder.code(), byHolder::toString);
                CliRun byToken = cli("release", "ops/changed-hands", "--force", "--reason", "worker-a is dead",
                        "--token", Long.toString(seenToken));
                assertEquals(Cli.NO, byToken.code(), byToken::toString);
                assertTrue(lb.isValid() && b.holder(lock).isPresent(), "worker-b keeps the lock");
            }
        }
    }

    @Test
    void releaseRemovesExactlyTheNamedLockNeverOneSharingItsPrefixOrAnotherColumn() throws Exception {
        KeyColumn named = KeyColumn.named("exact/a");
        KeyColumn longer = KeyColumn.named("exact/ab");
        KeyColumn column = KeyColumn.of("exact/a", "c");
        KeyColumn binary = KeyColumn.of(new byte[] {'r', 0, (byte) 0xff, '%'}, new byte[0]);
        KeyColumn binaryLookalike = KeyColumn.named("r%00%FF%25");
        try (Locker w = holder("exact"); Lease l1 = w.acquire(named, "x"); Lease l2 = w.acquire(longer, "x");
             Lease l3 = w.acquire(column, "x"); Lease l4 = w.acquire(binary, "x");
             Lease l5 = w.acquire(binaryLookalike, "x")) {
            assertEquals(Cli.OK, cli("release", "exact/a", "--force", "--reason", "exact").code());
            assertTrue(w.holder(named).isEmpty());
            assertTrue(w.holder(longer).isPresent() && w.holder(column).isPresent(), "only the named lock");
            assertEquals(Cli.OK, cli("release", "r%00%FF%25", "--force", "--reason", "binary").code());
            assertTrue(w.holder(binary).isEmpty(), "%XX names the bytes");
            assertTrue(w.holder(binaryLookalike).isPresent(), "not the lock whose text is 'r%00%FF%25'");
            assertEquals(Cli.OK, cli("release", "r%2500%25FF%2525", "--force", "--reason", "literal").code());
            assertTrue(w.holder(binaryLookalike).isEmpty());
            assertEquals(Cli.OK, cli("release", "--key", "exact/a", "--column", "c", "--force", "--reason",
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
    void releaseExitsOneWhenNothingWasHeldAndTheRecordSaysSo() throws Exception {
        CliRun run = cli("--json", "release", "ops/never-held", "--force", "--reason", "checking");
        assertEquals(Cli.NO, run.code(), run::toString);
        JsonNode doc = JSON.readTree(run.out());
        assertFalse(doc.get("released").asBoolean());
        assertTrue(doc.get("record").get("released").isNull(), "the record does not invent a former holder");
        CliRun unreachable = CliRun.run(Map.of("LOCKER_URI", "redis://127.0.0.1:" + deadPort()), "release", "x",
                "--force", "--reason", "r");
        assertEquals(Cli.UNREACHABLE, unreachable.code(), unreachable::toString);
    }
}
