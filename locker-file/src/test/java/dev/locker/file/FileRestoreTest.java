package dev.locker.file;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.PermanentLockingException;
import dev.locker.api.TimeSource;
import dev.locker.engine.LockerEngine;
import org.junit.jupiter.api.parallel.Isolated;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A process restored from a checkpoint (CRaC, CRIU) may run on another boot, in another time namespace, as another
 * process: what file: read of them once is then stale, and a locker refuses to grant or renew on it.
 */
// alone: one case uses up the JVM's open files, which would fail any class running beside it
@Isolated
class FileRestoreTest {

    private static final String OTHER_BOOT = "00000000-0000-0000-0000-000000000000";

    private final FileFixture fixture = new FileFixture("file-restore");

    @AfterEach
    void cleanUp() throws Exception {
        fixture.close();
    }

    private Locker open(String rid) {
        return FileLocker.builder(fixture.dir()).config(LockerConfig.builder().rid(rid).expiry(Duration.ofSeconds(60))
                .build()).build();
    }

    /** Gives {@code locker} the clock it would have kept from before a restore onto another boot. */
    private static void restoredOntoAnotherBoot(Locker locker) throws Exception {
        Field driver = LockerEngine.class.getDeclaredField("driver");
        driver.setAccessible(true);
        Field clock = FileDriver.class.getDeclaredField("clock");
        clock.setAccessible(true);
        clock.set(driver.get(locker), new HostClock(TimeSource.system(), false, OTHER_BOOT));
    }

    @Test
    void aLockerWhoseBootIdIsStaleRefusesToGrant() throws Exception {
        Assumptions.assumeTrue(new HostClock(TimeSource.system(), true).domain().startsWith("boot:"), "Linux");
        try (Locker a = open("restored")) {
            restoredOntoAnotherBoot(a);
            PermanentLockingException refused = assertThrows(PermanentLockingException.class,
                    () -> a.acquire(KeyColumn.named("after-a-restore"), "its claim would name a boot that is over"));
            assertTrue(refused.getMessage().contains("restored"), refused.getMessage());
        }
    }

    @Test
    void aLockerWhoseBootIdIsStaleRefusesToRenew() throws Exception {
        Assumptions.assumeTrue(new HostClock(TimeSource.system(), true).domain().startsWith("boot:"), "Linux");
        try (Locker a = open("restored")) {
            Lease lease = a.acquire(KeyColumn.named("held-across-a-restore"), "held").keepAlive(false);
            restoredOntoAnotherBoot(a);
            assertThrows(RuntimeException.class, lease::renew);
            assertTrue(!lease.isValid(), "a lease that cannot be renewed on a stale clock is not valid");
            lease.close();
        }
    }

    @Test
    void aStaleCachedClockOrProcessIdentityIsDetected() {
        Assumptions.assumeTrue(new HostClock(TimeSource.system(), true).domain().startsWith("boot:"), "Linux");
        new HostClock(TimeSource.system(), false).requireCurrent(); // read just now: current
        IllegalStateException boot = assertThrows(IllegalStateException.class,
                () -> new HostClock(TimeSource.system(), false, OTHER_BOOT).requireCurrent());
        assertTrue(boot.getMessage().contains("restored"), boot.getMessage());
        Sessions.requireCurrent(Sessions.PROCESS);
        IllegalStateException process = assertThrows(IllegalStateException.class,
                () -> Sessions.requireCurrent("linux:" + OTHER_BOOT + ":pid:[4026531836]:1:1"));
        assertTrue(process.getMessage().contains("restored"), process.getMessage());
    }

    /** An identity read at load that fell back to pid and start instant does not fail every later check. */
    @Test
    void anIdentityNotReadFromProcAtLoadIsCheckedAgainstTheFirstReadSince() {
        Assumptions.assumeTrue(Files.isReadable(Path.of("/proc/self/stat")), "Linux");
        String fallback = "pid:" + ProcessHandle.current().pid() + "@?";
        Sessions.requireCurrent(fallback);
        Sessions.requireCurrent(fallback);
    }

    /**
     * No file descriptor left for a moment (a descriptor leak elsewhere in the process): the renewal fails, and the
     * lease is neither lost nor blamed on a restore, since the process was never checkpointed. The soft limit of this
     * JVM is lowered with prlimit for the moment, then put back.
     */
    @Test
    void aRenewalThatRunsOutOfFileDescriptorsLosesNoLeaseAndBlamesNoRestore() throws Exception {
        Assumptions.assumeTrue(new HostClock(TimeSource.system(), true).domain().startsWith("boot:"), "Linux");
        long pid = ProcessHandle.current().pid();
        String soft = softFileLimit();
        Path hogged = Files.createTempFile(Path.of("target"), "descriptors-", ".hog");
        try (Locker a = open("starved")) {
            Lease lease = a.acquire(KeyColumn.named("held-while-descriptors-run-out"), "held").keepAlive(false);
            long open;
            try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
                open = fds.count();
            }
            Assumptions.assumeTrue(run("prlimit", "--pid", Long.toString(pid), "--nofile=" + (open + 64) + ":"),
                    "prlimit can lower this JVM's descriptor limit");
            List<RandomAccessFile> hogs = new ArrayList<>();
            String failure = null;
            try {
                // another thread of this JVM may close a descriptor meanwhile: take what it freed, and renew again
                for (int attempt = 0; attempt < 5 && failure == null; attempt++) {
                    try {
                        while (hogs.size() < 100_000) {
                            hogs.add(new RandomAccessFile(hogged.toFile(), "r"));
                        }
                    } catch (IOException noneLeft) {
                        // every descriptor is taken
                    }
                    try {
                        lease.renew();
                    } catch (RuntimeException e) {
                        failure = String.valueOf(e);
                    }
                }
                assertNotNull(failure, "no descriptor to renew, yet the renewal succeeded five times");
            } finally {
                for (RandomAccessFile h : hogs) {
                    h.close();
                }
                run("prlimit", "--pid", Long.toString(pid), "--nofile=" + soft + ":");
            }
            assertFalse(failure.contains("restored"), "a failed read is not a restore: " + failure);
            assertTrue(lease.isValid(), "the claim is still ours and valid; only one renewal failed: " + failure);
            lease.renew();
            lease.close();
        } finally {
            Files.deleteIfExists(hogged);
        }
    }

    /** This JVM's soft limit of open files, from /proc/self/limits. */
    private static String softFileLimit() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/limits"))) {
            if (line.startsWith("Max open files")) {
                return line.substring("Max open files".length()).trim().split("\\s+")[0];
            }
        }
        throw new IOException("no open-files limit in /proc/self/limits");
    }

    private static boolean run(String... command) throws Exception {
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            return p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0;
        } catch (IOException notInstalled) {
            return false;
        }
    }
}
