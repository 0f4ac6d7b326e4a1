package dev.locker.file;

import dev.locker.api.LockOwner;
import dev.locker.spi.TemporaryStoreException;
import dev.locker.spi.Uninterruptible;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.time.Instant;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * Which lockers are alive, told by the kernel rather than by process ids (pid namespaces and containers sharing a
 * directory make a pid check unsafe): every open locker holds an exclusive OS lock on its own session file
 * {@code DIR/.sessions/<rid>} for its whole life. The kernel drops that lock when the process ends, however it ends
 * (exit, crash, SIGKILL), and at a reboot. A contender that <em>takes</em> a shared lock on a claim's existing session
 * file knows that the claim's process is gone: the claim is dead at once, whatever its expiry says. Nothing else proves
 * a death: a session file that is missing (deleted by a tmp cleaner or an operator) or cannot be read says nothing, and
 * the claim lives until its expiry. The session file is touched (through the locker's own descriptor) as the locker
 * works, so an age-based cleaner leaves it alone.
 *
 * <p><b>The proof stays.</b> A dead locker's session file is the only proof of its death for every process, so the
 * process that proves it does not delete it: a dead session file is deleted (by a sweep) only once no claim of its
 * locker can be live any more: when it is older (by its last touch) than the locker's expiry, recorded in it, plus the
 * touch period and a margin. Until then every process proves the death for itself, and takes the dead locker's locks
 * at once. (Deleting it earlier, as this class did, left every process but the first to wait for the claims' expiry.)
 *
 * <p><b>Never a handle on a file this process may hold a lock on.</b> An OS file lock (fcntl) belongs to the process,
 * and closing <em>any</em> descriptor of the file drops all the process's locks on it; another copy of this library
 * in the JVM (another class loader), or a second path to the directory (a bind mount), would drop a live session's
 * lock by probing it. So every claim names its locker's process ({@link #PROCESS}: boot, pid namespace, pid, start
 * time): a claim of this process is never probed (its expiry decides), and the sweep of dead session files skips every
 * file this process holds a lock on (Linux {@code /proc/locks}; elsewhere there is no sweep, and the dead session files
 * of crashed lockers stay).
 *
 * <p><b>Never an interruptible write to the session file.</b> A {@code FileChannel} closes itself when a thread
 * interrupted during one of its I/O operations (a cancelled future, an executor shut down) is in it, and closing it
 * drops the session's lock: another process would then prove a live locker dead and take its locks. The session file
 * is held through a {@link RandomAccessFile}: its own reads and writes are not interruptible; its channel serves only to
 * take and release the lock, which are not interruptible either.
 */
final class Sessions implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(Sessions.class);

    /** This process: the same in every copy of this library in the JVM, different for every other process. */
    static final String PROCESS = processIdentity();

    private static final Path PROC_LOCKS = Path.of("/proc/locks");
    private static final Path PROC_SELF = Path.of("/proc/self");
    private static final long TOUCH_EVERY_NANOS = Duration.ofMinutes(10).toNanos();
    /** A leftover temporary session file older than this is from a start that crashed. */
    private static final Duration NEW_FILE_AGE = Duration.ofMinutes(10);
    private static final Object PROBES = new Object();
    /** What a probe that proves a death does with the dead session file. */
    private enum Deletion { NEVER, IF_STALE, IF_DEAD }

    /** The session file's line that records the expiry of its locker's claims, in milliseconds. */
    private static final String EXPIRY_KEY = "expiry-ms=";
    /** How long the session file of an earlier build (no expiry recorded) is kept as a proof of death. */
    private static final long UNRECORDED_EXPIRY_MILLIS = Duration.ofDays(1).toMillis();
    private static final int DEAD_REMEMBERED = 4096;
    private static final Map<String, Boolean> DEAD = Collections.synchronizedMap(new LinkedHashMap<>(64, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
            return size() > DEAD_REMEMBERED;
        }
    });

    private final LockDirectory directory;
    private final String rid;
    private final Path file;
    /** The session file, held open for the locker's life; written only through its own (uninterruptible) methods. */
    private final RandomAccessFile raf;
    private final FileLock lock;
    private final int length;
    private volatile long touched = System.nanoTime();

    private Sessions(LockDirectory directory, String rid, Path file, RandomAccessFile raf, FileLock lock, int length) {
        this.directory = directory;
        this.rid = rid;
        this.file = file;
        this.raf = raf;
        this.lock = lock;
        this.length = length;
    }

    /**
     * Starts the session of the locker {@code rid}: creates and locks its session file, which says who it is and the
     * expiry of its claims (how long its file must outlive it as the proof of its death).
     */
    static Sessions start(LockDirectory directory, String rid, LockOwner owner, Duration expiry) throws IOException {
        Path file = fileOf(directory, rid);
        // locked under a hidden name first, then renamed (the lock stays with the inode): a sweep or a probe never
        // meets a session file that is not locked yet
        Path fresh = directory.sessions.resolve("." + file.getFileName() + ".new");
        RandomAccessFile raf = null;
        boolean created = false;
        try {
            if (Files.exists(file)) {
                throw new IOException("a session file for rid " + rid + " exists already: the rid is in use");
            }
            Files.createFile(fresh); // fails if it exists: nobody else's file is ever opened here
            created = true;
            raf = new RandomAccessFile(fresh.toFile(), "rw");
            FileLock lock = raf.getChannel().tryLock();
            if (lock == null) {
                throw new IOException("the new session file " + fresh + " is locked by another process");
            }
            byte[] text = ("rid=" + rid + "\nhost=" + owner.host() + "\npid=" + owner.pid() + "\nprocess=" + PROCESS
                    + "\nstarted=" + Instant.now() + "\n" + EXPIRY_KEY + expiryMillis(expiry) + "\n")
                    .getBytes(StandardCharsets.UTF_8);
            raf.write(text);
            Files.move(fresh, file, StandardCopyOption.ATOMIC_MOVE);
            return new Sessions(directory, rid, file, raf, lock, text.length);
        } catch (IOException | RuntimeException e) {
            if (raf != null) {
                raf.close(); // a file of ours that nobody else opens: closing it drops no other lock
            }
            if (created) {
                Files.deleteIfExists(fresh);
            }
            throw e;
        }
    }

    /**
     * True when the locker {@code session} of process {@code process} may still be running: a locker of this process
     * (never probed), its session file missing or unreadable, or locked by a process. False only when this process took
     * a shared lock on that file: then no process holds it.
     */
    boolean isAlive(String session, String process) {
        if (PROCESS.equals(process)) {
            return true; // this process: its session file must not be opened here, and the claim's expiry decides
        }
        if (DEAD.containsKey(session)) {
            return false;
        }
        boolean alive = probe(fileOf(directory, session), Deletion.NEVER);
        if (!alive) {
            DEAD.put(session, Boolean.TRUE);
        }
        return alive;
    }

    /**
     * False only when a shared lock on {@code file} was taken: its locker is dead. The file stays, the proof of that
     * death for every other process (see the class comment), unless {@code delete} says otherwise (then it is deleted
     * under the lock: its rid never comes back).
     */
    private static boolean probe(Path file, Deletion delete) {
        synchronized (PROBES) {
            // a RandomAccessFile, which no interrupt closes: a cancelled caller still proves a dead locker dead
            try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "r")) {
                FileLock probe = raf.getChannel().tryLock(0, Long.MAX_VALUE, true);
                if (probe == null) {
                    return true;
                }
                if (delete == Deletion.IF_DEAD || delete == Deletion.IF_STALE && stale(file, raf)) {
                    try {
                        Files.deleteIfExists(file); // no claim of it can be live: deleted while we hold the lock
                    } catch (IOException e) {
                        log.debug("Could not delete dead session file {}: {}", file, e.toString());
                    }
                }
                probe.release();
                return false;
            } catch (FileNotFoundException e) {
                return true; // deleted by someone (a tmp cleaner?), or unreadable: proves nothing, the expiry decides
            } catch (OverlappingFileLockException e) {
                return true; // locked elsewhere in this JVM
            } catch (IOException e) {
                log.debug("Could not probe session file {}: {}; taking it as alive", file, e.toString());
                return true;
            }
        }
    }

    /**
     * Deletes up to {@code max} session files of dead lockers (left by crashed processes) whose claims cannot be live
     * any more ({@link #stale}), and temporary ones left by a start that crashed. Only on Linux: a file this process holds a lock on (per {@code /proc/locks}, read after
     * the file's inode) is never opened; elsewhere nothing is swept.
     */
    static void sweep(LockDirectory directory, int max) {
        if (!Files.isReadable(PROC_LOCKS)) {
            return;
        }
        Map<Path, Long> inodes = new LinkedHashMap<>();
        try (DirectoryStream<Path> files = Files.newDirectoryStream(directory.sessions)) {
            for (Path f : files) {
                if (inodes.size() >= max) {
                    break;
                }
                String name = f.getFileName().toString();
                if (!name.startsWith(".") || (name.endsWith(".new") && Files.getLastModifiedTime(f).toInstant()
                        .isBefore(Instant.now().minus(NEW_FILE_AGE)))) {
                    inodes.put(f, ((Number) Files.getAttribute(f, "unix:ino")).longValue());
                }
            }
            // read after every inode above: a session file is locked before it gets its name, so one this process
            // holds a lock on is listed here (and a name never comes to mean another inode: rids never repeat)
            Set<Long> ours = lockedHere();
            for (Map.Entry<Path, Long> f : inodes.entrySet()) {
                if (!ours.contains(f.getValue())) {
                    // a leftover of a start that crashed is no proof of anything (no claim names it)
                    probe(f.getKey(), f.getKey().getFileName().toString().startsWith(".") ? Deletion.IF_DEAD
                            : Deletion.IF_STALE);
                }
            }
        } catch (IOException | RuntimeException e) {
            log.debug("Could not sweep {}: {}", directory.sessions, e.toString());
        }
    }

    /**
     * Can no claim of the dead locker of session file {@code file} be live any more? Its last touch (the file's
     * modification time; a claim is written or renewed at most the touch period after it) lies further back than the
     * locker's expiry (recorded in the file; a day for a file of an earlier build, which did not record it) plus the
     * touch period and a minute. Read through {@code ch}: opening another descriptor of it would drop our probe lock.
     */
    private static boolean stale(Path file, RandomAccessFile raf) {
        try {
            byte[] text = new byte[(int) Math.min(raf.length(), 64 * 1024)];
            raf.seek(0);
            raf.readFully(text);
            long expiryMillis = UNRECORDED_EXPIRY_MILLIS;
            for (String line : new String(text, StandardCharsets.UTF_8).split("\n")) {
                if (line.startsWith(EXPIRY_KEY)) {
                    expiryMillis = Long.parseLong(line.substring(EXPIRY_KEY.length()).trim());
                }
            }
            long keepMillis = saturatedAdd(expiryMillis, Duration.ofNanos(TOUCH_EVERY_NANOS).plusMinutes(1).toMillis());
            Instant touched = Files.getLastModifiedTime(file).toInstant();
            return Duration.between(touched, Instant.now()).toMillis() > keepMillis;
        } catch (IOException | RuntimeException e) {
            return false; // unreadable: kept (a stale proof costs a file, a missing one costs a wait)
        }
    }

    private static long saturatedAdd(long a, long b) {
        long r = a + b;
        return ((a ^ r) & (b ^ r)) < 0 ? Long.MAX_VALUE : r;
    }

    private static long expiryMillis(Duration expiry) {
        try {
            return Math.max(0, expiry.toMillis());
        } catch (ArithmeticException tooLong) {
            return Long.MAX_VALUE;
        }
    }

    /**
     * The inodes on which this process holds an OS lock, per {@code /proc/locks}. Its pids are those of the pid
     * namespace of the proc mount, which need not be this process's (a container given the host's /proc): this process
     * is found there as {@code /proc/self} names it.
     */
    private static Set<Long> lockedHere() throws IOException {
        String pid = Files.readSymbolicLink(PROC_SELF).toString();
        Set<Long> inodes = new HashSet<>();
        for (String line : Uninterruptible.NIO.call(() -> Files.readAllLines(PROC_LOCKS, StandardCharsets.US_ASCII))) {
            // "1: POSIX  ADVISORY  WRITE 3568 fd:00:1234 0 EOF", or "1: -> POSIX ..." for a waiter
            String[] f = line.trim().split("\\s+");
            int i = f.length > 1 && f[1].equals("->") ? 2 : 1;
            if (f.length > i + 4 && f[i + 3].equals(pid)) {
                String dev = f[i + 4];
                try {
                    inodes.add(Long.parseLong(dev.substring(dev.lastIndexOf(':') + 1)));
                } catch (NumberFormatException e) {
                    throw new IOException("cannot understand " + PROC_LOCKS + ": " + line, e);
                }
            }
        }
        return inodes;
    }

    /**
     * Touches the session file (at most every 10 minutes), through its own descriptor and not interruptibly (see the
     * class comment): an age-based cleaner (systemd-tmpfiles) leaves it alone while the locker works. Never through its
     * path: opening and closing another descriptor of the file would drop its lock.
     */
    void touch() {
        long now = System.nanoTime();
        if (now - touched < TOUCH_EVERY_NANOS) {
            return;
        }
        touched = now;
        try {
            synchronized (raf) { // seek and write are one step
                raf.seek(length - 1);
                raf.write('\n'); // the last byte again: a new mtime
            }
        } catch (IOException e) {
            log.warn("Could not touch session file {} (an age-based cleaner may delete it; the claims of this locker "
                    + "then live until their expiry): {}", file, e.toString());
        }
    }

    private static Path fileOf(LockDirectory directory, String rid) {
        return directory.sessions.resolve(nameOf(rid));
    }

    /** The session file's name: the escaped rid, or its SHA-256 when that is too long for a file name. */
    private static String nameOf(String rid) {
        String name = FileNames.escape(rid);
        return name.length() <= FileNames.MAX_LEGIBLE ? name
                : java.util.HexFormat.of().formatHex(FileNames.sha256(rid.getBytes(StandardCharsets.UTF_8)));
    }

    /** Ends the session: the lock is released, the file deleted; claims naming it are dead from then on. */
    @Override
    public void close() {
        try {
            Files.deleteIfExists(file); // while we hold the lock: no prober can take it before the name is gone
            lock.release();
            raf.close();
        } catch (IOException e) {
            log.debug("Closing session file {}: {}", file, e.toString());
        }
    }

    /**
     * Fails when this process is no longer the one {@code cached} names: restored from a checkpoint (CRaC, CRIU), it
     * runs as a new process, maybe on another boot. Its claims would name the process it was, which no probe can
     * tell alive or dead, so file: refuses to go on in it. One small read of {@code /proc/self/stat}: a restore always
     * makes a new task, whose start time is later than the checkpointed one's, even in a time namespace. The boot is
     * {@link HostClock#requireCurrent}'s to check. A read that fails is not a restore: only a read that differs is.
     *
     * @throws IllegalStateException when the start time read now differs
     * @throws TemporaryStoreException when {@code /proc/self/stat} is there but cannot be read now
     */
    static void requireCurrent(String cached) {
        String now;
        try {
            now = startTime();
        } catch (IOException | RuntimeException e) {
            throw new TemporaryStoreException("cannot read /proc/self/stat now (" + e + "): the check for a "
                    + "checkpoint restore waits for a read that works", e);
        }
        if (now == null) {
            return; // no /proc: nothing to compare, as when the identity was read
        }
        // the start time ending an identity read at load; else the first read since (that read failed)
        String then = cached.startsWith("linux:")
                ? cached.substring(cached.lastIndexOf(':') + 1)
                : FIRST_READ.updateAndGet(first -> first != null ? first : now);
        if (!now.equals(then)) {
            throw new IllegalStateException(HostClock.RESTORED + "its start time is now " + now + ", not "
                    + then + " (" + cached + "). Restart the process to use file: locks again");
        }
    }

    /** This process's start time, first read after a failed read at load. */
    private static final java.util.concurrent.atomic.AtomicReference<String> FIRST_READ =
            new java.util.concurrent.atomic.AtomicReference<>();

    /** This process's start time (clock ticks since boot) from {@code /proc/self/stat}, or null without it. */
    private static String startTime() throws IOException {
        String stat;
        try {
            stat = new String(Uninterruptible.NIO.call(() -> Files.readAllBytes(PROC_SELF.resolve("stat"))),
                    StandardCharsets.US_ASCII);
        } catch (java.nio.file.NoSuchFileException e) {
            return null;
        }
        String[] after = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        return after[19]; // field 22, starttime: the 20th after "(comm) "
    }

    /**
     * This process's identity: boot id, pid namespace, pid and start time (clock ticks since boot) on Linux, read
     * from {@code /proc/self}; elsewhere the pid and start instant. Two live processes never share it; every copy of
     * this library in one process computes the same.
     */
    private static String processIdentity() {
        long pid = ProcessHandle.current().pid();
        try {
            String stat = new String(Uninterruptible.NIO.call(() -> Files.readAllBytes(Path.of("/proc/self/stat"))),
                    StandardCharsets.US_ASCII);
            String[] after = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            String start = after[19]; // field 22, starttime: the 20th after "(comm) "
            String ns = Files.readSymbolicLink(Path.of("/proc/self/ns/pid")).toString();
            Path bootId = Path.of("/proc/sys/kernel/random/boot_id");
            String boot = new String(Uninterruptible.NIO.call(() -> Files.readAllBytes(bootId)),
                    StandardCharsets.US_ASCII).trim();
            return "linux:" + boot + ":" + ns + ":" + pid + ":" + start;
        } catch (IOException | RuntimeException e) {
            // no /proc: pid and start instant (without one, a process of the same pid elsewhere is taken as this one,
            // and its claims are judged by their expiry only: never less safe)
            return "pid:" + pid + "@" + ProcessHandle.current().info().startInstant().map(Instant::toString).orElse("?");
        }
    }

    @Override
    public String toString() {
        return "session " + rid + " in " + directory;
    }
}
