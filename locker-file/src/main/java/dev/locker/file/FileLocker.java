package dev.locker.file;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.LockInfo;
import dev.locker.api.LockOwner;
import dev.locker.api.LockPage;
import dev.locker.api.PermanentLockingException;
import dev.locker.spi.StoreException;
import dev.locker.api.TemporaryLockingException;
import dev.locker.local.AbstractLocker;
import dev.locker.local.ClaimStatus;
import dev.locker.local.ListCursor;
import dev.locker.local.LockerBuilder;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeSet;

/**
 * Locks for the processes of one host, kept in a directory of a local file system: {@code file:DIR}. No server.
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
public final class FileLocker extends AbstractLocker<ClaimStatus> {

    private static final SecureRandom RANDOM = new SecureRandom();
    private static final String LIST_CURSOR_TAG = "file1";

    private final LockDirectory directory;
    private final HostClock clock;
    private final Sessions session;
    private final long expiryNanos;

    private FileLocker(Builder b, HostClock clock, LockDirectory directory) {
        super(b);
        this.directory = directory;
        this.clock = clock;
        this.expiryNanos = config.expiry().toNanos();
        try {
            this.session = Sessions.start(directory, config.rid(), config.owner(""), config.expiry());
        } catch (IOException e) {
            StoreException se = LockDirectory.translate(e, "starting the session of locker " + config.rid());
            throw se.isTemporary() ? new TemporaryLockingException(se.getMessage(), null, null, e)
                    : new PermanentLockingException(se.getMessage(), null, null, e);
        }
        Sessions.sweep(directory, 64);
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
        return directory.dir.resolve(name(config.validate(lock)));
    }

    // ---- hooks --------------------------------------------------------------------------------------------------

    @Override
    protected ClaimStatus writeSingleLock(KeyColumn lock, LockOwner owner) {
        String name = name(lock);
        try {
            requireNotRestored();
        } catch (IllegalStateException e) {
            throw new PermanentLockingException(e.getMessage(), lock, null, e);
        }
        long started = time.nanoTime();
        LockOwner holder = owner.withSince(time.now());
        return directory.locked(name, stripe -> {
            LockFile f = load(name, lock);
            if (alive(f.claim)) {
                throw new TemporaryLockingException("lock is held by another claim in " + directory, lock, f.claim.owner,
                        remaining(f.claim), null);
            }
            byte[] id = new byte[16];
            RANDOM.nextBytes(id);
            // forced to disk as the stripe's high-water mark before the grant goes on: it survives a power loss, and a
            // lock file lost together with a wall-clock step back
            f.token = stripe.issue(Math.max(f.token + 1, micros(time.now())));
            f.claim = new LockFile.Claim(id, config.rid(), Sessions.PROCESS, clock.domain(), clock.now() + expiryNanos,
                    expiryNanos, holder);
            directory.writeLock(name, f);
            session.touch();
            return ClaimStatus.granted(id, f.token, deadline(started, config.expiry()));
        });
    }

    @Override
    protected ClaimStatus verifySingleLock(KeyColumn lock, ClaimStatus status) {
        requireNotRestored(lock);
        LockFile f = load(name(lock), lock);
        if (f.claim != null && f.claim.is(status.claimId()) && alive(f.claim)) {
            return status;
        }
        throw lostClaim(lock, f);
    }

    @Override
    protected ClaimStatus renewSingleLock(KeyColumn lock, ClaimStatus status) {
        requireNotRestored(lock);
        String name = name(lock);
        long started = time.nanoTime();
        return directory.locked(name, stripe -> {
            LockFile f = load(name, lock);
            if (f.claim == null || !f.claim.is(status.claimId()) || !alive(f.claim)) {
                throw lostClaim(lock, f);
            }
            f.claim = f.claim.renewed(clock.now() + expiryNanos);
            directory.writeLock(name, f);
            session.touch(); // keeps the session file young for age-based cleaners
            return status.renewed(deadline(started, config.expiry()));
        });
    }

    @Override
    protected void deleteSingleLock(KeyColumn lock, ClaimStatus status) {
        String name = name(lock);
        directory.locked(name, stripe -> {
            LockFile f = load(name, lock);
            if (f.claim != null && f.claim.is(status.claimId())) {
                f.claim = null;
                directory.writeLock(name, f);
            }
            return null;
        });
    }

    @Override
    protected Optional<LockOwner> readHolder(KeyColumn lock) {
        LockFile f = load(name(lock), lock);
        return alive(f.claim) ? Optional.of(f.claim.owner) : Optional.empty();
    }

    @Override
    protected boolean deleteAllClaims(KeyColumn lock) {
        String name = name(lock);
        return directory.locked(name, stripe -> {
            LockFile f = load(name, lock);
            if (f.claim == null) {
                return false;
            }
            f.claim = null;
            directory.writeLock(name, f);
            return true;
        });
    }

    @Override
    protected Optional<LockInfo> readHolding(KeyColumn lock) {
        LockFile f = load(name(lock), lock);
        return alive(f.claim) ? Optional.of(new LockInfo(lock, f.claim.owner, f.token, expiresAt(f.claim)))
                : Optional.empty();
    }

    /**
     * One step under the lock's stripe lock: the claim (whose token is the file's token while it is there) is checked,
     * then removed and recorded, so the record names exactly the claim it removed. The removal lands before the
     * record ({@link LockDirectory#writeLockAndRecords}): a failure never leaves a record of a release that did not
     * happen.
     */
    @Override
    protected boolean deleteClaimWithToken(KeyColumn lock, long token, byte[] record) {
        String name = name(lock);
        return directory.locked(name, stripe -> {
            LockFile f = load(name, lock);
            if (!alive(f.claim) || f.token != token) {
                return false;
            }
            LockFile r = records(name, lock);
            r.records.put(FORCED, record.clone());
            f.claim = null;
            directory.writeLockAndRecords(name, f, r);
            return true;
        });
    }

    @Override
    protected Optional<byte[]> readRecord(KeyColumn lock, String recordName) {
        LockFile r = records(name(lock), lock);
        return Optional.ofNullable(r.records.get(recordName)).map(byte[]::clone);
    }

    /** Atomic with the check that our claim still holds the lock (same step, same stripe lock). */
    @Override
    protected boolean writeRecord(KeyColumn lock, String recordName, byte[] value, ClaimStatus holding) {
        String name = name(lock);
        return directory.locked(name, stripe -> {
            LockFile f = load(name, lock);
            if (f.claim == null || !f.claim.is(holding.claimId()) || !alive(f.claim)) {
                return false;
            }
            LockFile r = records(name, lock);
            r.records.put(recordName, value.clone());
            directory.writeRecords(name, r);
            return true;
        });
    }

    @Override
    protected void putRecord(KeyColumn lock, String recordName, byte[] value) {
        String name = name(lock);
        directory.locked(name, stripe -> {
            LockFile r = records(name, lock);
            r.records.put(recordName, value.clone());
            directory.writeRecords(name, r);
            return null;
        });
    }

    private LockFile records(String name, KeyColumn lock) {
        LockFile r = directory.readRecords(name);
        if (r == null) {
            return LockFile.empty(lock.encoded());
        }
        if (!Arrays.equals(r.lock, lock.encoded())) {
            throw new PermanentLockingException("the records file of " + name + " belongs to another lock (a SHA-256 "
                    + "collision of two long names, or a file renamed by hand)", lock);
        }
        return r;
    }

    /**
     * One pass over the directory's entries per page, keeping in memory only the {@code limit} smallest lock file
     * names after the cursor that may belong to the prefix (names sort like their escaped keys); then one read per
     * kept file, listing those with a live claim. The cursor is the last name of the page.
     */
    @Override
    protected LockPage listHeld(byte[] keyPrefix, int limit, String cursor) {
        String after = cursor == null ? null
                : new String(ListCursor.decode(cursor, LIST_CURSOR_TAG, 1)[0], StandardCharsets.UTF_8);
        String prefix = FileNames.escape(keyPrefix, directory.caseInsensitive);
        TreeSet<String> page = new TreeSet<>();
        boolean more = false;
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(directory.dir)) {
            for (Path p : entries) {
                String name = p.getFileName().toString();
                if (name.startsWith(".") || (after != null && name.compareTo(after) <= 0) || !mayHavePrefix(name, prefix)) {
                    continue;
                }
                page.add(name);
                if (page.size() > limit) {
                    page.pollLast();
                    more = true;
                }
            }
        } catch (IOException e) {
            throw LockDirectory.translate(e, "listing " + directory);
        }
        List<LockInfo> out = new ArrayList<>();
        for (String name : page) {
            LockFile f = directory.readLock(name);
            if (f == null || !alive(f.claim)) {
                continue;
            }
            KeyColumn lock;
            try {
                lock = KeyColumn.decode(f.lock);
            } catch (IllegalArgumentException notOurs) {
                continue;
            }
            if (lock.keyStartsWith(keyPrefix) && name.equals(name(lock))) {
                out.add(new LockInfo(lock, f.claim.owner, f.token, expiresAt(f.claim)));
            }
        }
        return new LockPage(out, more ? ListCursor.encode(LIST_CURSOR_TAG, page.last().getBytes(StandardCharsets.UTF_8))
                : null);
    }

    private static boolean mayHavePrefix(String name, String escapedPrefix) {
        if (!FileNames.isHashed(name)) {
            return name.startsWith(escapedPrefix);
        }
        String kept = name.substring(0, name.indexOf('~'));
        return kept.startsWith(escapedPrefix) || escapedPrefix.startsWith(kept);
    }

    @Override
    protected void closeBackend() {
        session.close();
    }

    // ---- claims -------------------------------------------------------------------------------------------------

    private String name(KeyColumn lock) {
        return FileNames.of(lock, directory.caseInsensitive);
    }

    /** The lock's file, or an empty one; refuses a file of another lock under the same (hashed) name. */
    private LockFile load(String name, KeyColumn lock) {
        LockFile f = directory.readLock(name);
        if (f == null) {
            return LockFile.empty(lock.encoded());
        }
        if (!Arrays.equals(f.lock, lock.encoded())) {
            throw new PermanentLockingException("the lock file " + directory.dir.resolve(name) + " belongs to another "
                    + "lock (a SHA-256 collision of two long names, or a file renamed by hand)", lock);
        }
        return f;
    }

    /**
     * Refuses to go on in a process restored from a checkpoint: its boot id, time namespace or identity, read once,
     * are stale. Checked by every grant, renewal and verification, before their I/O: two small reads of {@code /proc}.
     * A read that fails is a temporary failure, never taken for a restore.
     */
    private void requireNotRestored() {
        clock.requireCurrent();
        Sessions.requireCurrent(Sessions.PROCESS);
    }

    /** Likewise for a held claim: it can no longer be judged, so it is lost. */
    private void requireNotRestored(KeyColumn lock) {
        try {
            requireNotRestored();
        } catch (IllegalStateException e) {
            throw new ExpiredLockException(e.getMessage(), lock, null, e, dev.locker.api.LossReason.EXPIRED);
        }
    }

    /** Alive: not expired on the host's clock, not from an earlier boot, and its locker's process still runs. */
    private boolean alive(LockFile.Claim c) {
        if (c == null || clock.isOtherBoot(c.domain)) {
            return false;
        }
        if (c.domain.equals(clock.domain()) && clock.now() - c.expiresAt >= 0) {
            return false;
        }
        return session.isAlive(c.session, c.process);
    }

    /** How long the claim lasts unless renewed, where this locker's clock can tell. */
    private Duration remaining(LockFile.Claim c) {
        return c.domain.equals(clock.domain()) ? Duration.ofNanos(Math.max(0, c.expiresAt - clock.now())) : null;
    }

    private Instant expiresAt(LockFile.Claim c) {
        Duration left = remaining(c);
        if (left != null) {
            return time.now().plus(left);
        }
        Instant since = c.owner.since() != null ? c.owner.since() : time.now();
        return since.plusNanos(c.lifetimeNanos);
    }

    private ExpiredLockException lostClaim(KeyColumn lock, LockFile f) {
        LockOwner other = alive(f.claim) ? f.claim.owner : null;
        return new ExpiredLockException("our claim is no longer the holder in " + directory + " (expired, its lock "
                + "force-released or its file lost)" + (other == null ? "" : "; the lock now belongs to " + other.rid()),
                lock, other, null);
    }

    private static long micros(Instant t) {
        return t.getEpochSecond() * 1_000_000L + t.getNano() / 1_000;
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
