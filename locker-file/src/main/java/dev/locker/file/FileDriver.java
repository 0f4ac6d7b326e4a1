package dev.locker.file;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.LockInfo;
import dev.locker.api.LockOwner;
import dev.locker.api.LockPage;
import dev.locker.api.LockerConfig;
import dev.locker.api.PermanentLockingException;
import dev.locker.api.TemporaryLockingException;
import dev.locker.api.TimeSource;
import dev.locker.engine.ClaimStatus;
import dev.locker.engine.ListCursor;
import dev.locker.spi.Deadlines;
import dev.locker.spi.LockDriver;
import dev.locker.spi.LockRecords;
import dev.locker.spi.StoreException;
import dev.locker.spi.Waiting;

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
import java.util.Optional;
import java.util.OptionalLong;
import java.util.TreeSet;

/**
 * The lock directory as a driver: {@link FileLocker} says how claims are kept and why that is safe. Every change of a
 * lock is one read-modify-write under the lock's OS range lock, so the write decides the holder and the token at once.
 * It keeps records in the directory's records files.
 */
final class FileDriver implements LockDriver<ClaimStatus>, LockRecords<ClaimStatus> {

    private static final SecureRandom RANDOM = new SecureRandom();
    private static final String LIST_CURSOR_TAG = "file1";

    private final LockerConfig config;
    private final TimeSource time;
    private final LockDirectory directory;
    private final HostClock clock;
    private final Sessions session;

    /** Starts this locker's session in {@code directory}, and sweeps a few sessions that ended. */
    FileDriver(LockerConfig config, HostClock clock, LockDirectory directory) {
        this.config = config;
        this.time = config.timeSource();
        this.directory = directory;
        this.clock = clock;
        try {
            this.session = Sessions.start(directory, config.rid(), config.owner(""), config.expiry());
        } catch (IOException e) {
            StoreException se = LockDirectory.translate(e, "starting the session of locker " + config.rid());
            throw se.isTemporary() ? new TemporaryLockingException(se.getMessage(), null, null, e)
                    : new PermanentLockingException(se.getMessage(), null, null, e);
        }
        Sessions.sweep(directory, 64);
    }

    @Override
    public Optional<LockRecords<ClaimStatus>> records() {
        return Optional.of(this);
    }

    // ---- the driver's operations ---------------------------------------------------------------------------------

    @Override
    public ClaimStatus write(KeyColumn lock, LockOwner owner, Duration expiry, Waiting waiting) {
        String name = name(lock);
        try {
            requireNotRestored();
        } catch (IllegalStateException e) {
            throw new PermanentLockingException(e.getMessage(), lock, null, e);
        }
        long started = time.nanoTime();
        long expiryNanos = expiry.toNanos();
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
            return ClaimStatus.granted(id, f.token, Deadlines.of(started, expiry));
        });
    }

    @Override
    public ClaimStatus verify(KeyColumn lock, ClaimStatus status) {
        requireNotRestored(lock);
        LockFile f = load(name(lock), lock);
        if (f.claim != null && f.claim.is(status.claimId()) && alive(f.claim)) {
            return status;
        }
        throw lostClaim(lock, f);
    }

    @Override
    public ClaimStatus renew(KeyColumn lock, ClaimStatus status, Duration expiry) {
        requireNotRestored(lock);
        String name = name(lock);
        long started = time.nanoTime();
        long expiryNanos = expiry.toNanos();
        return directory.locked(name, stripe -> {
            LockFile f = load(name, lock);
            if (f.claim == null || !f.claim.is(status.claimId()) || !alive(f.claim)) {
                throw lostClaim(lock, f);
            }
            f.claim = f.claim.renewed(clock.now() + expiryNanos);
            directory.writeLock(name, f);
            session.touch(); // keeps the session file young for age-based cleaners
            return status.renewed(Deadlines.of(started, expiry));
        });
    }

    @Override
    public void release(KeyColumn lock, ClaimStatus status) {
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
    public boolean remove(KeyColumn lock, OptionalLong expectedToken, byte[] record) {
        return expectedToken.isPresent() ? removeWithToken(lock, expectedToken.getAsLong(), record) : removeAll(lock);
    }

    private boolean removeAll(KeyColumn lock) {
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
    public Optional<LockInfo> readHolder(KeyColumn lock) {
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
    private boolean removeWithToken(KeyColumn lock, long token, byte[] record) {
        String name = name(lock);
        return directory.locked(name, stripe -> {
            LockFile f = load(name, lock);
            if (!alive(f.claim) || f.token != token) {
                return false;
            }
            LockFile r = records(name, lock);
            r.records.put(LockRecords.FORCED, record.clone());
            f.claim = null;
            directory.writeLockAndRecords(name, f, r);
            return true;
        });
    }

    @Override
    public Optional<byte[]> readRecord(KeyColumn lock, String recordName) {
        LockFile r = records(name(lock), lock);
        return Optional.ofNullable(r.records.get(recordName)).map(byte[]::clone);
    }

    /** Atomic with the check that our claim still holds the lock (same step, same stripe lock). */
    @Override
    public boolean writeRecord(KeyColumn lock, String recordName, byte[] value, ClaimStatus holding) {
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
    public void putRecord(KeyColumn lock, String recordName, byte[] value) {
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
    public LockPage list(byte[] keyPrefix, int limit, String cursor) {
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
    public void close() {
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
}
