package dev.locker.file;

import dev.locker.api.LockOwner;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Which lockers are alive, told by the kernel rather than by process ids (pid namespaces and containers sharing a
 * directory make a pid check unsafe): every open locker holds an exclusive OS lock on its own session file
 * {@code DIR/.sessions/<rid>} for its whole life. The kernel drops that lock when the process ends, however it ends
 * (exit, crash, SIGKILL), and at a reboot. A contender that <em>takes</em> a shared lock on a claim's existing session
 * file knows that the claim's process is gone: the claim is dead at once, whatever its expiry says. Nothing else proves
 * a death: a session file that is missing (deleted by a tmp cleaner or an operator) or cannot be read says nothing, and
 * the claim lives until its expiry. The session file is touched (through the locker's own channel) as the locker
 * works, so an age-based cleaner leaves it alone.
 *
 * <p>Within one JVM a session is never probed through the file (the probe's channel, when closed, could drop the
 * owner's lock, and the JDK refuses overlapping locks in one JVM): the rids of this JVM's open lockers are kept in a
 * set, and they are alive. Probes of other processes' sessions are serialised in the JVM for the same reason. A rid is
 * random per locker instance, so a dead session never comes back: dead rids are remembered (a bounded set).
 */
final class Sessions implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(Sessions.class);

    /** The rids of the lockers open in this JVM (a rid is unique per instance). */
    private static final Set<String> OPEN_HERE = ConcurrentHashMap.newKeySet();
    private static final long TOUCH_EVERY_NANOS = java.time.Duration.ofMinutes(10).toNanos();
    private static final Object PROBES = new Object();
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
    private final FileChannel channel;
    private final FileLock lock;
    private final int length;
    private volatile long touched = System.nanoTime();

    private Sessions(LockDirectory directory, String rid, Path file, FileChannel channel, FileLock lock, int length) {
        this.directory = directory;
        this.rid = rid;
        this.file = file;
        this.channel = channel;
        this.lock = lock;
        this.length = length;
    }

    /** Starts the session of the locker {@code rid}: creates and locks its session file, which says who it is. */
    static Sessions start(LockDirectory directory, String rid, LockOwner owner) throws IOException {
        Path file = fileOf(directory, rid);
        // locked under a hidden name first, then renamed (the lock stays with the inode): a sweep or a probe never
        // meets a session file that is not locked yet
        Path fresh = directory.sessions.resolve("." + file.getFileName() + ".new");
        OPEN_HERE.add(rid);
        FileChannel ch = null;
        try {
            if (Files.exists(file)) {
                throw new IOException("a session file for rid " + rid + " exists already: the rid is in use");
            }
            ch = FileChannel.open(fresh, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ, StandardOpenOption.WRITE);
            FileLock lock = ch.tryLock();
            if (lock == null) {
                throw new IOException("the new session file " + fresh + " is locked by another process");
            }
            byte[] text = ("rid=" + rid + "\nhost=" + owner.host() + "\npid=" + owner.pid() + "\nstarted="
                    + Instant.now() + "\n").getBytes(StandardCharsets.UTF_8);
            ch.write(ByteBuffer.wrap(text));
            Files.move(fresh, file, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
            return new Sessions(directory, rid, file, ch, lock, text.length);
        } catch (IOException | RuntimeException e) {
            OPEN_HERE.remove(rid);
            if (ch != null) {
                ch.close();
            }
            Files.deleteIfExists(fresh);
            throw e;
        }
    }

    /**
     * True when the locker {@code session} may still be running: open in this JVM, its session file missing or
     * unreadable, or locked by a process. False only when this process took a shared lock on that file.
     */
    boolean isAlive(String session) {
        if (OPEN_HERE.contains(session)) {
            return true;
        }
        if (DEAD.containsKey(session)) {
            return false;
        }
        boolean alive = probe(fileOf(directory, session));
        if (!alive) {
            DEAD.put(session, Boolean.TRUE);
        }
        return alive;
    }

    /** False only when a shared lock on {@code file} was taken (then the file is deleted: its rid never comes back). */
    private static boolean probe(Path file) {
        synchronized (PROBES) {
            try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
                FileLock probe = ch.tryLock(0, Long.MAX_VALUE, true);
                if (probe == null) {
                    return true;
                }
                try {
                    Files.deleteIfExists(file); // dead for good, deleted while we hold the lock
                } catch (IOException e) {
                    log.debug("Could not delete dead session file {}: {}", file, e.toString());
                }
                probe.release();
                return false;
            } catch (NoSuchFileException e) {
                return true; // deleted by someone (a tmp cleaner?): proves nothing, the claim's expiry decides
            } catch (OverlappingFileLockException e) {
                return true; // locked elsewhere in this JVM
            } catch (IOException e) {
                log.debug("Could not probe session file {}: {}; taking it as alive", file, e.toString());
                return true;
            }
        }
    }

    /** Deletes up to {@code max} session files of dead lockers (left by crashed processes). */
    static void sweep(LockDirectory directory, int max) {
        int n = 0;
        try (DirectoryStream<Path> files = Files.newDirectoryStream(directory.sessions)) {
            for (Path f : files) {
                if (n++ >= max) {
                    break;
                }
                String name = f.getFileName().toString();
                if (!name.startsWith(".") && OPEN_HERE.stream().noneMatch(r -> nameOf(r).equals(name))) {
                    probe(f);
                }
            }
        } catch (IOException | RuntimeException e) {
            log.debug("Could not sweep {}: {}", directory.sessions, e.toString());
        }
    }

    /**
     * Touches the session file (at most every 10 minutes), through its own channel: an age-based cleaner
     * (systemd-tmpfiles) leaves it alone while the locker works. Never through its path: opening and closing another
     * descriptor of the file would drop its lock.
     */
    void touch() {
        long now = System.nanoTime();
        if (now - touched < TOUCH_EVERY_NANOS) {
            return;
        }
        touched = now;
        try {
            channel.write(ByteBuffer.wrap(new byte[] {'\n'}), length - 1); // the last byte again: a new mtime
        } catch (IOException e) {
            log.debug("Could not touch session file {}: {}", file, e.toString());
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
            channel.close();
        } catch (IOException e) {
            log.debug("Closing session file {}: {}", file, e.toString());
        } finally {
            OPEN_HERE.remove(rid);
        }
    }

    @Override
    public String toString() {
        return "session " + rid + " in " + directory;
    }
}
