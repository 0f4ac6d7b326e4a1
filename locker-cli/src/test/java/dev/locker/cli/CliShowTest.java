package dev.locker.cli;

import dev.locker.api.KeyColumn;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.Lockers;
import dev.locker.api.LockingException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code locker show} of a free lock says which records exist for the name, and what to try when none does. */
class CliShowTest {

    @TempDir
    Path dir;

    private String uri() {
        return "file:" + dir.resolve("locks");
    }

    private CliRun show(String name) {
        return CliRun.run(Map.of("LOCKER_URI", uri()), "show", name);
    }

    private void runJob(String name) {
        try (Locker worker = Lockers.open(uri(), LockerConfig.builder().rid("migrator").build())) {
            worker.runOnce(KeyColumn.named(name), "schema migration", lease -> { });
        }
    }

    @Test
    void aNameNothingIsKnownOfSaysSoAndSuggestsListingByPrefix() {
        runJob("schema-migration-42");
        CliRun run = show("migration-42");
        assertEquals(Cli.NO, run.code(), run::toString);
        assertTrue(run.out().contains("nobody: the lock is free"), run::toString);
        assertTrue(run.out().contains("nothing is known of this name"), run::toString);
        assertTrue(run.out().contains("locker list PREFIX"), run::toString);
    }

    @Test
    void aFreeJobThatRanShowsItsRunAndSaysItWasNeverForced() {
        runJob("schema-migration-42");
        CliRun run = show("schema-migration-42");
        assertEquals(Cli.NO, run.code(), run::toString);
        assertTrue(run.out().contains("last run  migrator"), run::toString);
        assertTrue(run.out().contains("forced    never force-released"), run::toString);
        assertFalse(run.out().contains("nothing is known"), run::toString);
    }

    @Test
    void aFreeLockForcedOnceSaysItHasNoRunRecord() {
        try (Locker operator = Lockers.open(uri(), LockerConfig.builder().rid("operator").build())) {
            operator.forceRelease(KeyColumn.named("stuck-job"), "INC-12 cleanup");
        }
        CliRun run = show("stuck-job");
        assertEquals(Cli.NO, run.code(), run::toString);
        assertTrue(run.out().contains("INC-12 cleanup"), run::toString);
        assertTrue(run.out().contains("last run  none recorded"), run::toString);
        assertFalse(run.out().contains("nothing is known"), run::toString);
    }

    @Test
    void showAndAContendedWriterSpellTheLockAsTheServerDoes() {
        KeyColumn lock = KeyColumn.of("vertex:42", "name");
        try (Locker holder = Lockers.open(uri(), LockerConfig.builder().rid("holder").build());
             Locker writer = Lockers.open(uri(), LockerConfig.builder().rid("writer").build())) {
            Object held = new Object();
            holder.writeLock(lock, held);
            holder.checkLocks(held);
            Object late = new Object();
            LockingException e = assertThrows(LockingException.class, () -> {
                writer.writeLock(lock, late);
                writer.checkLocks(late);
            });
            assertTrue(e.getMessage().contains("[lock vertex:42#name"), e.getMessage());
            CliRun run = CliRun.run(Map.of("LOCKER_URI", uri()), "show", "vertex:42", "--column", "name");
            assertEquals(Cli.OK, run.code(), run::toString);
            assertTrue(run.out().contains("vertex:42#name"), run::toString);
            holder.deleteLocks(held);
        }
    }
}
