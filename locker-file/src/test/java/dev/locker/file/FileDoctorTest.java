package dev.locker.file;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.api.Lockers;
import dev.locker.spi.DeploymentCheck.Finding;
import dev.locker.spi.DeploymentCheck.Level;
import dev.locker.spi.DeploymentCheck;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

class FileDoctorTest {

    @Test
    void aLocalDirectoryPassesAndTheDoctorWritesNothing(@TempDir Path tmp) throws Exception {
        DeploymentCheck doctor = DeploymentCheck.forScheme("file").orElseThrow();
        assertInstanceOf(FileDoctor.class, doctor, "found by scheme through the service file");
        Path dir = tmp.resolve("not-yet");
        List<String> progress = new ArrayList<>();
        Map<String, Level> levels = levels(doctor.check("file:" + dir + "?expiry=30s", progress::add));
        assertEquals(Level.OK, levels.get("directory"), levels.toString());
        assertEquals(Level.OK, levels.get("file-system"), levels.toString());
        assertTrue(levels.containsKey("clock"), levels.toString());
        assertFalse(Files.exists(dir), "the doctor only reads: it created nothing");
        assertFalse(progress.isEmpty(), "it says what it checks");

        try (Locker locker = Lockers.open("file:" + dir + "?expiry=30s");
             Lease ignored = locker.acquire(KeyColumn.named("job"), "held while the doctor looks")) {
            List<Finding> findings = doctor.check("file:" + dir, s -> { });
            Finding d = findings.stream().filter(f -> f.check().equals("directory")).findFirst().orElseThrow();
            assertEquals(Level.OK, d.level());
            assertTrue(d.why().contains("1 lock file"), d.why());
        }
    }

    @Test
    void aFileInPlaceOfTheDirectoryFails(@TempDir Path tmp) throws Exception {
        Path file = Files.writeString(tmp.resolve("plain"), "x");
        Map<String, Level> levels = levels(new FileDoctor().check("file:" + file, s -> { }));
        assertEquals(Level.FAIL, levels.get("directory"), levels.toString());
    }

    /** A path through a file is neither there nor surely absent: it was read as "the first locker creates it". */
    @Test
    void aDirectoryUnderAFileFailsAndIsNotReportedCreatable(@TempDir Path tmp) throws Exception {
        Path file = Files.writeString(tmp.resolve("plain"), "x");
        Map<String, Level> levels = levels(new FileDoctor().check("file:" + file.resolve("locks"), s -> { }));
        assertEquals(Level.FAIL, levels.get("directory"), levels.toString());
    }

    @Test
    void theClockCheckNamesTheOffsetOfATimeNamespace() throws Exception {
        Process probe = new ProcessBuilder("unshare", "-T", "--monotonic", "1", "--fork", "true")
                .redirectErrorStream(true).start();
        org.junit.jupiter.api.Assumptions.assumeTrue(probe.waitFor(10, java.util.concurrent.TimeUnit.SECONDS)
                && probe.exitValue() == 0, "unshare -T works here (root, Linux >= 5.6)");
        String jvm = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process child = new ProcessBuilder("unshare", "-T", "--monotonic", "100", "--fork", jvm, "-cp",
                System.getProperty("java.class.path"), DoctorClockChild.class.getName()).redirectErrorStream(true).start();
        String out = new String(child.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        assertTrue(child.waitFor(60, java.util.concurrent.TimeUnit.SECONDS), out);
        assertTrue(out.startsWith("OK ") && out.contains("time namespace") && out.contains("PT1M40S"), out);
    }

    private static Map<String, Level> levels(List<Finding> findings) {
        return findings.stream().collect(Collectors.toMap(Finding::check, Finding::level));
    }

    /**
     * On a tmpfs the runOnce records and token marks, always forced to disk, vanish at every reboot. The doctor reports
     * such a lock directory rather than passing it.
     */
    @Test
    void theDoctorWarnsOfATmpfsDirectoryWhoseRecordsDieAtReboot() throws Exception {
        Path shm = Path.of("/dev/shm");
        assumeTrue(Files.isDirectory(shm) && Files.getFileStore(shm).type().equals("tmpfs"), "/dev/shm is a tmpfs");
        Path locks = Files.createTempDirectory(shm, "doctor-");
        try {
            DeploymentCheck doctor = DeploymentCheck.forScheme("file").orElseThrow();
            List<DeploymentCheck.Finding> findings = doctor.check("file:" + locks, s -> { });
            DeploymentCheck.Finding fs = findings.stream().filter(f -> f.check().equals("file-system")).findFirst()
                    .orElseThrow();
            assertNotEquals(DeploymentCheck.Level.OK, fs.level(), "a tmpfs lock directory, whose runOnce records and "
                    + "token marks are gone at the next boot, is reported: " + fs.why());
        } finally {
            Files.deleteIfExists(locks);
        }
    }
}
