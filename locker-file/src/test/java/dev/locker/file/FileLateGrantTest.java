package dev.locker.file;

import dev.locker.api.Acquisition;
import dev.locker.api.GrantedTooLateException;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LeaseOptions;
import dev.locker.api.Locker;
import dev.locker.api.Lockers;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A lease shorter than file:'s forced write is granted too late, says so, and leaves the lock free. */
class FileLateGrantTest {

    /** Far shorter than any write forced to disk: every grant of such a lease reaches us after it ended. */
    private static final LeaseOptions ONE_MICROSECOND = LeaseOptions.expiry(Duration.ofNanos(1_000)).keepAlive(false);

    @Test
    void aLeaseShorterThanTheForcedWriteIsGrantedTooLateAndLeavesTheLockFree(@TempDir Path dir) {
        String uri = "file:" + dir.resolve("locks");
        KeyColumn lock = KeyColumn.named("report");
        try (Locker a = Lockers.open(uri); Locker b = Lockers.open(uri)) {
            Acquisition late = a.acquireWithin(lock, "tiny", Duration.ZERO, ONE_MICROSECOND);
            assertEquals(Acquisition.Outcome.GRANTED_TOO_LATE, late.outcome(), late::toString);
            assertInstanceOf(GrantedTooLateException.class, late.failure().orElseThrow());
            assertTrue(b.holder(lock).isEmpty(), "the late grant's claim was withdrawn");

            assertThrows(GrantedTooLateException.class, () -> a.acquire(lock, "tiny", ONE_MICROSECOND));
            try (Lease next = b.acquire(lock, "normal")) {
                assertTrue(next.isValid(), "the lock is free for a lease of a usual expiry");
            }
        }
    }
}
