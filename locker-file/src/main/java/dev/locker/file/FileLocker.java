package dev.locker.file;

import dev.locker.api.KeyColumn;
import dev.locker.api.PermanentLockingException;
import dev.locker.api.TemporaryLockingException;
import dev.locker.engine.ClaimStatus;
import dev.locker.engine.LockerBuilder;
import dev.locker.engine.LockerEngine;
import dev.locker.spi.StoreException;

import java.nio.file.Path;
import java.util.Objects;

/**
 * Locks for the processes of one host, kept in a directory of a local file system: {@code file:DIR}. No server.
 * This class is the engine over the directory's driver ({@code FileDriver}), with the builder users call.
 *
 * <p>Each lock is one file in the directory ({@link FileNames}: {@code ls DIR} lists the locks by name) holding the
 * lock's last fencing token and its current claim ({@link LockFile}); its records (run once, forced release) are in
 * {@code DIR/.records/}. Every change of a lock is one read-modify-write under the exclusive OS lock of the lock's own
 * byte range in its stripe file, written to a temporary file and renamed over the old file ({@link LockDirectory});
 * reads need no lock (a rename is atomic). So the directory is an atomic backend: the grant, the token and the removal
 * of a dead claim are one step, and contenders leave nothing behind.
 *
 * <ul>
 *   <li>writeLock: if the lock's claim is absent or dead, write ours with token {@code max(last + 1, wall-clock
 *       microseconds, the stripe's high-water mark + 1)}, the mark forced to disk before the grant returns (the lock
 *       file is not forced: no claim outlives a power loss); otherwise refuse, naming the holder and how long its claim
 *       lasts.</li>
 *   <li>renew: only while the claim is ours and alive, its expiry moves forward in place (same claim, same token).</li>
 *   <li>release: only while the claim is ours (compare-and-delete); the token stays.</li>
 * </ul>
 *
 * <p>A claim is dead when (1) it expired on the host's clock ({@link HostClock}: {@code CLOCK_MONOTONIC} on Linux in
 * the host's terms, shared by every process of the host, never stepped), or (2) it was written in an earlier boot of
 * the host, or (3) the process of the locker that wrote it is gone, proved by taking a shared OS lock on the existing
 * session file that every open locker keeps locked ({@link Sessions}); the kernel drops a process's locks when it
 * ends however it ends, so a SIGKILLed holder's lock is free at once, without trusting process ids. A missing session
 * file proves nothing.
 *
 * <p><b>Safety argument.</b> What decides the holder: the read-modify-write of the lock's file under the lock's
 * exclusive OS range lock, which grants only when the recorded claim is absent or dead. Which clock decides expiry:
 * the host's monotonic clock (on Linux; elsewhere only the wall clock, accepted only when asked for), one clock for
 * every process of the host; the claim's expiry is set from a reading taken inside the step, so after the holder's own
 * deadline (a reading taken before the step, plus the expiry less 1%). A paused holder (SIGSTOP, a long GC) keeps its
 * session alive but its claim expires; when it resumes, its renewal, check and release find the claim gone or
 * another's, and its late writes carry a fencing token lower than the next holder's. Tokens strictly increase per
 * lock: each is above its stripe's high-water mark, forced to disk before the grant returns, so neither a deleted or
 * restored lock file nor a wall-clock step back lowers them. A process never opens a file it may hold an OS lock on
 * (closing it would drop the lock): claims of its own process are judged by expiry only, and stripe files are opened
 * under JVM-wide monitors, so other copies of this library in the JVM do not break it. Assumptions: a local file
 * system whose OS locks work between the processes that share the directory (known local types only; NFS, SMB, a
 * directory shared between a VM and its host, and unknown types are refused, the last unless the user vouches for
 * them); every process sharing the directory runs on this host's kernel (a process restored from a checkpoint, CRaC or
 * CRIU, is refused: each grant, renewal and verification first reads its boot id, time namespace and identity again);
 * nobody edits the files by hand.
 */
public final class FileLocker extends LockerEngine<ClaimStatus> {

    private final LockDirectory directory;

    private FileLocker(Builder b, HostClock clock, LockDirectory directory) {
        super(b, config -> new FileDriver(config, clock, directory));
        this.directory = directory;
    }

    /** A locker on the lock directory {@code dir} (created if missing). */
    public static Builder builder(Path dir) {
        return new Builder(dir);
    }

    /** The lock directory (its real path). */
    public Path directory() {
        return directory.dir;
    }

    /** The file of {@code lock} in the lock directory (it exists once the lock was taken). */
    public Path fileOf(KeyColumn lock) {
        return directory.dir.resolve(FileNames.of(config.validate(lock), directory.caseInsensitive));
    }

    /**
     * Options of a {@link FileLocker}: the directory, whether the wall clock may judge claims, whether a file system
     * not known to be local is accepted, and the common configuration.
     */
    public static final class Builder extends LockerBuilder<Builder> {
        private final Path dir;
        private boolean wallClock;
        private boolean trustFileSystem;

        private Builder(Path dir) {
            this.dir = Objects.requireNonNull(dir, "dir must not be null");
        }

        /**
         * Accepts the wall clock as the judge of claims where the host offers no shared monotonic clock with a boot id
         * (anything but Linux). Default false: there, the locker refuses to open. With it, a forward step of the wall
         * clock ends claims early for the other processes, which may then take a lock whose holder still believes it
         * valid (two leases); a backward step makes claims last longer. Keep the clock slewed (NTP), never stepped.
         * Without effect on Linux.
         *
         * @param accept true to accept the wall clock off Linux
         * @return this builder
         */
        public Builder wallClock(boolean accept) {
            this.wallClock = accept;
            return this;
        }

        /**
         * Accepts a lock directory on a file system whose type file: does not know to be local to this host (a FUSE
         * file system, say). Default false: the locker refuses to open there, since a file system shared between hosts
         * would give two holders of one lock. Say true only when no process of another host (or of a VM's host)
         * uses the directory and its OS locks work between this host's processes. Network file systems file: knows
         * (NFS, SMB, CephFS, JuiceFS, ...) stay refused.
         *
         * @param trust true to accept a file system type not known to be local
         * @return this builder
         */
        public Builder trustFileSystem(boolean trust) {
            this.trustFileSystem = trust;
            return this;
        }

        /**
         * Opens the lock directory (created if missing) and starts this locker's session in it.
         *
         * @throws IllegalArgumentException when the directory is on a network or shared file system, or on one not
         *         known to be local (unless {@link #trustFileSystem(boolean)})
         * @throws PermanentLockingException when it cannot be created or written (permissions, read-only), or when
         *         the host has no clock every process shares (off Linux, unless {@link #wallClock(boolean)})
         */
        public FileLocker build() {
            HostClock clock;
            try {
                clock = new HostClock(effectiveConfig().timeSource(), wallClock);
            } catch (IllegalStateException e) {
                throw new PermanentLockingException(e.getMessage(), null, null, e);
            }
            LockDirectory d;
            try {
                d = LockDirectory.open(dir, trustFileSystem);
            } catch (StoreException e) {
                throw e.isTemporary() ? new TemporaryLockingException(e.getMessage(), null, null, e)
                        : new PermanentLockingException(e.getMessage(), null, null, e);
            }
            return new FileLocker(this, clock, d);
        }
    }
}
