package dev.locker.file;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.TemporaryLockingException;
import dev.locker.api.TimeSource;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Adversarial review of file: (branch review-file). Each test is a scenario that breaks a promise of the README's
 * safety argument or of the Locker contract; each fails on the code under review and is disabled with the number of
 * its finding, so that the branch builds green. Real child JVMs ({@link ReviewChild}) where processes matter.
 */
class FileReviewTest {

    private final FileFixture fixture = new FileFixture("review");
    private final Path dir = fixture.dir();
    private final List<Child> children = new ArrayList<>();

    @AfterEach
    void killChildren() throws Exception {
        for (Child c : children) {
            c.process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
        fixture.close();
    }

    private Locker open(String rid, Duration expiry) {
        return FileLocker.builder(dir).config(LockerConfig.builder().rid(rid).expiry(expiry).build()).build();
    }

    // ---- finding 1 --------------------------------------------------------------------------------------------------

    /**
     * Two copies of locker-file in one JVM (two web applications in one servlet container, OSGi bundles, plugin or
     * job class loaders): OPEN_HERE and MUTEXES are static, so per class loader. Copy 2's session sweep (or any probe
     * of copy 1's session) opens copy 1's session file; the JDK refuses the overlapping lock, and closing the probe's
     * channel drops copy 1's fcntl lock (POSIX: closing any descriptor of a file drops the process's locks on it),
     * while the JDK still reports copy 1's FileLock valid. Another process now sees copy 1's session dead and takes
     * its lock while copy 1's lease is valid. (The stripes have the same hole: copy 2 closing a stripe channel drops
     * copy 1's stripe lock in the middle of a read-modify-write.)
     */
    @Test
    void finding1_aSecondCopyOfTheLibraryInOneJvmDropsTheFirstCopysSessionLock() throws Exception {
        KeyColumn lock = KeyColumn.named("two-copies");
        try (Locker webapp1 = open("webapp1", Duration.ofSeconds(60)); Lease lease = webapp1.acquire(lock, "webapp 1");
             URLClassLoader webapp2 = isolatedLoader()) {
            assertTrue(start("take", lock, List.of()).expect("").startsWith("BUSY"), "control: refused before copy 2");
            Class<?> copy2 = webapp2.loadClass(FileLocker.class.getName());
            assertNotSame(FileLocker.class, copy2, "a second copy of the class");
            Object builder = copy2.getMethod("builder", Path.class).invoke(null, dir);
            try (AutoCloseable other = (AutoCloseable) builder.getClass().getMethod("build").invoke(builder)) {
                // copy 2's constructor swept .sessions: it probed webapp 1's session file and closed that channel
                String taken = start("take", lock, List.of()).expect("");
                assertTrue(lease.isValid(), "webapp 1's lease is still valid");
                assertTrue(taken.startsWith("BUSY"), "another process took the lock webapp 1 holds: " + taken);
            }
        }
    }

    private static URLClassLoader isolatedLoader() throws IOException {
        List<URL> urls = new ArrayList<>();
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            urls.add(Path.of(entry).toUri().toURL());
        }
        return new URLClassLoader(urls.toArray(new URL[0]), ClassLoader.getPlatformClassLoader());
    }

    // ---- finding 2 --------------------------------------------------------------------------------------------------

    /**
     * A session file that is gone is taken as a dead locker, although its process still runs and renews its claims.
     * Session files are written once and never touched again, so an age-based cleaner deletes them under a
     * long-running service (systemd-tmpfiles: 10 days in /tmp on Fedora and others; the README's examples use
     * file:/tmp/locker-jobs), and so does an operator "cleaning up" DIR/.sessions. Every other process then grants the
     * live holder's locks over its valid leases (and remembers the rid as dead for good).
     */
    @Test
    void finding2_aDeletedSessionFileMakesALiveHoldersClaimsDead() throws Exception {
        KeyColumn lock = KeyColumn.named("session-file-deleted");
        Child holder = start("hold", lock, List.of());
        String[] held = holder.expect("HELD ").split(" ");
        Path session = dir.resolve(".sessions").resolve(FileNames.escape(held[2]));
        assertTrue(Files.exists(session), "the child's session file " + session);
        try (Locker control = open("control", Duration.ofSeconds(60))) {
            Optional<Lease> none = control.tryAcquire(lock, "control", Duration.ZERO);
            assertTrue(none.isEmpty(), "control: refused while the session file is there");
        }
        Files.delete(session); // what systemd-tmpfiles does to a 10-day-old file in /tmp
        try (Locker parent = open("parent", Duration.ofSeconds(60))) {
            Lease mine = null;
            try {
                mine = parent.acquire(lock, "parent");
            } catch (TemporaryLockingException expected) {
                // the child still holds it
            }
            holder.send("valid");
            String childValid = holder.expect("VALID ");
            assertEquals("VALID true", childValid, "the child's lease");
            assertNull(mine, "two valid leases: the child's (token " + held[1] + ") and ours (token "
                    + (mine == null ? "-" : mine.fencingToken()) + ")");
        }
    }

    // ---- finding 3 --------------------------------------------------------------------------------------------------

    /**
     * A process in another time namespace (unshare -T, CRIU restore of a container, a runtime with time namespaces)
     * reads CLOCK_MONOTONIC with an offset but the same boot id, so its claims and its judgement of others' claims are
     * in one "boot:" domain and compared as if on one clock. A process whose monotonic clock is ahead sees every other
     * claim expired and takes the lock from a live holder. The README lists "not in separate time namespaces" as an
     * assumption, but nothing checks it (/proc/self/timens_offsets says it).
     */
    @Test
    void finding3_aProcessInAnotherTimeNamespaceTakesALiveHoldersLock() throws Exception {
        Process probe = new ProcessBuilder("unshare", "-T", "--monotonic", "1", "--fork", "true")
                .redirectErrorStream(true).start();
        assumeTrue(probe.waitFor(10, TimeUnit.SECONDS) && probe.exitValue() == 0, "unshare -T works here (root, Linux >= 5.6)");
        KeyColumn lock = KeyColumn.named("time-namespace");
        try (Locker parent = open("parent", Duration.ofSeconds(60)); Lease lease = parent.acquire(lock, "parent")) {
            String taken = start("take", lock, List.of("unshare", "-T", "--monotonic", "100000", "--fork")).expect("");
            assertTrue(lease.isValid(), "our lease is valid");
            assertTrue(taken.startsWith("BUSY"), "a process in a time namespace took the lock we hold: " + taken);
        }
    }

    // ---- finding 4 --------------------------------------------------------------------------------------------------

    /**
     * A process stopped inside a lock operation (SIGSTOP, a debugger, a frozen cgroup) holds its stripe: a healthy
     * holder of an unrelated lock on the same stripe cannot renew, and loses its lease after one expiry although
     * nobody else can take it either. The README says operations on the stripe "fail as temporary"; it does not say
     * that healthy holders lose their leases to an unrelated stopped process.
     */
    @Test
    void finding4_aStoppedProcessMakesHealthyHoldersOfItsStripeLoseTheirLeases() throws Exception {
        KeyColumn churned = KeyColumn.named("churned");
        int stripe = stripeOf(churned);
        KeyColumn mine = null;
        for (int i = 0; mine == null; i++) {
            KeyColumn candidate = KeyColumn.named("healthy-" + i);
            mine = stripeOf(candidate) == stripe ? candidate : null;
        }
        try (Locker healthy = FileLocker.builder(dir).config(LockerConfig.builder().rid("healthy")
                .expiry(Duration.ofSeconds(3)).build()).build();
             Lease lease = healthy.acquire(mine, "healthy, kept alive")) {
            Child churn = start("churn", churned, List.of());
            churn.expect("CHURNING");
            Path stripeFile = dir.resolve(".stripes").resolve(String.format("%02x", stripe));
            boolean caught = false;
            try {
                for (int i = 0; i < 500 && !caught; i++) {
                    signal(churn, "STOP");
                    caught = stripeLockedElsewhere(stripeFile);
                    if (!caught) {
                        signal(churn, "CONT");
                        Thread.sleep(3);
                    }
                }
                assumeTrue(caught, "stopped the child inside a lock operation");
                Thread.sleep(6_000); // twice the healthy lease's expiry, the child stopped on the stripe all along
                assertTrue(lease.isValid(), "the healthy holder of " + mine + " lost its lease to an unrelated process "
                        + "stopped on stripe " + stripe);
            } finally {
                signal(churn, "CONT");
            }
        }
    }

    private static int stripeOf(KeyColumn lock) {
        return Math.floorMod(FileNames.of(lock, false).hashCode(), LockDirectory.STRIPES);
    }

    private static void signal(Child c, String sig) throws Exception {
        new ProcessBuilder("kill", "-" + sig, Long.toString(c.process.pid())).start().waitFor();
    }

    /** Asks another process (python3, POSIX lockf) whether the stripe's OS lock is held: never from this JVM. */
    private static boolean stripeLockedElsewhere(Path stripeFile) throws Exception {
        Process p = new ProcessBuilder("python3", "-c", "import fcntl,sys\nf=open(sys.argv[1],'r+')\ntry:\n"
                + " fcntl.lockf(f,fcntl.LOCK_EX|fcntl.LOCK_NB);print('free')\nexcept OSError:\n print('held')",
                stripeFile.toString()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        p.waitFor();
        return out.equals("held");
    }

    // ---- finding 5 --------------------------------------------------------------------------------------------------

    /**
     * A lock file of another format (a newer release during a rolling upgrade) fails the magic check and is taken as
     * free "not written whole": this release grants over the newer release's live claim, and restarts its tokens
     * from the wall clock. Only a checksum failure means "not written whole"; an unknown format should be refused.
     */
    @Test
    void finding5_aLockFileOfAnotherFormatIsTakenAsFree() throws Exception {
        KeyColumn lock = KeyColumn.named("other-format");
        try (Locker newer = open("newer", Duration.ofSeconds(60)); Lease lease = newer.acquire(lock, "format 2");
             Locker older = open("older", Duration.ofSeconds(60))) {
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

    // ---- finding 6 --------------------------------------------------------------------------------------------------

    /**
     * A locker whose time source is not TimeSource.system() itself (any wrapper: metrics, tracing, a test clock) gets
     * the domain "clock:&lt;identity hash&gt;", and a claim of another domain is never judged by its expiry, only by
     * its session: a holder that stops renewing while its process lives (stuck thread, SIGSTOP, a three-phase user
     * that never releases) keeps the lock for ever for everyone else. (The identity hash is also the same in two runs
     * of one program, so two processes with virtual clocks share a domain and compare unrelated instants.)
     */
    @Test
    void finding6_aClaimOfAnotherClockDomainNeverExpires() throws Exception {
        TimeSource system = TimeSource.system();
        TimeSource wrapped = new TimeSource() {
            @Override
            public Instant now() {
                return system.now();
            }

            @Override
            public long nanoTime() {
                return system.nanoTime();
            }

            @Override
            public void sleep(Duration d) throws InterruptedException {
                system.sleep(d);
            }
        };
        KeyColumn lock = KeyColumn.named("clock-domains");
        Object tx = new Object();
        try (Locker a = FileLocker.builder(dir).config(LockerConfig.builder().rid("wrapped")
                .expiry(Duration.ofMillis(300)).timeSource(wrapped).build()).build();
             Locker b = open("system", Duration.ofSeconds(60))) {
            a.writeLock(lock, tx); // three phases, never renewed: the claim expires 300 ms later
            a.checkLocks(tx);
            Optional<Lease> taken = b.tryAcquire(lock, "after the expiry", Duration.ofSeconds(5));
            assertTrue(taken.isPresent(), "a's claim expired 300 ms after it was written, yet b waited 5 s in vain");
            taken.get().close();
        }
    }

    // ---- finding 7 --------------------------------------------------------------------------------------------------

    /**
     * Tokens are max(last + 1, wall-clock µs) with "last" kept only in the lock's own file: when that file is lost
     * (deleted, a crash that leaves it not whole) and the wall clock has stepped back meanwhile, the next token is
     * lower than one already issued. Documented ("unless the wall clock also steps back"), but avoidable: a
     * high-water mark per stripe kept in the stripe file (forced with the grant) survives both.
     */
    @Test
    void finding7_aLostLockFileAndAWallClockStepBackLowerTheToken() throws Exception {
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

    // ---- child processes --------------------------------------------------------------------------------------------

    private Child start(String mode, KeyColumn lock, List<String> prefix) throws IOException {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = new ArrayList<>(prefix);
        cmd.addAll(List.of(java, "-cp", System.getProperty("java.class.path"), ReviewChild.class.getName(), mode,
                dir.toString(), new String(lock.key(), StandardCharsets.UTF_8)));
        Path log = Path.of("target", "review-children.log");
        Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
        Child c = new Child(p);
        children.add(c);
        return c;
    }

    private static final class Child {
        final Process process;
        final BufferedReader out;
        final Writer in;

        Child(Process process) {
            this.process = process;
            this.out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
            this.in = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
        }

        /** The child's next line that starts with {@code prefix} (generous bound: a JVM start on a busy machine). */
        String expect(String prefix) throws Exception {
            return CompletableFuture.supplyAsync(() -> {
                try {
                    for (String line; (line = out.readLine()) != null; ) {
                        if (line.startsWith(prefix)) {
                            return line;
                        }
                    }
                    return "EOF";
                } catch (IOException e) {
                    return "EOF " + e;
                }
            }).get(60, TimeUnit.SECONDS);
        }

        void send(String line) throws IOException {
            in.write(line + "\n");
            in.flush();
        }
    }
}
