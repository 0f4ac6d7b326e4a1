package dev.locker.file;

import dev.locker.spi.PermanentStoreException;
import dev.locker.spi.StoreException;
import dev.locker.spi.TemporaryStoreException;
import dev.locker.spi.Uninterruptible;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * A lock directory on a local file system, and the one way its lock files change: read-modify-write under an
 * exclusive OS lock that belongs to that one lock, the new content written to a temporary file, then renamed over the
 * old one (atomic: a reader sees the old file or the new one, never a mix). Records (run once, forced release) are
 * forced to disk before the rename and the directory after it.
 *
 * <p>Layout: {@code DIR/<lock name>} one file per lock ever taken ({@link FileNames}, so {@code ls DIR} lists the
 * locks legibly); {@code DIR/.stripes/NN} 256 files, never renamed, so every process locks the same inodes: a lock
 * is guarded by a one-byte range of its stripe's file, at a position given by the SHA-256 of its name (so a process
 * stopped inside a change of one lock holds that lock only, not the other locks of its stripe, except in a grant's token
 * step: see below), and the first {@value #HEADER} bytes of the file are the stripe's token high-water mark (below); {@code DIR/.records/<lock name>}
 * the lock's records, apart so that the frequent unforced rewrites of a lock file never put them at risk;
 * {@code DIR/.tmp/} the temporary files; {@code DIR/.sessions/} the session files of open lockers ({@link Sessions}).
 *
 * <p><b>Tokens.</b> A grant issues its token through {@link Stripe#issue}: under the exclusive lock of the stripe
 * header, the token becomes {@code max(candidate, high-water + 1)} and is written in place as the new high-water mark
 * and forced to disk before the grant goes on. So no token is ever issued twice or lowered on a lock, even when its
 * lock file is lost (deleted, or not written whole after a power loss) and the wall clock stepped back meanwhile. The
 * header is the stripe's, not the lock's: a process stopped inside that step (one write and one {@code fdatasync})
 * holds up the grants, not the renewals nor releases, of every lock of its stripe, which fail as temporary after 2 s
 * until it runs again or dies (a known weakness, in the README; a mark per lock would lift it at the cost of a file
 * per lock more).
 *
 * <p><b>One JVM.</b> OS file locks belong to a process, not a thread or a channel, and closing any channel on a file
 * drops every lock the process holds on it. So within a JVM a stripe file is opened, locked, closed only while holding
 * the stripe's JVM-wide monitor: an interned string naming the directory's file key (device and inode, so two paths to
 * one directory, a bind mount, share it) and the stripe. The JVM's string table is one for every class loader, and a
 * thread inside the monitor holds the string, so every copy of this library in the JVM (web applications, plugins)
 * synchronises on the same object. Nothing waits for another process while holding it: a busy range is let go and
 * tried again.
 *
 * <p><b>Interrupts.</b> A stripe file is held through a {@link RandomAccessFile}, which no interrupt closes. Every other
 * read and write runs through {@link Uninterruptible}. So a cancelled task's release still deletes its claim.
 * The wait for another process's range ignores the interrupt too, and hands the flag back afterwards. It is short and
 * bounded (2 s), and a release or a record must not give up because its thread was cancelled. A grant waits the same
 * way: its outcome would otherwise hang on timing, and the engine honours an interrupt between its attempts.
 */
final class LockDirectory {

    static final int STRIPES = 256;
    /** The bytes of a stripe file that hold its token high-water mark (the token, then its complement). */
    static final int HEADER = 16;
    /** The longest a change waits for a lock (or a stripe header) held by another process (stopped inside?). */
    private static final long STRIPE_WAIT_NANOS = TimeUnit.SECONDS.toNanos(2);

    private static final boolean WINDOWS = System.getProperty("os.name", "").toLowerCase(Locale.ROOT)
            .startsWith("windows");

    final Path dir;
    final Path stripes;
    final Path tmp;
    final Path sessions;
    final Path records;
    /** True on a case-insensitive file system: upper-case letters are escaped in file names. */
    final boolean caseInsensitive;
    /** What names the directory in the JVM-wide monitors: its file key (device, inode), else its real path. */
    private final String key;

    private LockDirectory(Path dir, boolean caseInsensitive, String key) {
        this.dir = dir;
        this.stripes = dir.resolve(".stripes");
        this.tmp = dir.resolve(".tmp");
        this.sessions = dir.resolve(".sessions");
        this.records = dir.resolve(".records");
        this.caseInsensitive = caseInsensitive;
        this.key = key;
    }

    /**
     * Opens (creating it if needed) the lock directory {@code path}. Its file system is judged before anything is
     * made: where it does not exist yet, by its nearest existing ancestor, where it would be made.
     *
     * @param trustFileSystem accept a file system type not known to be local (see {@link LocalFileSystems})
     * @throws IllegalArgumentException when it is on a network or shared file system, on one not known to be local
     *         (unless {@code trustFileSystem}), or not a directory
     * @throws StoreException when it cannot be created or read
     */
    static LockDirectory open(Path path, boolean trustFileSystem) {
        try {
            refuseFileSystemOf(path, nearestExisting(path), trustFileSystem); // before anything is made in a refused place
            Files.createDirectories(path);
            Path real = path.toRealPath();
            refuseFileSystemOf(real, real, trustFileSystem);
            Files.createDirectories(real.resolve(".stripes"));
            Files.createDirectories(real.resolve(".tmp"));
            Files.createDirectories(real.resolve(".sessions"));
            Files.createDirectories(real.resolve(".records"));
            boolean caseInsensitive = Files.isDirectory(real.resolve(".SESSIONS"));
            Object fileKey = Files.readAttributes(real, BasicFileAttributes.class).fileKey();
            return new LockDirectory(real, caseInsensitive, fileKey != null ? fileKey.toString() : real.toString());
        } catch (IOException e) {
            throw translate(e, "opening the lock directory " + path);
        }
    }

    /** The real path of {@code path}, or of its nearest ancestor that exists: where a new directory would be made. */
    private static Path nearestExisting(Path path) throws IOException {
        Path existing = path.toAbsolutePath();
        while (existing.getParent() != null && !Files.exists(existing)) {
            existing = existing.getParent();
        }
        return existing.toRealPath();
    }

    /** Throws when the file system of {@code real} is refused for the lock directory {@code dir}. */
    private static void refuseFileSystemOf(Path dir, Path real, boolean trustFileSystem) throws IOException {
        String refusal = refusal(dir, LocalFileSystems.typeOf(real), trustFileSystem);
        if (refusal != null) {
            throw new IllegalArgumentException(refusal);
        }
    }

    /** Why a lock directory on a file system of {@code type} is refused, or null when it is not. */
    static String refusal(Path dir, String type, boolean trustFileSystem) {
        switch (LocalFileSystems.classify(type)) {
            case LOCAL:
                return null;
            case SHARED:
                return "file: lock directory " + dir + " is on a '" + type + "' file system, shared between hosts. "
                        + "file: works only on a file system local to one host: across hosts, OS file locks do not "
                        + "exclude each other and each host takes the others' claims for claims of an earlier boot; "
                        + "use redis://, mongodb:// or hbase:// for processes on several hosts";
            default:
                return trustFileSystem ? null : "file: lock directory " + dir + " is on a '" + type + "' file system, "
                        + "which file: does not know to be local to this host (ext4, xfs, btrfs, tmpfs, zfs, overlay "
                        + "and the like are). Shared between hosts, it would give two holders of one lock. If only "
                        + "processes of this host use the directory and its OS locks work between them, open it with "
                        + "trustFileSystem=true (URI) or trustFileSystem(true) (builder)";
        }
    }

    /** The stripe of lock file {@code name}. */
    static int stripeOf(String name) {
        return Math.floorMod(name.hashCode(), STRIPES);
    }

    /** The position of the byte of its stripe file that guards lock file {@code name}: past the header, below 2^62. */
    static long positionOf(String name) {
        byte[] h = FileNames.sha256(name.getBytes(StandardCharsets.UTF_8));
        return (1L << 32) + (ByteBuffer.wrap(h).getLong() & ((1L << 61) - 1));
    }

    /** A change of one lock's file. */
    interface Change<T> {
        T apply(Stripe stripe) throws IOException;
    }

    /** The stripe of the lock being changed, while its range is held. */
    final class Stripe {
        private final RandomAccessFile file;

        private Stripe(RandomAccessFile file) {
            this.file = file;
        }

        /**
         * Issues a token: {@code max(candidate, high-water + 1)}, recorded as the stripe's new high-water mark and
         * forced to disk before it returns.
         */
        long issue(long candidate) throws IOException {
            FileLock header = file.getChannel().tryLock(0, HEADER, false);
            if (header == null) {
                throw Busy.HEADER;
            }
            try {
                byte[] mark = new byte[HEADER];
                int read = 0;
                file.seek(0);
                for (int n; read < HEADER && (n = file.read(mark, read, HEADER - read)) > 0; ) {
                    read += n;
                }
                ByteBuffer buf = ByteBuffer.wrap(mark);
                boolean fresh = read == 0;
                long high = 0;
                if (read == HEADER && buf.getLong(0) == ~buf.getLong(8)) {
                    high = buf.getLong(0);
                } else if (!fresh) {
                    org.slf4j.LoggerFactory.getLogger(LockDirectory.class).warn("The token high-water mark of {} is "
                            + "not whole (a torn write at a power loss?): tokens go on from the lock files and the "
                            + "wall clock", stripes);
                }
                long token = Math.max(candidate, high + 1);
                file.seek(0);
                file.write(ByteBuffer.allocate(HEADER).putLong(token).putLong(~token).array());
                file.getFD().sync();
                if (fresh) {
                    force(stripes); // a new stripe file: its entry must survive a power loss with its mark
                }
                return token;
            } finally {
                header.release();
            }
        }
    }

    /** Another process holds what a change needs: let go of everything and try again. */
    private static final class Busy extends RuntimeException {
        private static final long serialVersionUID = 1L;
        static final Busy HEADER = new Busy();

        private Busy() {
            super("the stripe header is busy", null, false, false);
        }
    }

    /**
     * Runs {@code change} while this process holds the range of {@code name} in its stripe file (and, while it does,
     * the stripe's JVM-wide monitor). Fails as temporary when another process keeps that range (or the stripe header,
     * for a token) for 2 s: a process stopped inside a change of this very lock.
     */
    <T> T locked(String name, Change<T> change) {
        int stripe = stripeOf(name);
        long position = positionOf(name);
        Path file = stripes.resolve(String.format("%02x", stripe));
        String monitor = ("dev.locker.file stripe " + stripe + " of " + key).intern();
        long deadline = System.nanoTime() + STRIPE_WAIT_NANOS;
        long pause = 1;
        while (true) {
            String busy;
            synchronized (monitor) {
                try (RandomAccessFile raf = openStripe(file)) {
                    FileLock lock = raf.getChannel().tryLock(position, 1, false);
                    if (lock == null) {
                        busy = "lock " + name + " in " + dir + " stayed locked by another process";
                    } else {
                        try {
                            return change.apply(new Stripe(raf));
                        } catch (Busy b) {
                            busy = "the token high-water mark of stripe " + stripe + " of " + dir + " stayed locked by "
                                    + "another process";
                        } finally {
                            lock.release();
                        }
                    }
                } catch (IOException e) {
                    throw translate(e, "changing " + name + " in " + dir);
                } catch (OverlappingFileLockException e) {
                    throw new IllegalStateException("stripe " + stripe + " of " + dir + " locked twice in this JVM", e);
                }
            }
            if (System.nanoTime() - deadline > 0) {
                throw new TemporaryStoreException(busy + " for " + TimeUnit.NANOSECONDS.toMillis(STRIPE_WAIT_NANOS)
                        + " ms (a process stopped inside an operation on it?)");
            }
            Uninterruptible.sleep(pause);
            pause = Math.min(pause * 2, 20);
        }
    }

    /**
     * Opens a stripe file, created if missing. Through a {@link RandomAccessFile}: no interrupt can close it, which
     * would drop this process's OS locks on it in the middle of a change.
     */
    private static RandomAccessFile openStripe(Path file) throws IOException {
        try {
            return new RandomAccessFile(file.toFile(), "rw");
        } catch (FileNotFoundException e) {
            // its message is the only detail: NIO's open names the cause (access denied, read-only, gone) by type
            FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE).close();
            throw new FileSystemException(file.toString(), null, e.getMessage());
        }
    }

    /**
     * The content of lock file {@code name}, or null when there is none (a lock never taken). A lock file that is not
     * whole (its checksum fails) is taken as free with no token: every process sees every renamed file whole (the page
     * cache), so only a power loss before an unforced rewrite reached the disk leaves one, and no claim outlives a power
     * loss; the next token is still above every earlier one (the stripe's high-water mark). A file written whole in
     * another format (a newer release) is refused: it may hold a live claim this release cannot read.
     *
     * @throws PermanentStoreException when the file is whole but not of this format
     */
    LockFile readLock(String name) {
        byte[] bytes = readBytes(dir.resolve(name));
        if (bytes == null) {
            return null;
        }
        try {
            return LockFile.fromBytes(bytes);
        } catch (LockFile.UnknownFormatException e) {
            throw new PermanentStoreException("the lock file " + dir.resolve(name) + " is not one this release of "
                    + "locker-file can read: " + e.getMessage() + ". Refused rather than taken as free: every process "
                    + "sharing the directory must run a release that reads it", e);
        } catch (IllegalArgumentException e) {
            org.slf4j.LoggerFactory.getLogger(LockDirectory.class).warn("Lock file {} is not whole ({}): a power loss "
                    + "before it reached the disk? Taken as free", dir.resolve(name), e.getMessage());
            return null;
        }
    }

    /** The records of lock {@code name} (run once, forced release), or null when it has none. */
    LockFile readRecords(String name) {
        byte[] bytes = readBytes(records.resolve(name));
        if (bytes == null) {
            return null;
        }
        try {
            return LockFile.fromBytes(bytes);
        } catch (IllegalArgumentException e) {
            throw new PermanentStoreException("the records file " + records.resolve(name) + " is corrupt ("
                    + e.getMessage() + "); it is always forced to disk before it is renamed, so the disk lost it", e);
        }
    }

    private byte[] readBytes(Path file) {
        try {
            return Uninterruptible.NIO.call(() -> Files.readAllBytes(file));
        } catch (NoSuchFileException e) {
            if (!Files.isDirectory(dir)) {
                throw new TemporaryStoreException("the lock directory " + dir + " is gone (unmounted, moved or deleted)", e);
            }
            return null;
        } catch (IOException e) {
            throw translate(e, "reading " + file);
        }
    }

    /**
     * Replaces lock file {@code name} by {@code content} (temporary file, renamed over), not forced to disk: no claim
     * outlives a power loss, and tokens survive it in the stripe's high-water mark ({@link Stripe#issue}).
     */
    void writeLock(String name, LockFile content) throws IOException {
        replace(dir, name, content, false);
    }

    /** Replaces the records of lock {@code name}, always forced to disk (a run once must stay done). */
    void writeRecords(String name, LockFile content) throws IOException {
        replace(records, name, content, true);
    }

    /**
     * Removes a claim and leaves the record of it, in the one order that never records what did not happen: both
     * files are written to temporary files first (where a full disk fails them), then the lock file is renamed (the
     * step that counts), then the records file. A failure before the lock file's rename changes nothing. A failure of
     * the records file's rename after it leaves the claim removed without its record, and is logged.
     */
    void writeLockAndRecords(String name, LockFile lock, LockFile records) throws IOException {
        Path lockTemp = tmp.resolve(name);
        Path recordsTemp = tmp.resolve("." + name); // no lock file's name starts with a dot (FileNames)
        boolean removed = false;
        try {
            writeTemp(recordsTemp, records, true);
            writeTemp(lockTemp, lock, false);
            Files.move(lockTemp, dir.resolve(name), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            removed = true;
            Files.move(recordsTemp, this.records.resolve(name), StandardCopyOption.ATOMIC_MOVE,
                    StandardCopyOption.REPLACE_EXISTING);
            force(this.records);
        } catch (IOException e) {
            Files.deleteIfExists(lockTemp);
            Files.deleteIfExists(recordsTemp);
            if (!removed) {
                throw e;
            }
            org.slf4j.LoggerFactory.getLogger(LockDirectory.class).warn("The claim on {} in {} was removed, but the "
                    + "record of its forced release could not be written: {}", name, dir, e.toString());
        }
    }

    private void replace(Path in, String name, LockFile content, boolean durable) throws IOException {
        Path temp = tmp.resolve(name);
        writeTemp(temp, content, durable);
        Files.move(temp, in.resolve(name), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        if (durable) {
            force(in);
        }
    }

    /** Writes {@code content} to the temporary file {@code temp}, forced to disk when {@code durable}. */
    private static void writeTemp(Path temp, LockFile content, boolean durable) throws IOException {
        byte[] bytes = content.toBytes();
        Uninterruptible.NIO.call(() -> {
            try (FileChannel ch = FileChannel.open(temp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                    StandardOpenOption.TRUNCATE_EXISTING)) {
                ByteBuffer buf = ByteBuffer.wrap(bytes);
                while (buf.hasRemaining()) {
                    ch.write(buf);
                }
                if (durable) {
                    ch.force(true);
                }
            }
            return null;
        });
    }

    /**
     * Forces a directory's entries to disk (Linux, macOS); a failure fails the change. A no-op on Windows, which cannot
     * open a directory as a channel (NTFS journals its renames).
     */
    static void force(Path directory) throws IOException {
        Uninterruptible.NIO.call(() -> {
            FileChannel ch;
            try {
                ch = FileChannel.open(directory, StandardOpenOption.READ);
            } catch (IOException | UnsupportedOperationException e) {
                if (WINDOWS) {
                    return null;
                }
                throw e instanceof IOException ? (IOException) e
                        : new IOException("cannot open " + directory + " to force it", e);
            }
            try (ch) {
                ch.force(true);
            }
            return null;
        });
    }

    /** A file system failure as a store failure: refusals and read-only file systems are permanent, the rest temporary. */
    static StoreException translate(IOException e, String action) {
        String reason = e instanceof FileSystemException && ((FileSystemException) e).getReason() != null
                ? ((FileSystemException) e).getReason() : e.toString();
        if (e instanceof AccessDeniedException || reason.toLowerCase(Locale.ROOT).contains("read-only")) {
            return new PermanentStoreException(action + " failed: " + reason + " (" + e.getMessage() + ")", e);
        }
        if (e instanceof NoSuchFileException) {
            return new TemporaryStoreException(action + " failed: the lock directory or a file in it is gone ("
                    + e.getMessage() + "); unmounted, moved or deleted?", e);
        }
        return new TemporaryStoreException(action + " failed: " + e, e);
    }

    @Override
    public String toString() {
        return dir.toString();
    }
}
