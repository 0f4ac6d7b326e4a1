package dev.locker.engine;

import dev.locker.api.ForcedRelease;
import dev.locker.api.KeyColumn;
import dev.locker.api.LockInfo;
import dev.locker.api.LockOwner;
import dev.locker.api.LockPage;
import dev.locker.api.LockStatus;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.RunRecord;
import dev.locker.spi.LockDriver;
import dev.locker.spi.LockRecords;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Optional;
import java.util.OptionalLong;

/**
 * The operator's calls: who holds a lock, forced releases and their records, the last run of a job, the list of
 * held locks. Each validates its arguments before any I/O; a forced release records who took which claim and why.
 *
 * @param <S> what the driver remembers of one claim
 */
final class Operations<S extends LockStatus> {

    /** The engine logs under one name, whichever of its classes writes the line. */
    private static final Logger log = LoggerFactory.getLogger(LockerEngine.class);

    /** The longest reason a forced release records. */
    private static final int MAX_REASON_CHARS = 1000;

    /** What a withdrawn record reads: no backend needs a delete of records, and no real record is empty. */
    private static final byte[] NO_RECORD = new byte[0];

    private final LockerConfig config;
    private final LockDriver<S> driver;
    /** The driver's records, or null: a forced release then leaves no record, and there is no last run to read. */
    private final LockRecords<S> records;
    private final Closing closing;

    Operations(LockerConfig config, LockDriver<S> driver, Closing closing) {
        this.config = config;
        this.driver = driver;
        this.records = driver.records().orElse(null);
        this.closing = closing;
    }

    Optional<LockOwner> holder(KeyColumn lock) {
        config.validate(lock);
        closing.ensureOpen();
        try {
            return driver.readHolder(lock).map(LockInfo::holder);
        } catch (RuntimeException e) {
            throw driver.translate(e, lock, "reading the holder");
        }
    }

    Optional<LockInfo> holding(KeyColumn lock) {
        config.validate(lock);
        closing.ensureOpen();
        try {
            return driver.readHolder(lock);
        } catch (RuntimeException e) {
            throw driver.translate(e, lock, "reading the holder");
        }
    }

    /**
     * Both forms of forceRelease: {@code expected} null removes every claim, else only the claim with that token.
     * Without a token the record goes in before the removal, so a holder that finds its claim gone finds the record
     * too. A removal that fails while the claim is still there withdraws the record again ({@link #withdraw}).
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
            Optional<LockInfo> holding = driver.readHolder(lock);
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
                Optional<byte[]> before = records == null ? Optional.empty()
                        : records.readRecord(lock, LockRecords.FORCED);
                if (records != null) {
                    records.putRecord(lock, LockRecords.FORCED, record);
                }
                try {
                    any = driver.remove(lock, OptionalLong.empty(), null);
                } catch (RuntimeException e) {
                    if (records != null) {
                        withdraw(lock, record, before, holding, e);
                    }
                    throw e;
                }
            } else {
                any = driver.remove(lock, OptionalLong.of(expected), record);
            }
            log.warn("Force-released lock {} ({}: {}, holder: {}) by locker {}: {}", lock,
                    expected == null ? "claims found" : "claim with token " + expected + " removed", any,
                    released == null ? "none" : released.rid(), config.rid(), said);
            return any;
        } catch (RuntimeException e) {
            throw driver.translate(e, lock, "force-releasing");
        }
    }

    /**
     * After a removal that failed: puts back the record that was there before ours, or an empty one, which reads as
     * none. Only while the claim we read is still there; a claim gone may have been removed, and then keeps its record.
     * A record another operator wrote meanwhile is left alone. Best effort: the removal's failure is what the caller
     * learns.
     */
    private void withdraw(KeyColumn lock, byte[] record, Optional<byte[]> before, Optional<LockInfo> holding,
            RuntimeException failure) {
        try {
            Optional<LockInfo> now = driver.readHolder(lock);
            boolean stillThere = now.map(h -> holding.isPresent() && h.holder().equals(holding.get().holder())
                    && h.fencingToken() == holding.get().fencingToken()).orElse(holding.isEmpty());
            Optional<byte[]> current = records.readRecord(lock, LockRecords.FORCED);
            if (stillThere && current.isPresent() && java.util.Arrays.equals(current.get(), record)) {
                records.putRecord(lock, LockRecords.FORCED, before.orElse(NO_RECORD));
            }
        } catch (RuntimeException e) {
            failure.addSuppressed(e);
            log.warn("Could not withdraw the record of a forced release of lock {} that failed, by locker {}: {}",
                    lock, config.rid(), e.getMessage());
        }
    }

    /** The forced-release record {@code lock} keeps, or empty: an empty record is one a failed release withdrew. */
    static Optional<ForcedRelease> forcedRecord(LockRecords<?> records, KeyColumn lock) {
        return records.readRecord(lock, LockRecords.FORCED).filter(b -> b.length > 0).map(ForcedRelease::fromBytes);
    }

    Optional<ForcedRelease> lastForcedRelease(KeyColumn lock) {
        config.validate(lock);
        closing.ensureOpen();
        try {
            return records == null ? Optional.empty() : forcedRecord(records, lock);
        } catch (RuntimeException e) {
            throw driver.translate(e, lock, "reading the last forced release");
        }
    }

    Optional<RunRecord> lastRun(KeyColumn job) {
        config.validate(job);
        closing.ensureOpen();
        try {
            return records == null ? Optional.empty()
                    : records.readRecord(job, LockRecords.DONE).map(RunRecord::fromBytes);
        } catch (RuntimeException e) {
            throw driver.translate(e, job, "reading the last run's record");
        }
    }

    /** Validates the arguments (before any I/O), checks that the locker is open, and asks the driver. */
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
            return driver.list(keyPrefix.clone(), limit, cursor);
        } catch (IllegalArgumentException badCursor) {
            throw badCursor; // the caller's argument, refused by the backend before any I/O
        } catch (RuntimeException e) {
            throw driver.translate(e, null, "listing held locks");
        }
    }
}
