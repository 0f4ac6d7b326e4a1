package dev.locker.shedlock;

import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.parallel.ResourceLock;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * ShedLock keeps lockAtMostUntil and lockAtLeastUntil in storage, so both hold after the holding process died.
 * Redis, MongoDB and HBase run these cases. mem: lives in one JVM, and file: frees a dead process's claims at once.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@ResourceLock("child JVMs") // one backend's children at a time: starting JVMs is what loads this machine most
abstract class LockTimesOutliveTheProcess {

    /** The locker's expiry in the child: far shorter than the ShedLock durations the cases use. */
    private static final Duration SHORT_EXPIRY = Duration.ofSeconds(2);

    private LockerLockProvider observer;

    /** Starts the backend this class runs on, if it needs starting. */
    abstract void startBackend() throws Exception;

    /** Stops what {@link #startBackend()} started. */
    abstract void stopBackend();

    /**
     * The backend's URI for a locker of another process, with {@code options} added to its query.
     *
     * @param options URI options such as {@code expiry=2s}
     */
    abstract String uri(String options);

    /** The locks one child process takes before it is killed: one per case. */
    private final String unlockedEarly = "report-" + UUID.randomUUID();
    private final String held = "report-" + UUID.randomUUID();
    private final String extended = "report-" + UUID.randomUUID();
    private final String heldBriefly = "report-" + UUID.randomUUID();

    /** When the child was killed, by this JVM's monotonic clock. */
    private long killedAtNanos;

    @BeforeAll
    final void open() throws Exception {
        startBackend();
        observer = LockerLockProvider.open(uri("expiry=5m"));
        // one child takes every case's lock, then dies once: a JVM start with a backend client is this class's cost
        String shortExpiry = uri("expiry=2s");
        holdAndDie(List.of(
                shortExpiry + "|" + unlockedEarly + "|300000|300000|unlock",
                shortExpiry + "|" + held + "|300000|0|hold",
                shortExpiry + "|" + extended + "|3000|0|extend:300000",
                uri("expiry=5m") + "|" + heldBriefly + "|3000|0|hold"));
        killedAtNanos = System.nanoTime();
    }

    @AfterAll
    final void close() {
        if (observer != null) {
            observer.close();
        }
        stopBackend();
    }

    @Test
    void aLockUnlockedEarlyStaysHeldUntilLockAtLeastForAfterItsProcessDied() throws Exception {
        awaitSinceTheKill(SHORT_EXPIRY.multipliedBy(2));
        assertEquals(Optional.empty(), tryLock(unlockedEarly), "lockAtLeastFor (5 min) has not passed");
    }

    @Test
    void aLockStaysHeldUntilLockAtMostForAfterItsProcessDied() throws Exception {
        awaitSinceTheKill(SHORT_EXPIRY.multipliedBy(2));
        assertEquals(Optional.empty(), tryLock(held), "lockAtMostFor (5 min) has not passed");
    }

    @Test
    void anExtendedLockStaysHeldUntilItsNewLockAtMostForAfterItsProcessDied() throws Exception {
        awaitSinceTheKill(SHORT_EXPIRY.multipliedBy(2)); // past the first lockAtMostFor (3 s) too
        assertEquals(Optional.empty(), tryLock(extended), "the extended lockAtMostFor (5 min) has not passed");
    }

    @Test
    void aLockIsFreeOnceLockAtMostForPassedAfterItsProcessDied() throws Exception {
        awaitSinceTheKill(Duration.ofSeconds(5)); // its lockAtMostFor (3 s) began before the kill
        Optional<SimpleLock> lock = tryLock(heldBriefly);
        assertTrue(lock.isPresent(), "lockAtMostFor (3 s) has passed, although the locker's expiry (5 min) has not");
        lock.get().unlock();
    }

    private Optional<SimpleLock> tryLock(String name) {
        return observer.lock(new LockConfiguration(ClockProvider.now(), name, Duration.ofMinutes(5), Duration.ZERO));
    }

    /** Sleeps until {@code d} has passed since the child was killed. */
    private void awaitSinceTheKill(Duration d) throws InterruptedException {
        long left = killedAtNanos + d.toNanos() - System.nanoTime();
        if (left > 0) {
            TimeUnit.NANOSECONDS.sleep(left);
        }
    }

    /** Starts a {@link HoldingProcess}, waits until it holds its locks, and kills it (SIGKILL: no clean-up runs). */
    private static void holdAndDie(List<String> locks) throws Exception {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("-XX:TieredStopAtLevel=1");
        // the module openings this JVM got (the HBase client needs them on JDK 17), and nothing else of its settings
        ManagementFactory.getRuntimeMXBean().getInputArguments().stream()
                .filter(a -> a.startsWith("--add-") || a.startsWith("-Djava.net.preferIPv4Stack")
                        || a.startsWith("-Dorg.apache.hbase.thirdparty"))
                .forEach(command::add);
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), HoldingProcess.class.getName()));
        command.addAll(locks);
        Process child = new ProcessBuilder(command)
                .redirectError(ProcessBuilder.Redirect.appendTo(Path.of("target", "holding-processes.log").toFile()))
                .start();
        try (BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(),
                StandardCharsets.UTF_8))) {
            String line = out.readLine();
            assertEquals("HELD", line, "the child should hold its locks; see target/holding-processes.log");
        } finally {
            child.destroyForcibly();
            child.waitFor(60, TimeUnit.SECONDS);
        }
    }
}
