package dev.locker.file;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.Run;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A caller's interrupt flag breaks no file: I/O, and the flag is still set when the call returns. */
class FileInterruptTest {

    private final FileFixture fixture = new FileFixture("file-interrupt");

    @AfterEach
    void cleanUp() throws Exception {
        Thread.interrupted();
        fixture.close();
    }

    /** Claims of this process are judged by expiry only: a minute here, so only a real delete frees a lock. */
    private Locker open(String rid) {
        return FileLocker.builder(fixture.dir()).config(LockerConfig.builder().rid(rid).expiry(Duration.ofSeconds(60))
                .build()).build();
    }

    @Test
    void aLeaseClosedOnAnInterruptedThreadReleasesItsClaim() {
        KeyColumn lock = KeyColumn.named("closed-interrupted");
        try (Locker a = open("a"); Locker b = open("b")) {
            Lease lease = a.acquire(lock, "a task that is cancelled");
            Thread.currentThread().interrupt();
            lease.close();
            assertTrue(Thread.interrupted(), "the caller's interrupt flag is kept");
            Optional<Lease> next = b.tryAcquire(lock, "the next holder", Duration.ZERO);
            assertTrue(next.isPresent(), "the claim closed on an interrupted thread was deleted, not left to expire");
            next.get().close();
        }
    }

    @Test
    void aLockerClosedOnAnInterruptedThreadReleasesItsClaims() {
        KeyColumn lock = KeyColumn.named("locker-closed-interrupted");
        try (Locker b = open("b")) {
            Locker a = open("a");
            a.acquire(lock, "held when the executor shuts down");
            Thread.currentThread().interrupt();
            a.close();
            assertTrue(Thread.interrupted(), "the caller's interrupt flag is kept");
            Optional<Lease> next = b.tryAcquire(lock, "the next holder", Duration.ZERO);
            assertTrue(next.isPresent(), "the closed locker's claim was deleted, not left to expire");
            next.get().close();
        }
    }

    @Test
    void aRunOnceWhoseTaskRestoresAnInterruptIsRecordedAsRan() {
        KeyColumn job = KeyColumn.named("job-restoring-an-interrupt");
        try (Locker a = open("a")) {
            Run run = a.runOnce(job, "migrate", lease -> Thread.currentThread().interrupt());
            assertTrue(Thread.interrupted(), "the interrupt the task restored is kept for the caller");
            assertEquals(Run.Outcome.RAN, run.outcome(), "the run is recorded: " + run);
            Run again = a.runOnce(job, "migrate", lease -> {
                throw new AssertionError("ran a second time");
            });
            assertEquals(Run.Outcome.ALREADY_DONE, again.outcome(), again.toString());
        }
    }

    @Test
    void anAcquireOnAnInterruptedThreadTakesTheLockAndKeepsTheFlag() {
        KeyColumn lock = KeyColumn.named("acquired-interrupted");
        try (Locker a = open("a"); Locker b = open("b")) {
            Thread.currentThread().interrupt();
            Lease lease = a.acquire(lock, "on a thread whose interrupt is pending");
            assertTrue(Thread.interrupted(), "the caller's interrupt flag is kept");
            assertTrue(lease.isValid() && lease.fencingToken() > 0, lease.toString());
            assertTrue(b.tryAcquire(lock, "a contender", Duration.ZERO).isEmpty(), "the lock is held");
            lease.close();
        }
    }

    @Test
    void aLeaseClosedOnAnInterruptedThreadReleasesItsClaimWhileAnotherProcessIsInsideAChangeOfTheLock()
            throws Exception {
        KeyColumn lock = KeyColumn.named("closed-interrupted-while-busy");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        try (Locker a = open("a"); Locker b = open("b")) {
            Lease lease = a.acquire(lock, "a task that is cancelled while a contender looks at the lock");
            // another process inside a change of this lock (a contender's try, say) keeps its range for a moment
            Process other = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
                    RangeHolder.class.getName(), fixture.dir().toString(), FileNames.of(lock, false)).start();
            try {
                String said = new BufferedReader(new InputStreamReader(other.getInputStream(), StandardCharsets.UTF_8))
                        .readLine();
                assertEquals("LOCKED", said, "the other process holds the lock's range");
                Thread letGo = new Thread(() -> {
                    try {
                        Thread.sleep(200); // well inside the 2 s a change waits for another process's range
                        OutputStream in = other.getOutputStream();
                        in.write('\n');
                        in.flush();
                    } catch (Exception e) {
                        other.destroy();
                    }
                });
                letGo.start();
                Thread.currentThread().interrupt();
                lease.close();
                assertTrue(Thread.interrupted(), "the caller's interrupt flag is kept");
                letGo.join();
                assertTrue(other.waitFor(30, TimeUnit.SECONDS), "the other process let go and ended");
            } finally {
                other.destroyForcibly();
            }
            Optional<Lease> next = b.tryAcquire(lock, "the next holder", Duration.ZERO);
            assertTrue(next.isPresent(), "the claim closed on an interrupted thread was deleted, not left to its "
                    + "60 s expiry: " + b.holding(lock));
            next.get().close();
        }
    }

    @Test
    void aRunOnceWhoseTaskRestoresAnInterruptIsRecordedWhileAnotherProcessIsInsideAChangeOfTheJob() throws Exception {
        KeyColumn job = KeyColumn.named("job-restoring-an-interrupt-while-busy");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process[] other = new Process[1];
        Thread[] letGo = new Thread[1];
        try (Locker a = open("a")) {
            Run run = a.runOnce(job, "migrate", lease -> {
                try {
                    // another process enters a change of the job's lock (a contender's try) as the task ends
                    other[0] = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
                            RangeHolder.class.getName(), fixture.dir().toString(), FileNames.of(job, false)).start();
                    String said = new BufferedReader(new InputStreamReader(other[0].getInputStream(),
                            StandardCharsets.UTF_8)).readLine();
                    assertEquals("LOCKED", said, "the other process holds the job's range");
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
                letGo[0] = new Thread(() -> {
                    try {
                        Thread.sleep(200); // well inside the 2 s a change waits for another process's range
                        other[0].getOutputStream().write('\n');
                        other[0].getOutputStream().flush();
                    } catch (Exception e) {
                        other[0].destroy();
                    }
                });
                letGo[0].start();
                Thread.currentThread().interrupt();
            });
            assertTrue(Thread.interrupted(), "the interrupt the task restored is kept for the caller");
            letGo[0].join();
            assertTrue(other[0].waitFor(30, TimeUnit.SECONDS), "the other process let go and ended");
            assertEquals(Run.Outcome.RAN, run.outcome(), "the run is recorded: " + run);
            Run again = a.runOnce(job, "migrate", lease -> {
                throw new AssertionError("ran a second time");
            });
            assertEquals(Run.Outcome.ALREADY_DONE, again.outcome(), again.toString());
        } finally {
            if (other[0] != null) {
                other[0].destroyForcibly();
            }
        }
    }
}
