package dev.locker.engine;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.LockInfo;
import dev.locker.api.LockOwner;
import dev.locker.api.LockPage;
import dev.locker.api.LockerConfig;
import dev.locker.api.TemporaryLockingException;
import dev.locker.api.TimeSource;
import dev.locker.spi.Deadlines;
import dev.locker.spi.LockDriver;
import dev.locker.spi.LockRecords;
import dev.locker.spi.Waiting;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * A {@link MemLockTable} as a driver: {@link MemLocker} says why it is safe. Each operation is one atomic compute on
 * the lock's cell, so the write decides the holder, the token and the expiry at once, and every release or renewal
 * compares the claim's token first. It keeps records in the same cell.
 */
final class MemDriver implements LockDriver<ClaimStatus>, LockRecords<ClaimStatus> {

    private static final String LIST_CURSOR_TAG = "mem1";

    private final TimeSource time;
    private final MemLockTable table;

    MemDriver(LockerConfig config, MemLockTable table) {
        this.time = config.timeSource();
        this.table = table;
    }

    @Override
    public Optional<LockRecords<ClaimStatus>> records() {
        return Optional.of(this);
    }

    // ---- the driver's operations ---------------------------------------------------------------------------------

    @Override
    public ClaimStatus write(KeyColumn lock, LockOwner owner, Duration expiry, Waiting waiting) {
        long started = time.nanoTime();
        long lifetime = Deadlines.saturatedNanos(expiry);
        LockOwner holder = owner.withSince(time.now());
        MemLockTable.Claim[] granted = new MemLockTable.Claim[1];
        MemLockTable.Claim[] refused = new MemLockTable.Claim[1];
        table.update(lock, old -> {
            MemLockTable.Cell cell = old == null ? MemLockTable.Cell.empty(lock) : old;
            MemLockTable.Claim live = cell.live();
            if (live != null) {
                refused[0] = live;
                return old;
            }
            // the expiry counts from a reading inside the compute, never before the deadline's reading
            granted[0] = new MemLockTable.Claim(table.nextToken(), holder, time, time.nanoTime() + lifetime);
            return cell.withClaim(granted[0]);
        });
        if (granted[0] == null) {
            MemLockTable.Claim other = refused[0];
            throw new TemporaryLockingException("lock is held by another claim in " + table.name(), lock,
                    other.owner(), Duration.ofNanos(other.remainingNanos()), null);
        }
        return ClaimStatus.grantedOwning(idOf(granted[0].token()), granted[0].token(), Deadlines.of(started, expiry));
    }

    @Override
    public ClaimStatus verify(KeyColumn lock, ClaimStatus status) {
        MemLockTable.Cell cell = table.get(lock);
        MemLockTable.Claim live = cell == null ? null : cell.live();
        if (live != null && live.token() == status.fencingToken()) {
            return status;
        }
        throw lost(lock, live);
    }

    @Override
    public ClaimStatus renew(KeyColumn lock, ClaimStatus status, Duration expiry) {
        long started = time.nanoTime();
        long lifetime = Deadlines.saturatedNanos(expiry);
        MemLockTable.Claim[] found = new MemLockTable.Claim[1];
        boolean[] renewed = new boolean[1];
        table.update(lock, old -> {
            MemLockTable.Claim live = old == null ? null : old.live();
            found[0] = live;
            if (live == null || live.token() != status.fencingToken()) {
                return old;
            }
            renewed[0] = true;
            // in place: same token, same holder; the expiry is set as asked, even when that shortens it
            return old.withClaim(new MemLockTable.Claim(live.token(), live.owner(), time, time.nanoTime() + lifetime));
        });
        if (!renewed[0]) {
            throw lost(lock, found[0]);
        }
        return status.renewed(Deadlines.of(started, expiry));
    }

    @Override
    public void release(KeyColumn lock, ClaimStatus status) {
        releaseOwned(lock, status);
    }

    /** One compare-and-delete that tells what it found: ours only when our claim was there and alive. */
    @Override
    public boolean releaseOwned(KeyColumn lock, ClaimStatus status) {
        boolean[] ours = new boolean[1];
        table.update(lock, old -> {
            if (old == null || old.claim() == null || old.claim().token() != status.fencingToken()) {
                return old;
            }
            ours[0] = old.claim().isAlive();
            return old.withClaim(null);
        });
        return ours[0];
    }

    @Override
    public Optional<LockInfo> readHolder(KeyColumn lock) {
        MemLockTable.Cell cell = table.get(lock);
        MemLockTable.Claim live = cell == null ? null : cell.live();
        return live == null ? Optional.empty() : Optional.of(info(lock, live));
    }

    /**
     * With a token: one compute removes the claim that carries it and leaves the record with it. Without: every
     * claim goes (the engine wrote the record before); true when a live one was there.
     */
    @Override
    public boolean remove(KeyColumn lock, OptionalLong expectedToken, byte[] record) {
        boolean[] removed = new boolean[1];
        table.update(lock, old -> {
            if (old == null || old.claim() == null) {
                return old;
            }
            MemLockTable.Claim live = old.live();
            if (expectedToken.isEmpty()) {
                removed[0] = live != null;
                return old.withClaim(null);
            }
            if (live == null || live.token() != expectedToken.getAsLong()) {
                return old;
            }
            removed[0] = true;
            return old.withClaim(null).withRecord(LockRecords.FORCED, record);
        });
        return removed[0];
    }

    /** One pass over the table per page, keeping the {@code limit} smallest keys after the cursor with a live claim. */
    @Override
    public LockPage list(byte[] keyPrefix, int limit, String cursor) {
        byte[] after = cursor == null ? null : ListCursor.decode(cursor, LIST_CURSOR_TAG, 1)[0];
        MemLockTable.Page page = table.cellsAfter(after, limit,
                cell -> cell.lock().keyStartsWith(keyPrefix) && cell.live() != null);
        List<LockInfo> out = new ArrayList<>(page.cells().size());
        for (MemLockTable.Cell cell : page.cells()) {
            MemLockTable.Claim live = cell.live(); // it may have expired since the pass: then it is left out
            if (live != null) {
                out.add(info(cell.lock(), live));
            }
        }
        return new LockPage(out, page.lastKey() == null ? null : ListCursor.encode(LIST_CURSOR_TAG, page.lastKey()));
    }

    @Override
    public void close() {
        // the table outlives its lockers: it is the store of mem:NAME for as long as the JVM runs
    }

    // ---- records ------------------------------------------------------------------------------------------------

    @Override
    public Optional<byte[]> readRecord(KeyColumn lock, String name) {
        MemLockTable.Cell cell = table.get(lock);
        byte[] value = cell == null ? null : cell.records().get(name);
        return Optional.ofNullable(value).map(byte[]::clone);
    }

    /** Atomic with the check that our claim still holds the lock: the same compute. */
    @Override
    public boolean writeRecord(KeyColumn lock, String name, byte[] value, ClaimStatus holding) {
        boolean[] written = new boolean[1];
        table.update(lock, old -> {
            MemLockTable.Claim live = old == null ? null : old.live();
            if (live == null || live.token() != holding.fencingToken()) {
                return old;
            }
            written[0] = true;
            return old.withRecord(name, value);
        });
        return written[0];
    }

    @Override
    public void putRecord(KeyColumn lock, String name, byte[] value) {
        table.update(lock, old -> (old == null ? MemLockTable.Cell.empty(lock) : old).withRecord(name, value));
    }

    // ---- helpers ------------------------------------------------------------------------------------------------

    private LockInfo info(KeyColumn lock, MemLockTable.Claim claim) {
        Instant expiresAt = time.now().plusNanos(claim.remainingNanos());
        return new LockInfo(lock, claim.owner(), claim.token(), expiresAt);
    }

    private ExpiredLockException lost(KeyColumn lock, MemLockTable.Claim live) {
        LockOwner other = live == null ? null : live.owner();
        return new ExpiredLockException("our claim is no longer the holder in " + table.name() + " (expired, or its "
                + "lock force-released)" + (other == null ? "" : "; the lock now belongs to " + other.rid()), lock,
                other, null);
    }

    /** A claim's id: its token, unique in the table. */
    private static byte[] idOf(long token) {
        return ByteBuffer.allocate(Long.BYTES).putLong(token).array();
    }
}
