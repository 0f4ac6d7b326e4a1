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

    @BeforeAll
    final void open() throws Exception {
        startBackend();
        observer = LockerLockProvider.open(uri("expiry=5m"));
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
        String name = "report-" + UUID.randomUUID();
        holdAndDie(uri("expiry=2s"), name, Duration.ofMinutes(5), Duration.ofMinutes(5), "unlock");
        sleep(SHORT_EXPIRY.multipliedBy(2));
        assertEquals(Optional.empty(), tryLock(name), "lockAtLeastFor (5 min) has not passed");
    }

    @Test
    void aLockStaysHeldUntilLockAtMostForAfterItsProcessDied() throws Exception {
        String name = "report-" + UUID.randomUUID();
        holdAndDie(uri("expiry=2s"), name, Duration.ofMinutes(5), Duration.ZERO, "hold");
        sleep(SHORT_EXPIRY.multipliedBy(2));
        assertEquals(Optional.empty(), tryLock(name), "lockAtMostFor (5 min) has not passed");
    }

    @Test
    void anExtendedLockStaysHeldUntilItsNewLockAtMostForAfterItsProcessDied() throws Exception {
        String name = "report-" + UUID.randomUUID();
        holdAndDie(uri("expiry=2s"), name, Duration.ofSeconds(3), Duration.ZERO, "extend:300000");
        sleep(SHORT_EXPIRY.multipliedBy(2)); // past the first lockAtMostFor (3 s) too
        assertEquals(Optional.empty(), tryLock(name), "the extended lockAtMostFor (5 min) has not passed");
    }

    @Test
    void aLockIsFreeOnceLockAtMostForPassedAfterItsProcessDied() throws Exception {
        String name = "report-" + UUID.randomUUID();
        holdAndDie(uri("expiry=5m"), name, Duration.ofSeconds(3), Duration.ZERO, "hold");
        sleep(Duration.ofSeconds(5));
        Optional<SimpleLock> lock = tryLock(name);
        assertTrue(lock.isPresent(), "lockAtMostFor (3 s) has passed, although the locker's expiry (5 min) has not");
        lock.get().unlock();
    }

    private Optional<SimpleLock> tryLock(String name) {
        return observer.lock(new LockConfiguration(ClockProvider.now(), name, Duration.ofMinutes(5), Duration.ZERO));
    }

    /** Starts a {@link HoldingProcess}, waits until it holds the lock, and kills it (SIGKILL: no clean-up runs). */
    private static void holdAndDie(String uri, String name, Duration atMost, Duration atLeast, String action)
            throws Exception {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("-XX:TieredStopAtLevel=1");
        // the module openings this JVM got (the HBase client needs them on JDK 17), and nothing else of its settings
        ManagementFactory.getRuntimeMXBean().getInputArguments().stream()
                .filter(a -> a.startsWith("--add-") || a.startsWith("-Djava.net.preferIPv4Stack")
                        || a.startsWith("-Dorg.apache.hbase.thirdparty"))
                .forEach(command::add);
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), HoldingProcess.class.getName(),
                uri, name, Long.toString(atMost.toMillis()), Long.toString(atLeast.toMillis()), action));
        Process child = new ProcessBuilder(command)
                .redirectError(ProcessBuilder.Redirect.appendTo(Path.of("target", "holding-processes.log").toFile()))
                .start();
        try (BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(),
                StandardCharsets.UTF_8))) {
            String line = out.readLine();
            assertEquals("HELD " + name, line, "the child should hold the lock; see target/holding-processes.log");
        } finally {
            child.destroyForcibly();
            child.waitFor(60, TimeUnit.SECONDS);
        }
    }

    private static void sleep(Duration d) throws InterruptedException {
        Thread.sleep(d.toMillis());
    }
}
