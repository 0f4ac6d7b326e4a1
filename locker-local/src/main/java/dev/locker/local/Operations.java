package dev.locker.local;

import dev.locker.api.ForcedRelease;
import dev.locker.api.KeyColumn;
import dev.locker.api.LockInfo;
import dev.locker.api.LockOwner;
import dev.locker.api.LockPage;
import dev.locker.api.LockStatus;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.RunRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Optional;

/**
 * The operator's calls: who holds a lock, forced releases and their records, the last run of a job, the list of
 * held locks. Each validates its arguments before any I/O; a forced release records who took which claim and why.
 *
 * @param <S> what the backend remembers of one claim
 */
final class Operations<S extends LockStatus> {

    /** The engine logs under one name, whichever of its classes writes the line. */
    private static final Logger log = LoggerFactory.getLogger(AbstractLocker.class);

    /** The longest reason a forced release records. */
    private static final int MAX_REASON_CHARS = 1000;

    private final LockerConfig config;
    private final Backend<S> backend;
    private final Closing closing;

    Operations(LockerConfig config, Backend<S> backend, Closing closing) {
        this.config = config;
        this.backend = backend;
        this.closing = closing;
    }

    Optional<LockOwner> holder(KeyColumn lock) {
        config.validate(lock);
        closing.ensureOpen();
        try {
            return backend.readHolder(lock);
        } catch (RuntimeException e) {
            throw backend.translate(e, lock, "reading the holder");
        }
    }

    Optional<LockInfo> holding(KeyColumn lock) {
        config.validate(lock);
        closing.ensureOpen();
        try {
            return backend.readHolding(lock);
        } catch (RuntimeException e) {
            throw backend.translate(e, lock, "reading the holder");
        }
    }

    /**
     * Both forms of forceRelease: {@code expected} null removes every claim, else only the claim with that token.
     * Reads the holder and writes the record of the release before the removal: a failure before the removal
     * leaves the lock as it was.
     */
    boolean forceRelease(KeyColumn lock, String reason, Long expected) {
        config.validate(lock);
        String why = reason == null ? "" : reason;
        if (why.length() > MAX_REASON_CHARS) {
            throw new IllegalArgumentException("reason must be at most " + MAX_REASON_CHARS + " characters, was "
                    + why.length());
        }
        closing.ensureOpen();
        String said = why.isEmpty() ? "(no reason given)" : why.replaceAll("\\p{Cntrl}", " ");
        try {
            // the holder and its token go into the record: the token tells the claim taken from that holder's others
            Optional<LockInfo> holding = backend.readHolding(lock);
            if (expected != null && (holding.isEmpty() || holding.get().fencingToken() != expected)) {
                log.info("Did not force-release lock {} by locker {}: its holder is {}, not the claim with token {} "
                        + "({})", lock, config.rid(), holding.map(h -> h.holder().rid() + " (token "
                        + h.fencingToken() + ")").orElse("none"), expected, said);
                return false;
            }
            LockOwner released = holding.map(LockInfo::holder).orElse(null);
            long releasedToken = holding.map(h -> Math.max(0, h.fencingToken())).orElse(0L); // 0: not confirmed yet
            byte[] record = new ForcedRelease(config.owner(why), why, config.timeSource().now(), released,
                    releasedToken).toBytes();
            boolean any;
            if (expected == null) {
                backend.putRecord(lock, AbstractLocker.FORCED, record);
                any = backend.deleteAllClaims(lock);
            } else {
                any = backend.deleteClaimWithToken(lock, expected, record);
            }
            log.warn("Force-released lock {} ({}: {}, holder: {}) by locker {}: {}", lock,
                    expected == null ? "claims found" : "claim with token " + expected + " removed", any,
                    released == null ? "none" : released.rid(), config.rid(), said);
            return any;
        } catch (RuntimeException e) {
            throw backend.translate(e, lock, "force-releasing");
        }
    }

    Optional<ForcedRelease> lastForcedRelease(KeyColumn lock) {
        config.validate(lock);
        closing.ensureOpen();
        try {
            return backend.readRecord(lock, AbstractLocker.FORCED).map(ForcedRelease::fromBytes);
        } catch (RuntimeException e) {
            throw backend.translate(e, lock, "reading the last forced release");
        }
    }

    Optional<RunRecord> lastRun(KeyColumn job) {
        config.validate(job);
        closing.ensureOpen();
        try {
            return backend.readRecord(job, AbstractLocker.DONE).map(RunRecord::fromBytes);
        } catch (RuntimeException e) {
            throw backend.translate(e, job, "reading the last run's record");
        }
    }

    /** Validates the arguments (before any I/O), checks that the locker is open, and asks the backend. */
    LockPage list(byte[] keyPrefix, int limit, String cursor) {
        if (keyPrefix == null) {
            throw new IllegalArgumentException("keyPrefix must not be null (use an empty prefix to list every lock)");
        }
        if (limit < 1 || limit > Locker.MAX_LIST_LIMIT) {
            throw new IllegalArgumentException("limit must be 1.." + Locker.MAX_LIST_LIMIT + ", was " + limit);
        }
        if (keyPrefix.length > config.maxKeyBytes()) {
            throw new IllegalArgumentException("keyPrefix is " + keyPrefix.length + " bytes; no lock key is longer than "
                    + "maxKeyBytes=" + config.maxKeyBytes());
        }
        if (cursor != null && cursor.isEmpty()) {
            throw new IllegalArgumentException("cursor must be null (first page) or a cursor a page returned, not empty");
        }
        closing.ensureOpen();
        try {
            return backend.listHeld(keyPrefix.clone(), limit, cursor);
        } catch (IllegalArgumentException badCursor) {
            throw badCursor; // the caller's argument, refused by the backend before any I/O
        } catch (RuntimeException e) {
            throw backend.translate(e, null, "listing held locks");
        }
    }
}
