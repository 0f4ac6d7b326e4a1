package dev.locker.file;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.TemporaryLockingException;
import dev.locker.spi.DeploymentCheck;
import dev.locker.engine.LockerEngine;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.File;
import java.io.IOException;
import java.lang.reflect.Field;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

import static dev.locker.file.Stripes.lockedElsewhere;
import static dev.locker.file.Stripes.sameStripe;
import static dev.locker.file.Stripes.stripeOf;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A live locker's session lock proves it alive, and a dead one's file proves its death, to every process. */
class FileSessionProofTest {

    private final FileFixture fixture = new FileFixture("session-proof");
    private final Path dir = fixture.dir();

    @AfterEach
    void cleanUp() throws Exception {
        fixture.close();
    }

    /** A contender in another process whose locker is open from now on (READY). */
    private ChildJvm taker() throws Exception {
        ChildJvm c = fixture.start("taker", 60);
        assertEquals("READY", c.expect("READY"), "the contender started");
        return c;
    }

    /**
     * A second copy of the library in one JVM (another class loader) probes the first copy's session file. Closing that
     * probe must not drop the first copy's OS lock: another process is still refused.
     */
    @Test
    void aSecondCopyOfTheLibraryInOneJvmKeepsTheFirstCopysSessionLock() throws Exception {
        KeyColumn lock = KeyColumn.named("two-copies");
        try (Locker webapp1 = fixture.open("webapp1", Duration.ofSeconds(60)); Lease lease = webapp1.acquire(lock, "webapp 1");
             URLClassLoader webapp2 = isolatedLoader()) {
            assertTrue(fixture.start("take", lock, List.of()).expect("").startsWith("BUSY"), "control: refused before copy 2");
            Class<?> copy2 = webapp2.loadClass(FileLocker.class.getName());
            assertNotSame(FileLocker.class, copy2, "a second copy of the class");
            Object builder = copy2.getMethod("builder", Path.class).invoke(null, dir);
            try (AutoCloseable other = (AutoCloseable) builder.getClass().getMethod("build").invoke(builder)) {
                // copy 2's constructor swept .sessions: it probed webapp 1's session file and closed that channel
                String taken = fixture.start("take", lock, List.of()).expect("");
                assertTrue(lease.isValid(), "webapp 1's lease is still valid");
                assertTrue(taken.startsWith("BUSY"), "another process took the lock webapp 1 holds: " + taken);
            }
        }
    }

    /**
     * An age-based cleaner or an operator may delete a session file under a live locker. Its holder's claims stay live:
     * no other locker is granted over its valid lease.
     */
    @Test
    void aDeletedSessionFileLeavesALiveHoldersClaimsLive() throws Exception {
        KeyColumn lock = KeyColumn.named("session-file-deleted");
        ChildJvm holder = fixture.start("hold", lock, List.of());
        String[] held = holder.expect("HELD ").split(" ");
        Path session = dir.resolve(".sessions").resolve(FileNames.escape(held[2]));
        assertTrue(Files.exists(session), "the child's session file " + session);
        try (Locker control = fixture.open("control", Duration.ofSeconds(60))) {
            Optional<Lease> none = control.tryAcquire(lock, "control", Duration.ZERO);
            assertTrue(none.isEmpty(), "control: refused while the session file is there");
        }
        Files.delete(session); // what systemd-tmpfiles does to a 10-day-old file in /tmp
        try (Locker parent = fixture.open("parent", Duration.ofSeconds(60))) {
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

    /**
     * An interrupt closes an NIO channel, and closing it would drop the session file's OS lock. A touch on an
     * interrupted thread keeps the lock: another process is still refused. The contender's locker opens first, since a
     * new locker's sweep would hide the death.
     */
    @Test
    void anInterruptedSessionTouchKeepsTheSessionLock() throws Exception {
        KeyColumn lock = KeyColumn.named("interrupted-touch");
        ChildJvm contender = taker();
        try (Locker a = fixture.open("interrupted", Duration.ofSeconds(60)); Lease lease = a.acquire(lock, "held")) {
            assertTrue(contender.ask(lock, 0).startsWith("BUSY"), "control: refused while we hold it");
            Sessions session = sessionOf(a);
            dueForTouch(session);
            Thread t = new Thread(() -> {
                Thread.currentThread().interrupt(); // the interrupt that arrived after the grant's rename
                session.touch();
            });
            t.start();
            t.join();
            String taken = contender.ask(lock, 0);
            assertTrue(lease.isValid(), "our lease is still valid");
            assertTrue(taken.startsWith("BUSY"), "another process took the lock of a live locker whose session "
                    + "channel an interrupt closed (session FileLock valid: " + sessionLock(session).isValid() + "): "
                    + taken);
        }
    }

    /**
     * A job framework interrupts a worker at random moments while it takes and releases locks. The touch throttle is
     * made due before each attempt, as it is every 10 minutes in production. The session lock outlives every round, so
     * another process is still refused.
     */
    @Test
    void theSessionLockOutlivesRandomInterruptsOfTryAcquire() throws Exception {
        KeyColumn lock = KeyColumn.named("interrupted-held");
        ChildJvm contender = taker();
        try (Locker a = fixture.open("interrupted", Duration.ofSeconds(60)); Lease lease = a.acquire(lock, "held")) {
            Sessions session = sessionOf(a);
            FileLock sessionLock = sessionLock(session);
            AtomicBoolean done = new AtomicBoolean();
            AtomicInteger rounds = new AtomicInteger();
            Thread worker = new Thread(() -> {
                for (int i = 0; i < 1000 && sessionLock.isValid(); i++) {
                    Thread.interrupted();
                    dueForTouch(session);
                    try {
                        a.tryAcquire(KeyColumn.named("job-" + i), "job", Duration.ZERO).ifPresent(Lease::close);
                    } catch (RuntimeException cancelled) {
                        // the interrupt failed the attempt (ClosedByInterruptException): a cancelled job
                    }
                    rounds.incrementAndGet();
                }
                done.set(true);
            });
            worker.start();
            while (!done.get()) {
                LockSupport.parkNanos(ThreadLocalRandom.current().nextLong(200_000, 3_000_000));
                worker.interrupt();
            }
            worker.join();
            assertTrue(sessionLock.isValid(), "the session lock outlived " + rounds.get() + " rounds of random "
                    + "interrupts");
            String taken = contender.ask(lock, 0);
            assertTrue(lease.isValid(), "our lease is still valid");
            assertTrue(taken.startsWith("BUSY"), "after " + rounds.get() + " cancelled jobs, another process took "
                    + "the lock this live locker holds: " + taken);
        }
    }

    /**
     * A killed holder held two locks; one process proves the death and takes the first at once. Another process, its
     * locker open all along, takes the second well before the 120 s expiry.
     */
    @Test
    void aKilledHoldersEveryLockIsFreeForEveryProcessAfterTheFirstProof() throws Exception {
        ChildJvm other = taker();
        try (Locker parent = fixture.open("parent", Duration.ofSeconds(30))) {
            ChildJvm holder = fixture.start("hold-all", 120, "killed-first", "killed-second");
            assertEquals("HELD", holder.expect("HELD"));
            assertTrue(other.ask("killed-second", 0).startsWith("BUSY"), "control: held by the child");
            holder.process.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
            // the first prover: its probe takes the dead session's lock, takes the lock at once, deletes the file
            Optional<Lease> one = parent.tryAcquire(KeyColumn.named("killed-first"), "first", Duration.ofSeconds(20));
            assertTrue(one.isPresent(), "control: the first lock of the killed holder is taken at once");
            one.get().close();
            // a bound far below the 120 s expiry, only against hanging
            String taken = other.ask("killed-second", 20);
            assertTrue(taken.startsWith("TOOK"), "the killed holder's other lock, by another process: " + taken);
        }
    }

    /**
     * A locker opened after the kill sweeps .sessions first. The sweep keeps the proof of the death, so the killed
     * holder's lock is free well before its expiry.
     */
    @Test
    void aLockerOpenedAfterTheKillStillFindsTheProofOfTheDeath() throws Exception {
        ChildJvm holder = fixture.start("hold-all", 120, "killed-swept");
        assertEquals("HELD", holder.expect("HELD"));
        holder.process.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
        ChildJvm restarted = taker(); // the worker, restarted: its locker's sweep runs first
        String taken = restarted.ask("killed-swept", 20); // far below the 120 s expiry, only against hanging
        assertTrue(taken.startsWith("TOOK"), "the lock of a killed holder, by a process started after the kill: " + taken);
    }

    /**
     * Everything one JVM does beside a live locker, through two paths to its directory (a symlink). Other lockers open
     * and close, grant, release, force-release, list; the doctor runs; a start fails. None of it drops the live
     * locker's session or stripe locks: another process is still refused.
     */
    @Test
    void toolsAndOtherLockersInTheSameJvmDoNotDropALiveLockersOsLocks() throws Exception {
        KeyColumn lock = KeyColumn.named("same-jvm-held");
        int stripe = stripeOf(lock);
        Path alias = Files.createSymbolicLink(dir.resolveSibling(dir.getFileName() + ".alias"), dir);
        ChildJvm contender = taker();
        try (Locker a = fixture.open("live", Duration.ofSeconds(60)); Lease lease = a.acquire(lock, "held")) {
            Path sessionFile = dir.resolve(".sessions").resolve(FileNames.escape(a.rid()));
            assertTrue(lockedElsewhere(sessionFile, 0, 0), "control: the session file is locked (by us)");
            for (int i = 0; i < 8; i++) {
                Path through = i % 2 == 0 ? dir : alias;
                try (Locker other = FileLocker.builder(through).config(LockerConfig.builder().rid("other" + i)
                        .expiry(Duration.ofSeconds(30)).build()).build()) {
                    KeyColumn neighbour = sameStripe(stripe, "same-jvm-" + i + "-");
                    try (Lease l = other.acquire(neighbour, "neighbour")) {
                        assertTrue(l.fencingToken() > 0);
                    }
                    other.list(new byte[0], 100, null);
                    assertTrue(other.holding(lock).isPresent(), "the live lease is seen");
                    assertFalse(other.tryAcquire(lock, "same JVM", Duration.ZERO).isPresent(), "refused in-JVM");
                    other.forceRelease(neighbour, "cleanup", 1L);
                    other.forceRelease(sameStripe(stripe, "same-jvm-free-" + i + "-"), "cleanup");
                }
            }
            DeploymentCheck.forScheme("file").orElseThrow().check("file:" + dir, s -> { });
            assertThrows(RuntimeException.class, () -> FileLocker.builder(dir.resolve(FileNames.of(lock, false)))
                    .build(), "a lock file is not a directory");
            assertTrue(Files.exists(sessionFile) && lockedElsewhere(sessionFile, 0, 0), "the session file is still "
                    + "there and locked");
            String taken = contender.ask(lock, 0);
            assertTrue(lease.isValid(), "our lease is valid");
            assertTrue(taken.startsWith("BUSY"), "another process took a lock held in this JVM: " + taken);
        } finally {
            Files.deleteIfExists(alias);
        }
    }

    private static Sessions sessionOf(Locker locker) throws Exception {
        Field d = LockerEngine.class.getDeclaredField("driver");
        d.setAccessible(true);
        Field f = FileDriver.class.getDeclaredField("session");
        f.setAccessible(true);
        return (Sessions) f.get(d.get(locker));
    }

    private static FileLock sessionLock(Sessions s) throws Exception {
        Field f = Sessions.class.getDeclaredField("lock");
        f.setAccessible(true);
        return (FileLock) f.get(s);
    }

    /** Makes the 10-minute touch throttle due (as it is once every 10 minutes of a locker's life). */
    private static void dueForTouch(Sessions s) {
        try {
            Field f = Sessions.class.getDeclaredField("touched");
            f.setAccessible(true);
            f.setLong(s, System.nanoTime() - Duration.ofMinutes(11).toNanos());
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    private static URLClassLoader isolatedLoader() throws IOException {
        List<URL> urls = new ArrayList<>();
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            urls.add(Path.of(entry).toUri().toURL());
        }
        return new URLClassLoader(urls.toArray(new URL[0]), ClassLoader.getPlatformClassLoader());
    }
}
