package dev.locker.cli;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.api.Lockers;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A listing refuses a cursor it did not issue with a message that says what the user can do, in no internal tag. */
class ListingCursorTest {

    @Test
    void aFileListingsCursorGivenToAMemListingSaysWhereItMayComeFromAndHowToStartAgain(@TempDir Path dir) {
        String fileCursor;
        try (Locker file = Lockers.open("file:" + dir.resolve("locks"));
             Lease a = file.acquire(KeyColumn.named("page-a"), "a");
             Lease b = file.acquire(KeyColumn.named("page-b"), "b")) {
            fileCursor = file.list("page-", 1, null).nextCursor().orElseThrow();
        }
        try (Locker mem = Lockers.open("mem:cursors")) {
            String m = assertThrows(IllegalArgumentException.class, () -> mem.list("page-", 10, fileCursor)).getMessage();
            assertFalse(m.contains("ck1"), "no internal tag: " + m);
            assertTrue(m.contains("another backend") && m.contains("another prefix"), m);
            assertTrue(m.contains("start again without a cursor"), m);
        }
    }

    @Test
    void aDamagedCursorIsRefusedWithTheSameAdvice() {
        try (Locker mem = Lockers.open("mem:damaged")) {
            String m = assertThrows(IllegalArgumentException.class, () -> mem.list("x", 10, "not-a-cursor")).getMessage();
            assertFalse(m.contains("ck1"), "no internal tag: " + m);
            assertTrue(m.contains("'not-a-cursor'") && m.contains("start again without a cursor"), m);
        }
    }
}
