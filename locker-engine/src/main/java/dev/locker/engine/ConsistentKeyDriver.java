package dev.locker.engine;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.LockInfo;
import dev.locker.api.LockOwner;
import dev.locker.api.LockPage;
import dev.locker.api.LockerConfig;
import dev.locker.api.LossReason;
import dev.locker.api.PermanentLockingException;
import dev.locker.api.TemporaryLockingException;
import dev.locker.api.TimeSource;
import dev.locker.spi.Deadlines;
import dev.locker.spi.Entry;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.spi.LockDriver;
import dev.locker.spi.LockRecords;
import dev.locker.spi.PermanentStoreException;
import dev.locker.spi.StoreException;
import dev.locker.spi.StoreTransaction;
import dev.locker.spi.TemporaryStoreException;
import dev.locker.spi.Waiting;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The wait-and-read-back protocol over any {@link KeyColumnValueStore}, as a driver: {@link ConsistentKeyLocker} says
 * what it does and why it is safe. Its write only records a claim; {@link #verify} decides the holder and issues the
 * fencing token. It keeps records in record columns of the lock row.
 */
final class ConsistentKeyDriver implements LockDriver<ConsistentKeyClaim>, LockRecords<ConsistentKeyClaim> {

    private static final Logger log = LoggerFactory.getLogger(ConsistentKeyLocker.class);
    private static final byte[] EMPTY = new byte[0];
    private static final String LIST_CURSOR_TAG = "ck1";
    /**
     * The holder part of a forced release's token column: shorter than any claim column (a claim column has at least
     * 17 bytes: timestamp, rid, nonce), so no claim is ever taken for it.
     */
    private static final byte[] FORCED_HOLDER = "forced".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

    private final LockerConfig config;
    private final TimeSource time;
    private final KeyColumnValueStore store;
    private final ExpiredClaimCleaner cleaner;
    private final boolean ownsStore;
    private final AtomicLong nonces = new AtomicLong(System.nanoTime());
    private final ClaimJudging judging;
    private final UndeletedClaims undeleted = new UndeletedClaims();

    /**
     * @param config            the configuration the locker runs with
     * @param store             the store the lock rows are in
     * @param closeStoreOnClose close the store when the locker closes
     * @param cleanerQueue      how many rows may wait for background scrubbing
     */
    ConsistentKeyDriver(LockerConfig config, KeyColumnValueStore store, boolean closeStoreOnClose, int cleanerQueue) {
        this.config = config;
        this.time = config.timeSource();
        if (config.lockWait().isZero()) {
            throw new IllegalArgumentException("lockWait must be positive for the wait-and-read-back protocol: it bounds "
                    + "how late a claim may become visible (and the clock disagreement between clients)");
        }
        checkExpiry(config.expiry());
        this.store = store;
        this.judging = new ClaimJudging(config);
        this.ownsStore = closeStoreOnClose;
        this.cleaner = config.scrubExpired() ? new ExpiredClaimCleaner(store, cleanerQueue) : null;
    }

    @Override
    public Optional<LockRecords<ConsistentKeyClaim>> records() {
        return Optional.of(this);
    }

    // ---- the driver's operations ---------------------------------------------------------------------------------

    /** A claim's validity (expiry - lockWait, less 1%) must outlast the lockWait before its read-back. */
    @Override
    public void checkExpiry(Duration expiry) {
        if (validity(0, expiry) <= Deadlines.saturatedNanos(config.lockWait())) {
            throw new IllegalArgumentException("expiry " + expiry + " is too short for lockWait "
                    + config.lockWait() + ": a claim's validity (expiry - lockWait, less 1%) must outlast the lockWait "
                    + "before its read-back, or no claim could ever be held; use an expiry above about 2 x lockWait");
        }
    }

    @Override
    public ConsistentKeyClaim write(KeyColumn lock, LockOwner owner, Duration expiry, Waiting waiting) {
        byte[] row = lock.encoded();
        List<byte[]> attempts = new ArrayList<>();
        StoreException lastFailure = null;
        for (int attempt = 1; attempt <= config.retries(); attempt++) {
            long started = time.nanoTime();
            Instant ts = time.now();
            byte[] column = ClaimCodec.column(ts, config.rid(), nonces.incrementAndGet());
            byte[] value = ClaimCodec.value(ts.plus(expiry), 0L, owner.withSince(ts), ts);
            List<byte[]> deletions = undeleted.with(lock, attempts);
            try {
                // every earlier attempt may have reached the store: each write deletes all of them, not just the last
                mutate(row, List.of(new Entry(column, value)), deletions);
            } catch (PermanentStoreException e) {
                attempts.add(column);
                deleteQuietly(lock, attempts);
                throw new PermanentLockingException("writing a claim failed permanently on store " + store.name(),
                        lock, null, e);
            } catch (TemporaryStoreException e) {
                lastFailure = e;
                attempts.add(column); // it may have been written
                log.debug("Claim write on {} failed temporarily (attempt {}/{}): {}", lock, attempt, config.retries(), e.toString());
                continue;
            } catch (RuntimeException | Error e) {
                // an unknown outcome: the write may have landed before its reply failed, so it is withdrawn
                attempts.add(column);
                withdrawAfter(e, lock, attempts);
                throw e;
            }
            undeleted.forget(lock, deletions);
            // Strictly shorter: then our write completed before ts + lockWait on every clock that agrees with ours, so
            // every claimant with a timestamp >= ours sees our claim when it reads back (equal would not order them).
            long took = time.nanoTime() - started;
            if (took < Deadlines.saturatedNanos(config.lockWait())) {
                // an earlier attempt may still land after this write deleted it: it stays ours to ignore and delete
                return new ConsistentKeyClaim(column, attempts, ts, started, validity(started, expiry), false, 0L);
            }
            log.debug("Claim write on {} took {} >= lockWait {} (attempt {}/{}); retrying", lock, Duration.ofNanos(took),
                    config.lockWait(), attempt, config.retries());
            attempts.add(column);
            lastFailure = null;
        }
        deleteQuietly(lock, attempts);
        throw new TemporaryLockingException("could not write a claim in " + config.retries() + " attempts on store "
                + store.name() + (lastFailure == null ? " (every write took longer than lockWait " + config.lockWait() + ")" : ""),
                lock, null, lastFailure);
    }

    /** A claim not held yet is checked (wait-and-read-back); a held one is asked about again. */
    @Override
    public ConsistentKeyClaim verify(KeyColumn lock, ConsistentKeyClaim claim) {
        return claim.isHeld() ? verifyHeld(lock, claim) : check(lock, claim);
    }

    private ConsistentKeyClaim check(KeyColumn lock, ConsistentKeyClaim claim) {
        byte[] row = lock.encoded();
        long waitNanos = claim.writtenAtNanos + Deadlines.saturatedNanos(config.lockWait()) - time.nanoTime();
        try {
            time.sleep(Duration.ofNanos(Math.max(0, waitNanos))); // on the monotonic clock: a wall-clock step cannot stretch it
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TemporaryLockingException("interrupted while waiting lockWait before reading the lock row", lock, null, e);
        }
        // judged at an instant before the read: a claim read as dead was dead then, and its holder cannot renew it
        ClaimJudging.Judged read = judging.read(() -> readRowRetrying(lock, row));
        LockRow r = read.row();
        ClaimWatch.Judge judge = read.judge();
        Instant wall = time.now();
        ClaimCodec.Claim own = r.find(claim.column);
        if (own == null) {
            throw new ExpiredLockException("our claim is gone from the store (expired and scrubbed, or force-released)", lock);
        }
        // dead by the wall clock, or by the time this locker watched it (a step back since): either way it is over
        if (!own.isLiveAt(wall) || !judge.isLive(own)) {
            throw new ExpiredLockException("our claim expired at " + own.expiry + " before it was checked", lock, null, null,
                    LossReason.EXPIRED);
        }
        List<byte[]> ours = ignored(lock, claim);
        ClaimCodec.Claim senior = r.seniorLive(judge, ours);
        List<byte[]> dead = r.deadColumns(judge);
        if (senior != own) {
            scrubLater(row, dead);
            throw new TemporaryLockingException("lock is held by a senior claim written at " + senior.writtenAt, lock,
                    senior.owner, judge.remaining(senior), null);
        }
        ClaimCodec.Claim holder = r.otherTokenHolder(judge, claim.column, ours);
        if (holder != null) {
            throw new TemporaryLockingException("lock is held by a claim confirmed with token " + holder.token, lock,
                    holder.owner, judge.remaining(holder), null);
        }
        long token = r.maxToken() + 1;
        List<byte[]> deletions = new ArrayList<>(r.tokenColumnsBelow(r.maxTokenColumnToken()));
        deletions.addAll(claim.earlierAttempts);
        deletions.addAll(undeleted.of(lock));
        if (config.scrubExpired()) {
            deletions.addAll(dead);
        }
        mutate(row, List.of(new Entry(claim.column, ClaimCodec.value(own.expiry, token, own.owner, own.expiryFrom)),
                new Entry(ClaimCodec.tokenColumn(token, claim.column), EMPTY)), deletions);
        ConsistentKeyClaim held = claim.held(token);
        ClaimJudging.Judged confirming = judging.read(() -> readRowRetrying(lock, row));
        String conflict = confirm(confirming.row(), confirming.judge(), lock, held);
        if (conflict != null) {
            deleteQuietly(lock, held.allColumns());
            if (conflict.startsWith("gone") || conflict.startsWith(EXPIRED)) {
                throw new ExpiredLockException("our claim is " + conflict, lock, null, null, reasonOf(conflict));
            }
            throw new TemporaryLockingException("another claim was confirmed at the same time (" + conflict
                    + "); ours was withdrawn", lock);
        }
        return held;
    }

    private ConsistentKeyClaim verifyHeld(KeyColumn lock, ConsistentKeyClaim claim) {
        ClaimJudging.Judged read = judging.read(() -> readRow(lock.encoded()));
        String conflict = confirm(read.row(), read.judge(), lock, claim);
        if (conflict != null) {
            throw new ExpiredLockException("our claim is no longer the holder: " + conflict, lock, null, null, reasonOf(conflict));
        }
        return claim;
    }

    /** Record columns: {@code 0xFE | name | 0x00 | token (8 bytes)}; neither claims nor tokens, so rows skip them. */
    private static final byte RECORD_MARK = (byte) 0xFE;

    private static byte[] recordColumn(String name, long token) {
        byte[] n = name.getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        return java.nio.ByteBuffer.allocate(1 + n.length + 1 + 8).put(RECORD_MARK).put(n).put((byte) 0).putLong(token)
                .array();
    }

    /** The record columns of {@code name}, lowest token first. */
    private List<Entry> records(byte[] row, String name) {
        byte[] start = recordColumn(name, 0);
        byte[] end = Arrays.copyOf(start, start.length - 8);
        end[end.length - 1] = 1;
        return store.getSlice(row, Arrays.copyOf(start, start.length - 8), end, tx());
    }

    @Override
    public Optional<byte[]> readRecord(KeyColumn lock, String name) {
        List<Entry> all = records(lock.encoded(), name);
        return all.isEmpty() ? Optional.empty() : Optional.of(all.get(all.size() - 1).value());
    }

    /** An operator's record goes under the highest token, so it is always the one read. */
    @Override
    public void putRecord(KeyColumn lock, String name, byte[] value) {
        mutate(lock.encoded(), List.of(new Entry(recordColumn(name, Long.MAX_VALUE), value)), List.of());
    }

    /**
     * Checked, not atomic: the row is read back and our claim must hold it; the record then goes in a column of its
     * own token, and readers take the highest token, so a writer that paused past its claim cannot replace the record
     * of a later holder.
     */
    @Override
    public boolean writeRecord(KeyColumn lock, String name, byte[] value, ConsistentKeyClaim claim) {
        byte[] row = lock.encoded();
        ClaimJudging.Judged read = judging.read(() -> readRow(row));
        if (confirm(read.row(), read.judge(), lock, claim) != null) {
            return false;
        }
        List<Entry> existing = records(row, name);
        List<byte[]> older = new ArrayList<>();
        for (Entry e : existing) {
            long token = java.nio.ByteBuffer.wrap(e.column(), e.column().length - 8, 8).getLong();
            if (token > claim.fencingToken()) {
                return false;
            }
            if (token != claim.fencingToken()) {
                older.add(e.column());
            }
        }
        mutate(row, List.of(new Entry(recordColumn(name, claim.fencingToken()), value)), older);
        return true;
    }

    @Override
    public ConsistentKeyClaim renew(KeyColumn lock, ConsistentKeyClaim claim, Duration expiry) {
        byte[] row = lock.encoded();
        long started = time.nanoTime();
        Instant now = time.now();
        ClaimJudging.Judged before = judging.read(() -> readRow(row));
        String conflict = confirm(before.row(), before.judge(), lock, claim);
        if (conflict != null) {
            throw new ExpiredLockException("cannot renew: our claim is " + conflict, lock, null, null, reasonOf(conflict));
        }
        ClaimCodec.Claim own = before.row().find(claim.column);
        Instant until = now.plus(expiry);
        if (ClaimCodec.micros(until) == ClaimCodec.micros(own.expiry)) {
            // the clock was set back by the renewal's interval: lockers of earlier builds watch a claim by its expiry
            // alone, and would keep the deadline they gave the state it replaces (this build's watch its value)
            until = until.plusNanos(1_000);
        }
        mutate(row, List.of(new Entry(claim.column, ClaimCodec.value(until, own.token, own.owner, now))), List.of());
        // the rewrite may have landed after our claim died and another holder came: confirm like a check does
        ClaimJudging.Judged confirming = judging.read(() -> readRow(row));
        conflict = confirm(confirming.row(), confirming.judge(), lock, claim);
        if (conflict != null) {
            deleteQuietly(lock, claim.allColumns());
            throw new ExpiredLockException("our renewal came too late: " + conflict + "; the rewritten claim was withdrawn",
                    lock, null, null, reasonOf(conflict));
        }
        return claim.renewed(validity(started, expiry));
    }

    @Override
    public void release(KeyColumn lock, ConsistentKeyClaim claim) {
        // the columns (timestamp, rid, nonce) are this claim's alone: deleting them cannot remove anybody else's claim
        List<byte[]> columns = claim.allColumns();
        StoreException last = null;
        for (int attempt = 1; attempt <= config.retries(); attempt++) {
            List<byte[]> deletions = undeleted.with(lock, columns);
            try {
                mutate(lock.encoded(), List.of(), deletions);
                undeleted.forget(lock, deletions);
                return;
            } catch (TemporaryStoreException e) {
                last = e;
            }
        }
        undeleted.remember(lock, columns);
        throw last;
    }

    /**
     * Walks the lock rows in key order through {@link KeyColumnValueStore#getKeys} and reads each row like
     * {@link #readHolder} (one row read per examined row; nothing is scrubbed). A lock row is
     * {@link KeyColumn#encoded()}, whose 4-byte key length comes before the key, so the rows of the locks whose key
     * starts with a non-empty prefix P are not one range but one per key length k: the rows starting with
     * {@code k || P} ({@link KeyColumn#encodedPrefix}). The listing visits those ranges in order of k and, when one is
     * exhausted, skips to the next key length that has any row with one {@code getKeys} probe after {@code k + 1}, so
     * lengths without rows cost nothing. The cursor is the last row examined (or a bare 4-byte length, the start of the
     * next range). Each call makes at most {@code 2 * limit + 16} store calls.
     */
    @Override
    public LockPage list(byte[] keyPrefix, int limit, String cursor) {
        byte[] after = cursor == null ? null : ListCursor.decode(cursor, LIST_CURSOR_TAG, 1)[0];
        boolean all = keyPrefix.length == 0;
        long keyLength = all ? 0 : Math.max(Math.max(1, keyPrefix.length), after == null ? 0 : LockRow.lengthField(after));
        List<LockInfo> out = new ArrayList<>();
        int budget = 2 * limit + 16;
        while (true) {
            int want = Math.min(limit - out.size(), budget - 1);
            if (want < 1) {
                return new LockPage(out, ListCursor.encode(LIST_CURSOR_TAG, after));
            }
            byte[] range = all ? EMPTY : KeyColumn.encodedPrefix((int) keyLength, keyPrefix);
            List<byte[]> rows = store.getKeys(range, after, want, tx());
            budget--;
            for (byte[] row : rows) {
                after = row;
                budget--;
                LockInfo held = heldLock(row, keyPrefix);
                if (held != null) {
                    out.add(held);
                }
            }
            if (rows.size() == want) {
                continue; // this range may have more rows (the loop returns once the page is full)
            }
            if (all || keyLength >= Integer.MAX_VALUE || budget < 1) {
                return all || keyLength >= Integer.MAX_VALUE ? new LockPage(out, null)
                        : new LockPage(out, ListCursor.encode(LIST_CURSOR_TAG, LockRow.lengthOnly(keyLength + 1)));
            }
            // this key length is exhausted: the first row of any longer key says which length to visit next
            List<byte[]> next = store.getKeys(EMPTY, LockRow.lengthOnly(keyLength + 1), 1, tx());
            budget--;
            if (next.isEmpty() || LockRow.lengthField(next.get(0)) > Integer.MAX_VALUE) {
                return new LockPage(out, null);
            }
            keyLength = LockRow.lengthField(next.get(0));
            after = LockRow.lengthOnly(keyLength); // every row of that length sorts after its bare length field
        }
    }

    /** The held lock of lock row {@code row} when its key starts with {@code keyPrefix}, else null. */
    private LockInfo heldLock(byte[] row, byte[] keyPrefix) {
        KeyColumn lock;
        try {
            lock = KeyColumn.decode(row);
        } catch (IllegalArgumentException notALockRow) {
            return null;
        }
        if (!lock.keyStartsWith(keyPrefix)) {
            return null;
        }
        ClaimJudging.Judged read = judging.read(() -> readRow(row));
        ClaimCodec.Claim holder = read.row().holder(read.judge());
        return holder == null ? null : new LockInfo(lock, holder.owner, holder.token, holder.expiry);
    }

    /** By token, the holder's claim only if it carries it; otherwise every claim. */
    @Override
    public boolean remove(KeyColumn lock, OptionalLong expectedToken, byte[] record) {
        return expectedToken.isPresent() ? removeWithToken(lock, expectedToken.getAsLong(), record) : removeAll(lock);
    }

    /**
     * Removes every claim column and, in the same write, a token column of the operator's one above the greatest token
     * the row records at this read ({@link #forcedTokenColumn}). Every claim whose token was worked out from a read no
     * later than this one carries at most that token, so a holder's renewal, or a claimant's check, that read the row
     * before the removal and writes its claim back after it then fails its confirm (another holder's token column as
     * high as its own): it withdraws the claim again and its holder learns it lost the lock, and the release stands. A
     * claim confirmed between this read and the write (its token not seen here) is covered too. The next grant's token
     * skips one; a claimant that wrote its claim after this read and its token before the write may get the same
     * token and back off (liveness only).
     */
    private boolean removeAll(KeyColumn lock) {
        byte[] row = lock.encoded();
        LockRow r = readRow(row);
        List<byte[]> columns = new ArrayList<>();
        for (ClaimCodec.Claim c : r.claims) {
            columns.add(c.column);
        }
        if (!columns.isEmpty()) {
            mutate(row, List.of(new Entry(forcedTokenColumn(r.maxToken() + 1), EMPTY)), columns);
        }
        return !columns.isEmpty();
    }

    @Override
    public Optional<LockInfo> readHolder(KeyColumn lock) {
        ClaimJudging.Judged read = judging.read(() -> readRow(lock.encoded()));
        ClaimCodec.Claim holder = read.row().holder(read.judge());
        return holder == null ? Optional.empty() : Optional.of(new LockInfo(lock, holder.owner, holder.token, holder.expiry));
    }

    /**
     * Removes the claim that holds the lock if it carries {@code token}: only the holder an observer sees (the live
     * claim carrying a token, as {@link #readHolder} reads it), never another column that carries the same token for
     * a moment (a claimant that wrote it late into its own dead claim). The store has no conditional write, so the
     * record goes in first, once the row shows that holder, and the column is deleted after, together with a token
     * column of the operator's carrying {@code token} ({@link #forcedTokenColumn}): a renewal of that claim in flight
     * (it read the row before the removal and writes the claim back after it) then fails its confirm, withdraws the
     * claim again and tells its holder, instead of keeping a lock this call reported released.
     */
    private boolean removeWithToken(KeyColumn lock, long token, byte[] record) {
        byte[] row = lock.encoded();
        ClaimJudging.Judged read = judging.read(() -> readRow(row));
        ClaimCodec.Claim holder = read.row().holder(read.judge());
        if (holder == null || holder.token != token) {
            return false;
        }
        putRecord(lock, LockRecords.FORCED, record);
        mutate(row, List.of(new Entry(forcedTokenColumn(token), EMPTY)), List.of(holder.column));
        return true;
    }

    /**
     * A token column of a forced release: {@code token} with {@link #FORCED_HOLDER} for its holder. Every claim that
     * carries a token up to {@code token} fails its next confirm (see {@link #confirm}: another holder's token column
     * as high as its own); the next claimant's token is above it ({@link LockRow#maxToken}), and its write removes it like
     * every token column below its own.
     */
    private static byte[] forcedTokenColumn(long token) {
        return ClaimCodec.tokenColumn(token, FORCED_HOLDER);
    }

    @Override
    public void close() {
        if (cleaner != null) {
            cleaner.close();
        }
        if (ownsStore) {
            store.close();
        }
    }

    // ---- protocol helpers ---------------------------------------------------------------------------------------

    /** A claim's deadline: its lifetime less lockWait (a peer's clock may be that far ahead), from {@code started}. */
    private long validity(long started, Duration expiry) {
        return Deadlines.of(started, expiry.minus(config.lockWait()));
    }

    /**
     * Whether the held claim {@code claim} is still the holder in {@code r}: null if it is, else what is wrong (a text
     * starting with "gone" when our claim is missing, with {@link #EXPIRED} when it is dead).
     */
    private String confirm(LockRow r, ClaimWatch.Judge judge, KeyColumn lock, ConsistentKeyClaim claim) {
        Instant wall = time.now();
        ClaimCodec.Claim own = r.find(claim.column);
        if (own == null) {
            return "gone from the store (force-released, or scrubbed as dead by another process)";
        }
        // judged like check judges it: a dead claim of ours is nobody's, even while no other claim took its place
        if (!own.isLiveAt(wall)) {
            return EXPIRED + own.expiry + " (by this process's clock)";
        }
        if (!claim.isHeld()) {
            return null; // renewing an unconfirmed claim: it only needs to be there
        }
        if (own.token != claim.fencingToken()) {
            return "rewritten with token " + own.token + ", not ours (" + claim.fencingToken() + ")";
        }
        ClaimCodec.Claim other = r.otherTokenHolder(judge, claim.column, ignored(lock, claim));
        if (other != null) {
            return "another live claim holds token " + other.token + " (" + other.owner + ")";
        }
        long higher = r.maxTokenColumnTokenOfOthers(claim.column);
        if (higher >= claim.fencingToken()) {
            return "token " + higher + " was issued to another holder after ours (" + claim.fencingToken() + ")";
        }
        return null;
    }

    /** How {@link #confirm} begins its answer for a claim of ours whose expiry passed. */
    private static final String EXPIRED = "expired at ";

    private static LossReason reasonOf(String conflict) {
        if (conflict.startsWith(EXPIRED)) {
            return LossReason.EXPIRED;
        }
        return conflict.startsWith("gone") ? LossReason.GONE : LossReason.TAKEN_OVER;
    }

    /** Columns that are ours and never the holder: earlier attempts of this claim, and released claims not yet deleted. */
    private List<byte[]> ignored(KeyColumn lock, ConsistentKeyClaim claim) {
        List<byte[]> out = new ArrayList<>(claim.earlierAttempts);
        out.addAll(undeleted.of(lock));
        return out;
    }

    // ---- store access -------------------------------------------------------------------------------------------

    private StoreTransaction tx() {
        return store.beginTransaction();
    }

    private void mutate(byte[] row, List<Entry> additions, List<byte[]> deletions) {
        StoreTransaction tx = tx();
        store.mutate(row, additions, deletions, tx);
        tx.commit();
    }

    /** Deletes {@code columns} after the unexpected failure {@code e}; a failure of the delete is suppressed in it. */
    private void withdrawAfter(Throwable e, KeyColumn lock, List<byte[]> columns) {
        try {
            deleteQuietly(lock, columns);
        } catch (RuntimeException | Error again) {
            undeleted.remember(lock, columns);
            if (again != e) {
                e.addSuppressed(again);
            }
        }
    }

    private void deleteQuietly(KeyColumn lock, List<byte[]> columns) {
        if (columns.isEmpty()) {
            return;
        }
        try {
            mutate(lock.encoded(), List.of(), columns);
        } catch (StoreException e) {
            undeleted.remember(lock, columns);
            // debug, not warn: during an outage every attempt would say it again; the columns are remembered
            log.debug("Could not delete a claim of ours on {}; it will expire (or be deleted when met again): {}", lock,
                    e.toString());
        }
    }

    private void scrubLater(byte[] row, List<byte[]> dead) {
        if (cleaner != null && !dead.isEmpty()) {
            cleaner.submit(row, dead);
        }
    }

    private LockRow readRow(byte[] row) {
        return new LockRow(store.getSlice(row, EMPTY, EMPTY, tx()));
    }

    /**
     * A check's read-back, tried up to {@code retries} times on a temporary store failure (as JanusGraph does): a read
     * changes nothing, so repeating it is always safe, and giving up at once would leave a written claim blocking the
     * lock for others until the transaction releases it. Every step still compares its deadline after the read.
     */
    private LockRow readRowRetrying(KeyColumn lock, byte[] row) {
        TemporaryStoreException last = null;
        for (int attempt = 1; attempt <= config.retries(); attempt++) {
            try {
                return readRow(row);
            } catch (TemporaryStoreException e) {
                last = e;
                log.debug("Read-back of {} failed temporarily (attempt {}/{}): {}", lock, attempt, config.retries(),
                        e.toString());
            }
        }
        throw last;
    }
}
