package dev.locker.file;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.PermanentLockingException;
import dev.locker.api.Run;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.zip.CRC32;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Fencing tokens keep rising, and lock and records files are never misread, through kills, cuts and lost files. */
class FileTokenTest {

    private final FileFixture fixture = new FileFixture("tokens");
    private final Path dir = fixture.dir();

    @AfterEach
    void cleanUp() throws Exception {
        fixture.close();
    }

    /**
     * A lock file of another format, written whole (a newer release during a rolling upgrade), is not free. Only a
     * checksum failure means a file not written whole; an unknown format is refused.
     */
    @Test
    void aLockFileOfAnotherFormatIsRefusedNotTakenAsFree() throws Exception {
        KeyColumn lock = KeyColumn.named("other-format");
        try (Locker newer = fixture.open("newer", Duration.ofSeconds(60)); Lease lease = newer.acquire(lock, "format 2");
             Locker older = fixture.open("older", Duration.ofSeconds(60))) {
            Path file = ((FileLocker) newer).fileOf(lock);
            byte[] bytes = Files.readAllBytes(file);
            bytes[3] = (byte) (bytes[3] + 1); // "LKF" + the next format, written whole (a valid checksum)
            CRC32 crc = new CRC32();
            crc.update(bytes, 0, bytes.length - 4);
            ByteBuffer.wrap(bytes).putInt(bytes.length - 4, (int) crc.getValue());
            Files.write(file, bytes);
            Lease granted = null;
            try {
                granted = older.acquire(lock, "format 1");
            } catch (RuntimeException expected) {
                // refused: the file is not one this release understands
            }
            assertTrue(lease.isValid());
            assertNull(granted, "format 1 granted over a live format-2 claim");
        }
    }

    /**
     * The stripe's token high-water mark outlives a lost lock file. So the next token is above the last one even after
     * the wall clock stepped back.
     */
    @Test
    void tokensKeepRisingWhenTheLockFileIsLostAndTheWallClockStepsBack() throws Exception {
        VirtualClock clock = new VirtualClock();
        KeyColumn lock = KeyColumn.named("token-step");
        LockerConfig config = LockerConfig.builder().rid("t").expiry(Duration.ofSeconds(60)).timeSource(clock).build();
        long first;
        try (Locker a = FileLocker.builder(dir).config(config).build(); Lease l = a.acquire(lock, "one")) {
            first = l.fencingToken();
        }
        fixture.loseClaims(lock);
        clock.stepWallClock(Duration.ofMinutes(-5)); // NTP corrects a clock that ran 5 minutes ahead
        try (Locker b = FileLocker.builder(dir).config(config).build(); Lease l = b.acquire(lock, "two")) {
            assertTrue(l.fencingToken() > first, "token " + l.fencingToken() + " after " + first);
        }
    }

    /**
     * SIGKILL at random points of a process that takes and releases one lock in a loop, six times over. Each new
     * process's tokens are above every token printed before, and the lock file is always whole.
     */
    @Test
    void aProcessKilledAtAnyPointLeavesAWholeLockFileAndRisingTokens() throws Exception {
        KeyColumn lock = KeyColumn.named("killed-anywhere");
        long last = 0;
        int seen = 0;
        for (int round = 0; round < 6; round++) {
            ChildJvm churn = fixture.start("churn", 3, "killed-anywhere");
            String first = churn.expect("TOKEN ", 90);
            assertTrue(first.startsWith("TOKEN "), "round " + round + ": the lock was taken over: " + first);
            Thread.sleep(ThreadLocalRandom.current().nextInt(5, 300));
            churn.process.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
            List<String> lines = churn.drain();
            lines.add(0, first);
            for (String line : lines) {
                if (line.startsWith("TOKEN ")) {
                    long t = Long.parseLong(line.substring(6).trim());
                    assertTrue(t > last, "round " + round + ": token " + t + " after " + last);
                    last = t;
                    seen++;
                }
            }
            // whole and readable (a file not written whole would throw here)
            LockFile.fromBytes(Files.readAllBytes(dir.resolve(FileNames.of(lock, false))));
        }
        assertTrue(seen >= 6, "grants seen: " + seen);
        try (Locker after = fixture.open("after", Duration.ofSeconds(30));
             Lease l = after.tryAcquire(lock, "after the kills", Duration.ofSeconds(30)).orElseThrow()) {
            assertTrue(l.fencingToken() > last, "token " + l.fencingToken() + " after " + last);
        }
    }

    /**
     * A lock file cut short or empty is taken as free, yet the next token is above every token issued. A records file
     * cut short refuses runOnce rather than running the job again.
     */
    @Test
    void aLockFileNotWrittenWholeIsFreeButTokensStillRiseAndCutRecordsNeverRerunAJob() throws Exception {
        KeyColumn lock = KeyColumn.named("cut-short");
        KeyColumn job = KeyColumn.named("cut-records");
        try (Locker a = fixture.open("a", Duration.ofSeconds(60)); Locker b = fixture.open("b", Duration.ofSeconds(60))) {
            long first;
            try (Lease l = a.acquire(lock, "one")) {
                first = l.fencingToken();
            }
            Path file = ((FileLocker) a).fileOf(lock);
            byte[] whole = Files.readAllBytes(file);
            Files.write(file, java.util.Arrays.copyOf(whole, whole.length / 2));
            long second;
            try (Lease l = b.acquire(lock, "after a cut file")) {
                second = l.fencingToken();
                assertTrue(second > first, second + " after " + first);
            }
            Files.write(file, new byte[0]);
            try (Lease l = a.acquire(lock, "after an empty file")) {
                assertTrue(l.fencingToken() > second, l.fencingToken() + " after " + second);
            }
            AtomicInteger runs = new AtomicInteger();
            assertEquals(Run.Outcome.RAN, a.runOnce(job, "job", l -> runs.incrementAndGet()).outcome());
            Path records = dir.resolve(".records").resolve(FileNames.of(job, false));
            byte[] r = Files.readAllBytes(records);
            Files.write(records, java.util.Arrays.copyOf(r, r.length - 3));
            try {
                Run again = b.runOnce(job, "job again", l -> runs.incrementAndGet());
                assertNotEquals(Run.Outcome.RAN, again.outcome(), again.toString());
            } catch (PermanentLockingException refused) {
                assertTrue(refused.getMessage().contains("corrupt"), refused.getMessage());
            }
            assertEquals(1, runs.get(), "the job ran once");
            Files.write(records, r);
            fixture.loseClaims(lock); // the lock file and records of another lock: this job's records stay
            Files.delete(((FileLocker) a).fileOf(job));
            assertEquals(Run.Outcome.ALREADY_DONE, b.runOnce(job, "job, lock file lost", l -> runs.incrementAndGet())
                    .outcome(), "records outlive the lock file");
        }
    }
}
