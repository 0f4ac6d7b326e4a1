package dev.locker.file;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockOwner;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.Lockers;
import dev.locker.api.LockingException;
import dev.locker.api.PermanentLockingException;
import dev.locker.api.TemporaryLockingException;
import dev.locker.api.TimeSource;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.Test;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** What file: adds to the conformance suite: names, URIs, real processes, restarts, reboots. */
class FileLockerTest {

    private final FileFixture fixture = new FileFixture("file-test");

    private Locker open(String name) {
        return FileLocker.builder(fixture.dir()).config(LockerConfig.builder().rid(name).expiry(Duration.ofSeconds(60))
                .build()).build();
    }

    @Test
    void lockFilesAreNamedLegiblyAndInjectively() {
        assertEquals("schema-migration-42", FileNames.of(KeyColumn.named("schema-migration-42"), false));
        assertEquals("vertex%3A42@name", FileNames.of(KeyColumn.of("vertex:42", "name"), false));
        assertEquals("%2Ehidden", FileNames.of(KeyColumn.named(".hidden"), false));
        assertEquals("%2E.", FileNames.of(KeyColumn.named(".."), false), "no lock file is hidden, . or ..");
        assertEquals("Job", FileNames.of(KeyColumn.named("Job"), false));
        assertEquals("%4Aob", FileNames.of(KeyColumn.named("Job"), true), "case-insensitive file systems escape upper case");
        assertNotEquals(FileNames.of(KeyColumn.of("a", ":x"), false), FileNames.of(KeyColumn.of("a:", "x"), false));
        assertNotEquals(FileNames.of(KeyColumn.of("a@b", ""), false), FileNames.of(KeyColumn.of("a", "b"), false));
        Set<String> names = new HashSet<>();
        for (KeyColumn k : List.of(KeyColumn.of("a", ""), KeyColumn.of("a", "@"), KeyColumn.of("a@", ""),
                KeyColumn.of("a%40", ""), KeyColumn.of(new byte[] {0, (byte) 0xff}, new byte[] {'/'}),
                KeyColumn.of("a/b", "c"), KeyColumn.of("a", "/b@c"))) {
            String n = FileNames.of(k, false);
            assertTrue(names.add(n), "unique: " + n);
            assertEquals(k, FileNames.decode(n), "decodes back: " + n);
            assertFalse(n.contains("/") || n.startsWith("."), n);
        }
        String longName = FileNames.of(KeyColumn.named("x".repeat(4000)), false);
        assertTrue(longName.length() < 255 && longName.startsWith("xxxx") && longName.contains("~"), longName);
        assertNotEquals(longName, FileNames.of(KeyColumn.named("x".repeat(3999)), false));
    }

    @Test
    void theUriNamesALocalDirectory() throws Exception {
        Path dir = fixture.dir().resolve("by uri");
        try (Locker l = Lockers.open("file:" + dir.toString().replace(" ", "%20") + "?expiry=5s")) {
            assertInstanceOf(FileLocker.class, l);
            assertEquals(Duration.ofSeconds(5), l.config().expiry());
            assertEquals(dir.toRealPath(), ((FileLocker) l).directory());
        }
        assertEquals(Path.of("/var/locks"), FileLockerProvider.directoryOf("file:///var/locks"));
        assertEquals(Path.of("/var/locks"), FileLockerProvider.directoryOf("file://localhost/var/locks"));
        assertEquals(Path.of("rel/dir"), FileLockerProvider.directoryOf("file:rel/dir"));
        IllegalArgumentException remote = assertThrows(IllegalArgumentException.class,
                () -> Lockers.open("file://nas.example.com/locks"));
        assertTrue(remote.getMessage().contains("local directory"), remote.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Lockers.open("file:"));
        assertThrows(IllegalArgumentException.class, () -> Lockers.open("file:/tmp/x?expiryy=5s"));
    }

    @Test
    void lsShowsTheLocksAndTheFileHoldsTheHolder() throws Exception {
        try (Locker a = open("a"); Lease lease = a.acquire(KeyColumn.of("orders:7", "total"), "recount")) {
            assertTrue(Files.exists(fixture.dir().resolve("orders%3A7@total")));
            assertEquals(fixture.dir().resolve("orders%3A7@total"), ((FileLocker) a).fileOf(KeyColumn.of("orders:7", "total")));
            assertTrue(lease.fencingToken() > 0);
        }
    }

    @Test
    void aKilledHoldersLockIsFreeAtOnceNotAfterItsExpiry() throws Exception {
        String lockName = "killed-holder";
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process child = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
                HolderProcess.class.getName(), fixture.dir().toString(), lockName).redirectErrorStream(true).start();
        try (Locker parent = open("parent")) {
            BufferedReader r = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
            String line = r.readLine();
            assertTrue(line != null && line.startsWith("HELD "), "the child took the lock: " + line);
            long childToken = Long.parseLong(line.substring(5));
            KeyColumn lock = KeyColumn.named(lockName);
            TemporaryLockingException busy = assertThrows(TemporaryLockingException.class,
                    () -> parent.acquire(lock, "parent"));
            LockOwner holder = busy.holder();
            assertEquals(child.pid(), holder.pid(), "the holder named is the child process: " + holder);
            assertTrue(holder.rid().startsWith("child-"), holder.toString());
            child.destroyForcibly().waitFor();
            // the child's claim has 60 s to live; its process is gone, so the lock is free now
            Optional<Lease> lease = parent.tryAcquire(lock, "parent", Duration.ofSeconds(5));
            assertTrue(lease.isPresent(), "taken over well before the child's 60 s expiry");
            assertTrue(lease.get().fencingToken() > childToken);
            lease.get().close();
        } finally {
            child.destroyForcibly();
        }
    }

    @Test
    void tokensKeepRisingAcrossRestartsAndALostLockFile() throws Exception {
        KeyColumn lock = KeyColumn.named("restarts");
        long first;
        try (Locker a = open("a"); Lease l = a.acquire(lock, "one")) {
            first = l.fencingToken();
        }
        long second;
        try (Locker b = open("b"); Lease l = b.acquire(lock, "two")) {
            second = l.fencingToken();
        }
        assertTrue(second > first);
        fixture.loseClaims(lock);
        try (Locker c = open("c"); Lease l = c.acquire(lock, "three")) {
            assertTrue(l.fencingToken() > second, "never below the wall clock in microseconds");
        }
    }

    @Test
    void aClaimFromAnEarlierBootIsDead() throws Exception {
        KeyColumn lock = KeyColumn.named("rebooted");
        try (Locker a = open("a"); Locker b = open("b")) {
            Lease held = a.acquire(lock, "before the reboot");
            assertThrows(TemporaryLockingException.class, () -> b.acquire(lock, "b"));
            Path file = ((FileLocker) a).fileOf(lock);
            LockFile f = LockFile.fromBytes(Files.readAllBytes(file));
            String domain = new HostClock(dev.locker.api.TimeSource.system(), true).domain();
            org.junit.jupiter.api.Assumptions.assumeTrue(domain.startsWith("boot:"), "Linux only");
            f.claim = new LockFile.Claim(f.claim.id, f.claim.session, f.claim.process, "boot:00000000-0000-0000-0000-000000000000",
                    f.claim.expiresAt, f.claim.lifetimeNanos, f.claim.owner);
            Files.write(file, f.toBytes());
            try (Lease taken = b.acquire(lock, "after the reboot")) {
                assertTrue(taken.fencingToken() > 0);
            }
            held.close();
        }
    }

    @Test
    void theClockIsTheOneBehindTheTimeSourceAndTheWallClockOnlyWhenAccepted() {
        TimeSource system = TimeSource.system();
        TimeSource wrapped = new TimeSource() {
            @Override
            public java.time.Instant now() {
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
        assertEquals("boot:x", new HostClock(wrapped, false, "x").domain(), "a wrapper of the system clock is it");
        VirtualClock v1 = new VirtualClock();
        VirtualClock v2 = new VirtualClock();
        String d1 = new HostClock(v1, false, "x").domain();
        assertTrue(d1.startsWith("clock:"), d1);
        assertEquals(d1, new HostClock(v1, false, "x").domain(), "one virtual clock, one domain");
        assertNotEquals(d1, new HostClock(v2, false, "x").domain(), "two virtual clocks never share a domain");
        IllegalStateException refused = assertThrows(IllegalStateException.class, () -> new HostClock(system, false, null));
        assertTrue(refused.getMessage().contains("wallClock"), refused.getMessage());
        assertEquals("wall", new HostClock(system, true, null).domain(), "accepted when asked for");
    }

    @Test
    void deadSessionFilesAndLeftoversOfCrashedStartsAreSweptLiveOnesNot() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(Files.isReadable(Path.of("/proc/locks")), "Linux");
        Path sessions = fixture.dir().resolve(".sessions");
        try (Locker live = open("live")) {
            Files.createDirectories(sessions);
            Path dead = Files.writeString(sessions.resolve("dead-0123"), "rid=dead-0123\n");
            // dead long enough that no claim of it can be live (no expiry recorded: a day; see the test below)
            Files.setLastModifiedTime(dead, FileTime.from(Instant.now().minus(Duration.ofDays(2))));
            Path leftover = Files.writeString(sessions.resolve(".crashed-0123.new"), "");
            Files.setLastModifiedTime(leftover, FileTime.from(Instant.now().minus(Duration.ofHours(1))));
            Path young = Files.writeString(sessions.resolve(".starting-0123.new"), "");
            try (Locker next = open("next")) {
                assertFalse(Files.exists(dead), "a stale session file nobody holds a lock on is swept");
                assertFalse(Files.exists(leftover), "a leftover of a crashed start is swept");
                assertTrue(Files.exists(young), "a start may be under way: kept");
                try (var files = Files.list(sessions)) {
                    assertEquals(3, files.count(), "the two live sessions and the young leftover");
                }
            }
        }
    }

    /**
     * Two copies of the library in one JVM (two class loaders: web applications, plugins) churn on one lock. A JVM-wide
     * monitor makes them take turns on the stripe file. Without it the JDK's overlapping-lock check would refuse one.
     */
    @Test
    void twoCopiesOfTheLibraryInOneJvmTakeTurnsOnAStripe() throws Exception {
        java.util.List<java.net.URL> urls = new java.util.ArrayList<>();
        for (String entry : System.getProperty("java.class.path").split(java.io.File.pathSeparator)) {
            urls.add(Path.of(entry).toUri().toURL());
        }
        var inside = new java.util.concurrent.atomic.AtomicInteger();
        var violations = new java.util.concurrent.atomic.AtomicInteger();
        var taken = new java.util.concurrent.atomic.AtomicInteger();
        var errors = new java.util.concurrent.atomic.AtomicInteger();
        Path dir = fixture.dir();
        try (java.net.URLClassLoader copy2 = new java.net.URLClassLoader(urls.toArray(new java.net.URL[0]),
                ClassLoader.getPlatformClassLoader())) {
            java.lang.reflect.Method churn2 = copy2.loadClass(CopyWorker.class.getName()).getMethod("churn", Path.class,
                    String.class, int.class, inside.getClass(), inside.getClass(), inside.getClass(), inside.getClass());
            assertNotEquals(CopyWorker.class, churn2.getDeclaringClass(), "a second copy");
            Thread other = new Thread(() -> {
                try {
                    churn2.invoke(null, dir, "two-copies", 100, inside, violations, taken, errors);
                } catch (ReflectiveOperationException e) {
                    errors.incrementAndGet();
                    e.printStackTrace();
                }
            });
            other.start();
            CopyWorker.churn(dir, "two-copies", 100, inside, violations, taken, errors);
            other.join();
        }
        assertEquals(0, errors.get(), "failures other than a busy lock (see the output)");
        assertEquals(0, violations.get(), "two holders at once");
        assertTrue(taken.get() > 0, "the lock was taken");
    }

    /**
     * A dead locker's session file is the proof of its death for every process, so it stays until no claim of it can
     * be live: a sweep (a locker opening) deletes it only once it is older than the expiry it records plus the touch
     * period (10 min) and a minute; a file of an earlier build, which records no expiry, after a day; a file some
     * process still holds a lock on (a live locker) never.
     */
    @Test
    void aSweepDeletesADeadSessionFileOnlyOnceNoClaimOfItCanBeLive() throws Exception {
        try (Locker live = open("alive")) {
            Path sessions = fixture.dir().resolve(".sessions");
            Instant now = Instant.now();
            Path fresh = deadSession(sessions, "dead-fresh", "expiry-ms=60000\n", now.minusSeconds(60));
            Path stale = deadSession(sessions, "dead-stale", "expiry-ms=60000\n", now.minus(Duration.ofMinutes(13)));
            Path oldFresh = deadSession(sessions, "dead-earlier-build", "", now.minus(Duration.ofHours(20)));
            Path oldStale = deadSession(sessions, "dead-earlier-build-stale", "", now.minus(Duration.ofHours(25)));
            Path liveFile;
            try (var files = Files.list(sessions)) {
                liveFile = files.filter(f -> f.getFileName().toString().startsWith("alive")).findFirst().orElseThrow();
            }
            Files.setLastModifiedTime(liveFile, FileTime.from(now.minus(Duration.ofDays(3))));

            open("sweeper").close(); // its opening sweeps .sessions

            assertTrue(Files.exists(fresh), "the proof of a death whose claims may still be live stays");
            assertFalse(Files.exists(stale), "no claim of it can be live (60 s + 10 min + 1 min ago): deleted");
            assertTrue(Files.exists(oldFresh), "no expiry recorded: kept a day");
            assertFalse(Files.exists(oldStale), "no expiry recorded, over a day old: deleted");
            assertTrue(Files.exists(liveFile), "a live locker's session file, however old, stays");
        }
    }

    /** A session file of a locker that is gone (nobody holds a lock on it), last touched at {@code touched}. */
    private static Path deadSession(Path sessions, String rid, String expiryLine, Instant touched) throws Exception {
        Path f = sessions.resolve(rid);
        Files.writeString(f, "rid=" + rid + "\nhost=h\npid=1\nprocess=linux:gone\nstarted=" + touched + "\n"
                + expiryLine);
        Files.setLastModifiedTime(f, FileTime.from(touched));
        return f;
    }

    /**
     * Hostile names ('/', '..', NUL, '%', control bytes, invalid UTF-8, 4000 bytes) each get their own file in the
     * directory. All are held at once; a file of one lock copied under another's name is refused, never granted over.
     */
    @Test
    void hostileNamesStayInTheDirectoryAndNeverShareAFile() throws Exception {
        List<KeyColumn> locks = new ArrayList<>();
        for (String s : List.of("/", "..", ".", "../escape", "a/../../b", "%2E", "%2F", "a@b", "a%40b", "~", "A", "a",
                " ", "\t", "x".repeat(4000), "x".repeat(3999) + "y", "\u00e9", "e\u0301")) {
            locks.add(KeyColumn.named(s));
        }
        locks.add(KeyColumn.of(new byte[] {0}, new byte[0]));
        locks.add(KeyColumn.of(new byte[] {0, 0}, new byte[0]));
        locks.add(KeyColumn.of(new byte[] {(byte) 0xff, (byte) 0xfe, '/'}, new byte[] {0}));
        locks.add(KeyColumn.of("a", "b"));
        locks.add(KeyColumn.of("a@", "b"));
        locks.add(KeyColumn.of("a", "@b"));
        Set<Path> files = new HashSet<>();
        List<Lease> leases = new ArrayList<>();
        try (Locker a = open("names")) {
            for (KeyColumn k : locks) {
                leases.add(a.acquire(k, "hostile name"));
                Path f = ((FileLocker) a).fileOf(k);
                assertEquals(fixture.dir(), f.getParent(), "directly in the lock directory: " + f);
                assertFalse(f.getFileName().toString().startsWith("."), "never hidden: " + f);
                assertTrue(f.getFileName().toString().length() < 256, f.toString());
                assertTrue(Files.isRegularFile(f), f.toString());
                assertTrue(files.add(f), "one file per lock: " + f);
            }
            try (Stream<Path> all = Files.list(fixture.dir())) {
                assertEquals(locks.size(), all.filter(p -> !p.getFileName().toString().startsWith(".")).count(),
                        "nothing written outside the lock files");
            }
            try (Stream<Path> outside = Files.list(fixture.dir().getParent())) {
                assertTrue(outside.noneMatch(p -> p.getFileName().toString().contains("escape")), "nothing escaped");
            }
            for (Lease l : leases) {
                l.close();
            }
            KeyColumn victim = KeyColumn.named("renamed-over");
            try (Lease held = a.acquire(KeyColumn.named("owner-of-the-file"), "held")) {
                Files.copy(((FileLocker) a).fileOf(KeyColumn.named("owner-of-the-file")), ((FileLocker) a).fileOf(victim));
                try (Locker b = open("b")) {
                    assertThrows(PermanentLockingException.class, () -> b.acquire(victim, "over another lock's file"));
                }
                assertTrue(held.isValid());
            }
        }
    }

    /**
     * A full file system (a 256 KiB tmpfs, mounted as root; skipped elsewhere) fails renewals and grants as temporary.
     * No lock file or token mark is left half-written and no other locker gets in; with space back the holder renews.
     */
    @Test
    void aFullFileSystemFailsChangesCleanly() throws Exception {
        Path mnt = Files.createTempDirectory(Path.of("target"), "full-fs-").toAbsolutePath();
        Process mount = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", mnt.toString())
                .redirectErrorStream(true).start();
        assumeTrue(mount.waitFor(10, TimeUnit.SECONDS) && mount.exitValue() == 0, "can mount a tmpfs (root)");
        try {
            Path locks = mnt.resolve("locks");
            KeyColumn lock = KeyColumn.named("full");
            KeyColumn other = KeyColumn.named("full-other");
            LockerConfig base = LockerConfig.builder().expiry(Duration.ofSeconds(60)).build();
            try (Locker a = FileLocker.builder(locks).config(base.toBuilder().rid("a").build()).build();
                 Locker b = FileLocker.builder(locks).config(base.toBuilder().rid("b").build()).build()) {
                Object tx = new Object();
                a.writeLock(lock, tx);
                a.checkLocks(tx);
                long token = a.status(lock, tx).orElseThrow().fencingToken();
                Path filler = mnt.resolve("filler");
                try (var out = Files.newOutputStream(filler)) {
                    byte[] block = new byte[4096];
                    while (true) {
                        out.write(block);
                    }
                } catch (IOException full) {
                    // ENOSPC
                }
                assertThrows(LockingException.class, () -> a.renewLocks(tx), "a renewal cannot be written");
                assertFalse(b.tryAcquire(lock, "while full", Duration.ZERO).isPresent(), "never granted over the claim");
                try {
                    b.tryAcquire(other, "while full", Duration.ZERO).ifPresent(Lease::close);
                } catch (LockingException expected) {
                    // a grant that cannot be written fails
                }
                LockFile f = LockFile.fromBytes(Files.readAllBytes(locks.resolve(FileNames.of(lock, false))));
                assertEquals(token, f.token, "the lock file is whole and unchanged");
                Files.delete(filler);
                a.renewLocks(tx);
                a.checkLocks(tx);
                a.deleteLocks(tx);
                try (Lease l = b.acquire(lock, "space back")) {
                    assertTrue(l.fencingToken() > token, l.fencingToken() + " after " + token);
                }
            }
        } finally {
            new ProcessBuilder("umount", "-l", mnt.toString()).start().waitFor(10, TimeUnit.SECONDS);
            Files.deleteIfExists(mnt);
        }
    }
}
