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
 * (exit, crash, SIGKILL), and at a reboot. A contender that obtains a shared lock on a claim's session file knows
 * that the claim's process is gone: the claim is dead at once, whatever its expiry says. A session file that is
 * missing is a locker that closed (or was cleaned up): dead too.
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

    private Sessions(LockDirectory directory, String rid, Path file, FileChannel channel, FileLock lock) {
        this.directory = directory;
        this.rid = rid;
        this.file = file;
        this.channel = channel;
        this.lock = lock;
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
            String text = "rid=" + rid + "\nhost=" + owner.host() + "\npid=" + owner.pid() + "\nstarted="
                    + Instant.now() + "\n";
            ch.write(ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8)));
            Files.move(fresh, file, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
            return new Sessions(directory, rid, file, ch, lock);
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
     * True when the locker {@code session} may still be running: open in this JVM, or its session file is locked
     * by a process. False only when that file is missing or no process holds its lock.
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

    private static boolean probe(Path file) {
        synchronized (PROBES) {
            try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
                FileLock probe = ch.tryLock(0, Long.MAX_VALUE, true);
                if (probe == null) {
                    return true;
                }
                probe.release();
            } catch (NoSuchFileException e) {
                return false;
            } catch (OverlappingFileLockException e) {
                return true; // locked elsewhere in this JVM
            } catch (IOException e) {
                log.debug("Could not probe session file {}: {}; taking it as alive", file, e.toString());
                return true;
            }
            try {
                Files.deleteIfExists(file); // dead for good: its rid never comes back
            } catch (IOException e) {
                log.debug("Could not delete dead session file {}: {}", file, e.toString());
            }
            return false;
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
            lock.release();
            channel.close();
            Files.deleteIfExists(file);
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
