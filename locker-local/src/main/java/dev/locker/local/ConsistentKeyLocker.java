package dev.locker.local;

import dev.locker.api.Entry;
import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.KeyColumnValueStore;
import dev.locker.api.LockOwner;
import dev.locker.api.PermanentLockingException;
import dev.locker.api.PermanentStoreException;
import dev.locker.api.StoreException;
import dev.locker.api.StoreTransaction;
import dev.locker.api.TemporaryLockingException;
import dev.locker.api.TemporaryStoreException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * JanusGraph's wait-and-read-back protocol over any {@link KeyColumnValueStore}, with fencing, renewal and scrubbing.
 *
 * <p>writeLock writes a claim column (client timestamp + rid) into the lock's row; a write that takes longer than
 * {@code lockWait} is not trusted and is retried with a fresh timestamp, deleting the previous attempt's column.
 * checkLocks waits until {@code lockWait} has passed since the claim's timestamp, reads the row back, and holds the
 * lock only if its claim is the earliest live one (stale claims of our own rid are skipped). The holder then records
 * its fencing token — one more than the row's high-water mark — and scrubs dead claims in the same mutation.
 *
 * <p>Safety assumption (the same as JanusGraph's): the clocks of all lockers on a store agree to within
 * {@code lockWait}, and the store's reads see completed writes. Where that cannot be promised, use a native backend,
 * which orders claims on the server. The on-store format is described in {@link ClaimCodec}.
 *
 * <p>Known limit of a store without conditional writes: a {@link #forceRelease} that lands between a holder's
 * read-back and its token write (or between a renewal's read and write) is undone by that write, so the operator
 * must repeat it. Renewal refuses within {@code lockWait} of the expiry so that a scrubber whose clock runs ahead
 * cannot race it.
 */
public final class ConsistentKeyLocker extends AbstractLocker<ClaimStatus> {

    private static final Logger log = LoggerFactory.getLogger(ConsistentKeyLocker.class);
    private static final byte[] EMPTY = new byte[0];

    private final KeyColumnValueStore store;
    private final ExpiredClaimCleaner cleaner;
    private final boolean ownsStore;

    private ConsistentKeyLocker(Builder b) {
        super(b);
        if (config.lockWait().isZero()) {
            throw new IllegalArgumentException("lockWait must be positive for the wait-and-read-back protocol: it bounds "
                    + "how late a claim may become visible (and the clock disagreement between clients)");
        }
        this.store = b.store;
        this.ownsStore = b.closeStoreOnClose;
        this.cleaner = config.scrubExpired() ? new ExpiredClaimCleaner(store, b.cleanerQueue) : null;
    }

    public static Builder builder(KeyColumnValueStore store) {
        return new Builder(store);
    }

    public KeyColumnValueStore store() {
        return store;
    }

    // ---- hooks --------------------------------------------------------------------------------------------------

    @Override
    protected ClaimStatus writeSingleLock(KeyColumn lock, LockOwner owner) {
        byte[] row = lock.encoded();
        byte[] previous = null;
        StoreException lastFailure = null;
        for (int attempt = 1; attempt <= config.retries(); attempt++) {
            Instant before = time.now();
            byte[] column = ClaimCodec.column(before, config.rid());
            Instant expiry = before.plus(config.expiry());
            byte[] value = ClaimCodec.value(expiry, 0L, owner.withSince(before));
            List<byte[]> deletions = previous == null ? List.of() : List.of(previous);
            try {
                mutate(row, List.of(new Entry(column, value)), deletions);
            } catch (PermanentStoreException e) {
                deleteQuietly(row, column, previous);
                throw new PermanentLockingException("writing a claim failed permanently on store " + store.name(),
                        lock, null, e);
            } catch (TemporaryStoreException e) {
                lastFailure = e;
                previous = column; // it may have been written: the next attempt deletes it
                log.debug("Claim write on {} failed temporarily (attempt {}/{}): {}", lock, attempt, config.retries(), e.toString());
                continue;
            }
            // Strictly shorter: then our write completed at a clock reading < ts + lockWait <= any later claimant's
            // read-back time, so every claimant with a timestamp >= ours sees our claim (equal would not order them).
            Duration took = Duration.between(before, time.now());
            if (took.compareTo(config.lockWait()) < 0) {
                return ClaimStatus.written(column, before, expiry);
            }
            log.debug("Claim write on {} took {} >= lockWait {} (attempt {}/{}); retrying", lock, took,
                    config.lockWait(), attempt, config.retries());
            previous = column;
            lastFailure = null;
        }
        deleteQuietly(row, previous, null);
        throw new TemporaryLockingException("could not write a claim in " + config.retries() + " attempts on store "
                + store.name() + (lastFailure == null ? " (every write took longer than lockWait " + config.lockWait() + ")" : ""),
                lock, null, lastFailure);
    }

    @Override
    protected ClaimStatus checkSingleLock(KeyColumn lock, ClaimStatus status) {
        byte[] row = lock.encoded();
        Instant readableAt = status.writtenAt().plus(config.lockWait());
        try {
            time.sleep(Duration.between(time.now(), readableAt));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TemporaryLockingException("interrupted while waiting lockWait before reading the lock row", lock, null, e);
        }
        Row r = readRow(row);
        Instant now = time.now();
        byte[] mine = status.claimId();
        ClaimCodec.Claim own = r.find(mine);
        if (own == null) {
            throw new ExpiredLockException("our claim is gone from the store (expired and scrubbed, or force-released)", lock);
        }
        if (!own.isLiveAt(now)) {
            throw new ExpiredLockException("our claim expired at " + own.expiry + " before it was checked", lock, own.owner, null);
        }
        ClaimCodec.Claim senior = r.seniorLive(now, config.rid(), mine);
        List<byte[]> dead = r.deadColumns(now);
        if (senior != own) {
            scrubLater(row, dead);
            throw new TemporaryLockingException("lock is held by a senior claim written at " + senior.writtenAt, lock,
                    senior.owner, null);
        }
        long token = r.maxToken() + 1;
        List<Entry> additions = List.of(
                new Entry(mine, ClaimCodec.value(own.expiry, token, own.owner)),
                new Entry(ClaimCodec.TOKEN_COLUMN, ClaimCodec.tokenValue(token)));
        mutate(row, additions, config.scrubExpired() ? dead : List.of());
        return status.held(token);
    }

    @Override
    protected ClaimStatus renewSingleLock(KeyColumn lock, ClaimStatus status) {
        byte[] row = lock.encoded();
        Instant now = time.now();
        // margin of lockWait: a peer whose clock is ahead by up to lockWait may already treat us as dead
        if (!now.plus(config.lockWait()).isBefore(status.expiry())) {
            throw new ExpiredLockException("our claim expires at " + status.expiry() + " (now " + now
                    + ", margin lockWait " + config.lockWait() + "): too late to renew", lock);
        }
        byte[] mine = status.claimId();
        ClaimCodec.Claim own = null;
        for (Entry e : store.getSlice(row, mine, successor(mine), tx())) {
            if (Arrays.equals(e.column(), mine)) {
                own = ClaimCodec.decode(mine, e.value());
            }
        }
        if (own == null) {
            throw new ExpiredLockException("our claim is gone from the store (force-released or scrubbed)", lock);
        }
        Instant newExpiry = now.plus(config.expiry());
        mutate(row, List.of(new Entry(mine, ClaimCodec.value(newExpiry, own.token, own.owner))), List.of());
        return status.withExpiry(newExpiry);
    }

    @Override
    protected void deleteSingleLock(KeyColumn lock, ClaimStatus status) {
        // the column (timestamp + our rid) is ours alone: deleting it cannot remove anybody else's claim
        mutate(lock.encoded(), List.of(), List.of(status.claimId()));
    }

    @Override
    protected Optional<LockOwner> readHolder(KeyColumn lock) {
        ClaimCodec.Claim senior = readRow(lock.encoded()).seniorLive(time.now(), null, null);
        return senior == null ? Optional.empty() : Optional.of(senior.owner);
    }

    @Override
    protected boolean deleteAllClaims(KeyColumn lock) {
        byte[] row = lock.encoded();
        List<byte[]> columns = new ArrayList<>();
        for (ClaimCodec.Claim c : readRow(row).claims) {
            columns.add(c.column);
        }
        if (!columns.isEmpty()) {
            mutate(row, List.of(), columns);
        }
        return !columns.isEmpty();
    }

    @Override
    protected void closeBackend() {
        if (cleaner != null) {
            cleaner.close();
        }
        if (ownsStore) {
            store.close();
        }
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

    private void deleteQuietly(byte[] row, byte[] column, byte[] other) {
        List<byte[]> cols = new ArrayList<>(2);
        if (column != null) {
            cols.add(column);
        }
        if (other != null) {
            cols.add(other);
        }
        if (cols.isEmpty()) {
            return;
        }
        try {
            mutate(row, List.of(), cols);
        } catch (StoreException e) {
            log.warn("Could not delete a failed claim attempt on row {}; it will expire: {}", KeyColumn.decode(row), e.toString());
        }
    }

    private void scrubLater(byte[] row, List<byte[]> dead) {
        if (cleaner != null && !dead.isEmpty()) {
            cleaner.submit(row, dead);
        }
    }

    private Row readRow(byte[] row) {
        return new Row(store.getSlice(row, EMPTY, EMPTY, tx()));
    }

    static byte[] successor(byte[] column) {
        return Arrays.copyOf(column, column.length + 1);
    }

    /** A lock row as read: its claims in (timestamp, rid) order and the token high-water mark. */
    private static final class Row {
        final List<ClaimCodec.Claim> claims = new ArrayList<>();
        long highWater;

        Row(List<Entry> entries) {
            for (Entry e : entries) {
                byte[] col = e.column();
                if (Arrays.equals(col, ClaimCodec.TOKEN_COLUMN)) {
                    highWater = ClaimCodec.tokenOf(e.value());
                } else if (ClaimCodec.isClaimColumn(col)) {
                    try {
                        claims.add(ClaimCodec.decode(col, e.value()));
                    } catch (IllegalArgumentException bad) {
                        log.warn("Ignoring an unreadable claim column in a lock row: {}", bad.toString());
                    }
                }
            }
        }

        ClaimCodec.Claim find(byte[] column) {
            for (ClaimCodec.Claim c : claims) {
                if (Arrays.equals(c.column, column)) {
                    return c;
                }
            }
            return null;
        }

        /** The earliest live claim, skipping other (stale) claims of {@code ownRid} than {@code ownColumn}. */
        ClaimCodec.Claim seniorLive(Instant now, String ownRid, byte[] ownColumn) {
            for (ClaimCodec.Claim c : claims) {
                if (!c.isLiveAt(now)) {
                    continue;
                }
                if (ownRid != null && ownRid.equals(c.rid) && !Arrays.equals(c.column, ownColumn)) {
                    continue;
                }
                return c;
            }
            return null;
        }

        List<byte[]> deadColumns(Instant now) {
            List<byte[]> out = new ArrayList<>();
            for (ClaimCodec.Claim c : claims) {
                if (!c.isLiveAt(now)) {
                    out.add(c.column);
                }
            }
            return out;
        }

        long maxToken() {
            long max = highWater;
            for (ClaimCodec.Claim c : claims) {
                max = Math.max(max, c.token);
            }
            return max;
        }
    }

    /** Options of a {@link ConsistentKeyLocker}; store and config are required. */
    public static final class Builder extends LockerBuilder<Builder> {
        private final KeyColumnValueStore store;
        private boolean closeStoreOnClose;
        private int cleanerQueue = 1024;

        private Builder(KeyColumnValueStore store) {
            this.store = Objects.requireNonNull(store, "store must not be null");
        }

        /** Close the store when the locker closes (default false: the caller owns the store). */
        public Builder closeStoreOnClose(boolean on) {
            this.closeStoreOnClose = on;
            return this;
        }

        /** How many rows may wait for background scrubbing; more are dropped (they expire or are scrubbed later). */
        public Builder cleanerQueue(int n) {
            if (n < 1) {
                throw new IllegalArgumentException("cleanerQueue must be positive, was " + n);
            }
            this.cleanerQueue = n;
            return this;
        }

        public ConsistentKeyLocker build() {
            return new ConsistentKeyLocker(this);
        }
    }
}
