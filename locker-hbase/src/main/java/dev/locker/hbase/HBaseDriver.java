package dev.locker.hbase;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.LockInfo;
import dev.locker.api.LockOwner;
import dev.locker.api.LockPage;
import dev.locker.api.LockerConfig;
import dev.locker.api.TemporaryLockingException;
import dev.locker.api.TimeSource;
import dev.locker.hbase.LockRows.RowState;
import dev.locker.hbase.SeenRows.Seen;
import dev.locker.engine.ClaimStatus;
import dev.locker.spi.Deadlines;
import dev.locker.spi.LockDriver;
import dev.locker.spi.LockRecords;
import dev.locker.spi.StoreException;
import dev.locker.spi.TemporaryStoreException;
import dev.locker.spi.Waiting;
import org.apache.hadoop.hbase.CompareOperator;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.CheckAndMutate;
import org.apache.hadoop.hbase.client.CheckAndMutateResult;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.Delete;
import org.apache.hadoop.hbase.client.Increment;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.RowMutations;
import org.apache.hadoop.hbase.client.TableBuilder;
import org.apache.hadoop.hbase.filter.BinaryComparator;
import org.apache.hadoop.hbase.filter.FilterList;
import org.apache.hadoop.hbase.filter.QualifierFilter;
import org.apache.hadoop.hbase.filter.SingleColumnValueFilter;
import org.apache.hadoop.hbase.util.Bytes;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;

import static dev.locker.hbase.LockTable.COUNTER;
import static dev.locker.hbase.LockTable.FREE;
import static dev.locker.hbase.LockTable.HOLDER;
import static dev.locker.hbase.LockTable.recordColumn;
import static dev.locker.hbase.LockTable.recordTimestamp;
import static dev.locker.hbase.LockTable.row;

/**
 * The lock table as a driver: {@link HBaseLocker} says how claims are kept and why that is safe. One check-and-mutate
 * on the lock row decides the holder and issues its token at once. Its records are {@link HBaseRecords}.
 */
final class HBaseDriver implements LockDriver<ClaimStatus> {

    /** Logs under the public class's name, the one users configure. */
    private static final Logger log = LoggerFactory.getLogger(HBaseLocker.class);

    private final LockerConfig config;
    private final TimeSource time;
    private final Connection connection;
    private final boolean ownsConnection;
    private final byte[] family;
    private final byte[] tokenFamily;
    /** A claim's cell TTL: its expiry plus the region servers' clock allowance, below the claims family's TTL. */
    private final ClaimTtls ttls;
    private final String where;
    private final SeenRows seen;
    private final LockRows rows;
    private final HBaseRecords records;
    private final HBaseListing listing;
    /** Claims that grants given up on may still write: tried until given back or expired. */
    private final LateGiveBacks lateGiveBacks;

    /**
     * @param config          the configuration the locker runs with (its rid is the locker's)
     * @param connection      the open connection
     * @param ownsConnection  true to close the connection with the driver
     * @param tableName       the lock table, found or created already
     * @param options         the table's families and the region servers' clock allowance
     * @param claimsFamilyTtl the claims family's TTL as the table has it, or null when it has none
     * @param layout          the free value a release writes, as the table's descriptor said when it was opened
     * @param where           the cluster and table, for messages
     */
    HBaseDriver(LockerConfig config, Connection connection, boolean ownsConnection, TableName tableName,
                HBaseOptions options, Duration claimsFamilyTtl, TableLayout layout, String where) {
        this.config = config;
        this.time = config.timeSource();
        this.connection = connection;
        this.ownsConnection = ownsConnection;
        TableBuilder tables = HBaseClients.tables(connection, tableName);
        this.family = options.familyBytes();
        this.tokenFamily = options.tokenFamilyBytes();
        this.ttls = new ClaimTtls(options.serverClockSkew(), claimsFamilyTtl, where);
        this.where = where;
        this.seen = new SeenRows(layout);
        this.rows = new LockRows(tables, family, tokenFamily, where, seen);
        this.records = new HBaseRecords(rows, family, tokenFamily);
        this.listing = new HBaseListing(tables, family, tokenFamily, where);
        this.lateGiveBacks = new LateGiveBacks(2 * Math.max(
                connection.getConfiguration().getLong(HConstants.HBASE_RPC_TIMEOUT_KEY,
                        HConstants.DEFAULT_HBASE_RPC_TIMEOUT),
                connection.getConfiguration().getLong(HConstants.HBASE_RPC_WRITE_TIMEOUT_KEY,
                        HConstants.DEFAULT_HBASE_RPC_TIMEOUT)), connection::isClosed);
    }

    @Override
    public Optional<LockRecords<ClaimStatus>> records() {
        return Optional.of(records);
    }

    // ---- claims --------------------------------------------------------------------------------------------------

    @Override
    public ClaimStatus write(KeyColumn lock, LockOwner owner, Duration expiry, Waiting waiting) {
        byte[] row = row(lock);
        long ttl = ttls.millis(lock, expiry);
        long expiryNanos = Deadlines.saturatedNanos(expiry); // an expiry above ~292 years must not overflow
        for (int attempt = 1; ; attempt++) {
            long started = time.nanoTime(); // the cell's TTL runs on the region server from after this reading
            Instant before = time.now();
            HolderClaim claim = HolderClaim.create(owner, before, Duration.ofMillis(ttl));
            OptionalLong token = claim(lock, row, claim, ttl);
            if (token.isPresent()) {
                if (time.nanoTime() - started < expiryNanos) {
                    return ClaimStatus.granted(claim.value, token.getAsLong(), Deadlines.of(started, expiry));
                }
                // Not trusted: the validity we count from before the call is already over (and the claim may have
                // expired on the server meanwhile). Give the claim back and claim afresh.
                giveBackOrKeep(lock, row, claim);
                log.debug("Claim on {} took longer than the expiry {}: given back (attempt {})", lock, expiry, attempt);
            }
            if (attempt >= config.retries()) {
                throw new TemporaryLockingException((token.isPresent() ? "every claim took longer than the expiry "
                        + expiry : "the lock changed hands " + attempt + " times while we tried to claim it")
                        + " on " + where, lock, null, null);
            }
            if (token.isEmpty()) {
                log.debug("Holder of {} left between our check and our read; claiming again (attempt {})", lock, attempt + 1);
            }
        }
    }

    /**
     * One claim attempt: our fencing token when the region made {@code claim} the holder, empty when the lock was free
     * again by the time we read it after a refused check (it changed hands).
     *
     * <p>The grant is one check-and-mutate whose condition names the counter value {@code c} we expect ("holder cell
     * free AND counter == c", or the one cell "free@c", {@link #grant}) and which increments the counter to
     * {@code c + 1}: our token. {@code c} comes from what this locker last saw of the row ({@link #seen}), else from
     * one get. A resend of the call by the HBase client (same nonce) after the first one was applied finds the counter
     * at {@code c + 1} or beyond, or the holder cell no longer "free@c", and changes nothing. It could re-apply only
     * once our claim had expired, after {@link #write} stopped trusting the call; docs/safety.md has the argument.
     *
     * @throws TemporaryLockingException naming the holder when another claim holds the lock
     */
    private OptionalLong claim(KeyColumn lock, byte[] row, HolderClaim claim, long ttl) {
        Seen expected = seen.get(row);
        boolean fresh = expected == null; // the expectation comes from a get made for this attempt
        if (fresh) {
            RowState state = rows.read(row, "get");
            if (state.holder != null) {
                throw heldBy(lock, state);
            }
            expected = state.seen();
        }
        while (true) {
            long token = expected.counter() + 1;
            CheckAndMutate grant = grant(row, expected, claim, ttl);
            CheckAndMutateResult r;
            try {
                r = rows.checkAndMutate(grant, "checkAndMutate");
            } catch (TemporaryStoreException e) {
                // the server may have applied it, or may apply it yet: settle which before giving up, even when an
                // interrupt cut the grant (the settling and any give-back must finish)
                Seen sent = expected;
                OptionalLong ours = HBaseErrors.UNINTERRUPTIBLE.call(() -> settle(lock, row, sent, claim, token));
                if (ours.isPresent()) {
                    return ours;
                }
                throw e;
            }
            if (r.isSuccess()) {
                long counted = Bytes.toLong(r.getResult().getValue(tokenFamily, COUNTER));
                if (counted != token) {
                    // A one-cell grant met "free@c" shown again by an expired claim, with the counter past c. Its
                    // token is fresh, but a resend whose Increment the region skipped looks the same: not trusted.
                    log.debug("Grant on {} counted {}, not the expected {}: claim given back", lock, counted, token);
                    giveBackOrKeep(lock, row, claim);
                    seen.forget(row);
                    return OptionalLong.empty();
                }
                seen.remember(row, seen.releasedAt(token)); // after our release: the free value it writes
                return OptionalLong.of(token);
            }
            RowState state = rows.read(row, "get");
            if (state.isHeldBy(claim)) {
                // the client resent our check-and-mutate after the server had applied it; the resend's check failed
                return ownToken(lock, row, claim, state, token);
            }
            if (state.holder != null) {
                throw heldBy(lock, state);
            }
            if (fresh) {
                return OptionalLong.empty(); // granted and released (or expired) between our get and our check
            }
            fresh = true; // what we had seen was out of date: once more with the row as it is now
            expected = state.seen();
        }
    }

    /**
     * The grant: one check-and-mutate "holder cell free AND counter == {@code expected.counter()}" that writes our claim
     * (with its cell TTL) and increments the counter, in one row operation.
     *
     * <ul>
     *   <li>The holder cell expected at "free@c" ({@link LockTable#freeAt}), the counter at {@code c}: the check is
     *       that one cell's value. Only the release of the claim holding token {@code c} writes it, so it stands for
     *       "free AND counter == c" (docs/safety.md). The checked cell is the holder cell, as below.</li>
     *   <li>No counter yet (a lock never granted): the check is "counter absent" on that one cell. Every holder cell
     *       this library writes is written in the same row operation as an increment of the counter, which no TTL
     *       removes, so a row without a counter has no holder cell.</li>
     *   <li>Otherwise a filter (two or three {@code SingleColumnValueFilter}s): the counter equals {@code c}, and the
     *       holder cell is present with the free value expected ({@code expected.free()}), or absent (expired, or the
     *       free value outlived by the claims family's TTL). A {@code QualifierFilter} keeps one cell in the check's
     *       result: the holder cell when present, else the counter. The region server stamps the claim's Put with
     *       max(now, the timestamp of that result's first cell) (HBASE-14054), so the claim is stamped at or after the
     *       free value it replaces. Without the QualifierFilter the first cell would be the counter whenever the token
     *       family sorts first, and a claim stamped from it could land below a free value that a clock behind had
     *       stamped later, hidden; nor can a record cell (stamped 2^62 plus a token) ever be that cell, which would
     *       make the claim immortal. When the holder cell is absent no version of it is visible, so any timestamp from
     *       now on makes the claim its newest version.</li>
     * </ul>
     *
     * The counter is written by an {@code Increment} (an 8-byte long, as before), which the region server stamps
     * max(now, the counter's timestamp + 1), whatever the check returned; its result must be {@code c + 1}.
     */
    private CheckAndMutate grant(byte[] row, Seen expected, HolderClaim claim, long ttl) {
        Put put = new Put(row).addColumn(family, HOLDER, claim.value);
        put.setTTL(ttl);
        return ifFree(row, expected, put);
    }

    /**
     * {@code holder} written and the counter incremented, in one row operation, if the row is still as
     * {@code expected}: the condition of {@link #grant}.
     */
    private CheckAndMutate ifFree(byte[] row, Seen expected, Put holder) {
        RowMutations m;
        try {
            m = RowMutations.of(List.of(holder, new Increment(row).addColumn(tokenFamily, COUNTER, 1L)));
        } catch (IOException e) {
            throw HBaseErrors.translate(e, "checkAndMutate", where);
        }
        if (expected.counter() == 0) {
            return CheckAndMutate.newBuilder(row).ifNotExists(tokenFamily, COUNTER).build(m);
        }
        if (LockTable.isFreeAt(expected.free(), expected.counter())) {
            return CheckAndMutate.newBuilder(row).ifEquals(family, HOLDER, expected.free()).build(m);
        }
        FilterList check = new FilterList(FilterList.Operator.MUST_PASS_ALL);
        check.addFilter(valueIs(tokenFamily, COUNTER, CompareOperator.EQUAL, Bytes.toBytes(expected.counter()), true));
        if (expected.free() != null) {
            check.addFilter(valueIs(family, HOLDER, CompareOperator.EQUAL, expected.free(), true));
            check.addFilter(new QualifierFilter(CompareOperator.EQUAL, new BinaryComparator(HOLDER)));
        } else {
            // absent: "free or absent" and "not free or absent" both hold only when the cell is absent
            check.addFilter(valueIs(family, HOLDER, CompareOperator.EQUAL, FREE, false));
            check.addFilter(valueIs(family, HOLDER, CompareOperator.NOT_EQUAL, FREE, false));
            check.addFilter(new QualifierFilter(CompareOperator.EQUAL, new BinaryComparator(COUNTER)));
        }
        return CheckAndMutate.newBuilder(row).ifMatches(check).build(m);
    }

    private static SingleColumnValueFilter valueIs(byte[] f, byte[] q, CompareOperator op, byte[] value,
                                                   boolean requirePresent) {
        SingleColumnValueFilter filter = new SingleColumnValueFilter(f, q, op, new BinaryComparator(value));
        filter.setFilterIfMissing(requirePresent);
        filter.setLatestVersionOnly(true);
        return filter;
    }

    private TemporaryLockingException heldBy(KeyColumn lock, RowState state) {
        return new TemporaryLockingException("lock is held by another process on " + where, lock, state.holder.owner, null);
    }

    /**
     * Our claim is the holder: our grant was applied (once: it needed the counter at {@code token - 1} and left it at
     * {@code token}), and no grant came after it (every grant needs the holder cell free), so the counter is our
     * token. Checked all the same; a counter that is not our token is given back, not trusted.
     */
    private OptionalLong ownToken(KeyColumn lock, byte[] row, HolderClaim claim, RowState state, long token) {
        if (state.counter == token) {
            seen.remember(row, seen.releasedAt(token));
            return OptionalLong.of(token);
        }
        log.warn("Our claim on {} holds with the counter at {}, not our token {}: given back", lock, state.counter, token);
        giveBackOrKeep(lock, row, claim);
        seen.forget(row);
        return OptionalLong.empty();
    }

    /**
     * One check-and-mutate: the holder cell still holds our claim, then the same claim with a fresh cell TTL. The value
     * keeps its bytes while the lifetime is unchanged; a new lifetime gives the claim a new value of the same id.
     *
     * <p>A longer or equal TTL leaves the older versions in place: each expires no later than the new cell. A shorter
     * one would let an older, longer-lived version show again once the new cell expired. So a shorter renewal goes
     * the way of {@link #leave}, which deletes the older versions in the same step.
     */
    @Override
    public ClaimStatus renew(KeyColumn lock, ClaimStatus status, Duration expiry) {
        byte[] row = row(lock);
        long ttl = ttls.millis(lock, expiry);
        byte[] mine = status.claimId();
        if (ttl < HolderClaim.decode(mine).lifetime.toMillis()) {
            return setLifetime(lock, status, expiry, "; release the transaction's locks and start again");
        }
        byte[] renewed = HolderClaim.withLifetime(mine, ttl);
        long started = time.nanoTime();
        Put put = new Put(row).addColumn(family, HOLDER, renewed);
        put.setTTL(ttl);
        CheckAndMutateResult r = rows.checkAndMutate(
                CheckAndMutate.newBuilder(row).ifEquals(family, HOLDER, mine).build(put), "checkAndMutate");
        if (!r.isSuccess()) {
            RowState state = rows.read(row, "get");
            // a resend of a renewal that changed the value fails its check, though the first send was applied
            if (renewed == mine || !state.isHeldBy(renewed)) {
                throw new ExpiredLockException("our claim is no longer the holder (expired on the region server's "
                        + "clock, or force-released); release the transaction's locks and start again", lock,
                        state.holder == null ? null : state.holder.owner, null);
            }
        }
        long deadline = Deadlines.of(started, expiry);
        return renewed == mine ? status.renewed(deadline) : ClaimStatus.granted(renewed, status.fencingToken(), deadline);
    }

    /**
     * Sets our claim's cell TTL to {@code expiry}, shorter than it was if need be. A newest cell whose TTL ended
     * reveals an older version of it until a flush, so the same atomic step deletes the older versions.
     */
    @Override
    public ClaimStatus leave(KeyColumn lock, ClaimStatus status, Duration expiry) {
        return HBaseErrors.UNINTERRUPTIBLE.call(() -> setLifetime(lock, status, expiry, ""));
    }

    /**
     * Our claim with the cell TTL of {@code expiry} as its only live version: a get for the holder cell's timestamp
     * {@code s}, then one check-and-mutate that deletes every version up to {@code s} and writes the new cell.
     *
     * <p>The new cell goes in twice, with one TTL. The region server stamps a Put without a timestamp max(now, s). On
     * a clock behind that is {@code s} itself, which our own Delete masks. So a second copy carries the timestamp
     * {@code s + 1}, above the Delete, and then at or after the server's now: its TTL still runs from now at least.
     * On a clock past {@code s + 1}, the server-stamped copy is the newest, and the other expires no later. Either way
     * the visible cell lives the TTL from the server's now, and no older version outlives it.
     *
     * <p>The Delete marker stays until a major compaction, yet it hides no later write. Our cell expires only once the
     * server's clock passes {@code s + 1} plus its TTL, and every later write is stamped at that clock or above.
     */
    private ClaimStatus setLifetime(KeyColumn lock, ClaimStatus status, Duration expiry, String advice) {
        byte[] row = row(lock);
        long ttl = ttls.millis(lock, expiry);
        byte[] mine = status.claimId();
        RowState before = rows.read(row, "get");
        if (!before.isHeldBy(mine)) {
            throw new ExpiredLockException("our claim is no longer the holder (expired on the region server's clock, "
                    + "or force-released)" + advice, lock, before.holder == null ? null : before.holder.owner, null);
        }
        byte[] left = HolderClaim.withLifetime(mine, ttl);
        long started = time.nanoTime();
        Put put = new Put(row).addColumn(family, HOLDER, before.holderStamp + 1, left).addColumn(family, HOLDER, left);
        put.setTTL(ttl);
        Delete older = new Delete(row).addColumns(family, HOLDER, before.holderStamp);
        CheckAndMutateResult r;
        try {
            r = rows.checkAndMutate(CheckAndMutate.newBuilder(row).ifEquals(family, HOLDER, mine)
                    .build(RowMutations.of(List.of(older, put))), "checkAndMutate");
        } catch (IOException e) {
            throw HBaseErrors.translate(e, "checkAndMutate", where);
        }
        if (!r.isSuccess()) {
            RowState state = rows.read(row, "get");
            // a resend of an applied step fails its check, as the cell holds the new value already
            if (left == mine || !state.isHeldBy(left)) {
                throw new ExpiredLockException("our claim is no longer the holder (expired on the region server's "
                        + "clock, or force-released)" + advice, lock, state.holder == null ? null : state.holder.owner,
                        null);
            }
        }
        long deadline = Deadlines.of(started, expiry);
        return left == mine ? status.renewed(deadline) : ClaimStatus.granted(left, status.fencingToken(), deadline);
    }

    /** One get: the holder cell still holds our claim (a TTL-expired or replaced cell does not). */
    @Override
    public ClaimStatus verify(KeyColumn lock, ClaimStatus status) {
        RowState state = rows.read(row(lock), "get");
        if (state.holder != null && Arrays.equals(state.holder.value, status.claimId())) {
            return status;
        }
        throw new ExpiredLockException("our claim is no longer the holder (expired on the region server's clock, or "
                + "force-released)" + (state.holder == null ? "" : "; the lock now belongs to " + state.holder.owner.rid()),
                lock, state.holder == null ? null : state.holder.owner, null);
    }

    /** Asks and releases with the caller's interrupt flag cleared: a cancelled task still frees its lock. */
    @Override
    public boolean releaseOwned(KeyColumn lock, ClaimStatus status) {
        return HBaseErrors.UNINTERRUPTIBLE.call(() -> LockDriver.super.releaseOwned(lock, status));
    }

    /** Releases with the caller's interrupt flag cleared: a cancelled task still frees its lock. */
    @Override
    public void release(KeyColumn lock, ClaimStatus status) {
        byte[] row = row(lock);
        byte[] mine = status.claimId();
        Seen released = seen.releasedAt(status.fencingToken());
        CheckAndMutateResult r = HBaseErrors.UNINTERRUPTIBLE.call(() -> rows.checkAndMutate(
                CheckAndMutate.newBuilder(row).ifEquals(family, HOLDER, mine)
                        .build(new Put(row).addColumn(family, HOLDER, released.free())), "checkAndMutate"));
        if (r.isSuccess()) {
            seen.remember(row, released);
        } else {
            log.debug("Release of {} by {}: our claim was already gone (expired or force-released)", lock, config.rid());
        }
    }

    /**
     * One get of the holder cell (hidden by its TTL once expired) and the counter, which is the holder's token. Like
     * every read of a lock row, it leaves what it saw as the expectation of this locker's next grant.
     */
    @Override
    public Optional<LockInfo> readHolder(KeyColumn lock) {
        RowState state = rows.read(row(lock), "get");
        return state.holder == null ? Optional.empty() : Optional.of(new LockInfo(lock, state.holder.owner,
                state.counter, Instant.ofEpochMilli(state.holderStamp).plus(state.holder.lifetime)));
    }

    @Override
    public boolean remove(KeyColumn lock, OptionalLong expectedToken, byte[] record) {
        return expectedToken.isPresent() ? removeWithToken(lock, expectedToken.getAsLong(), record) : removeAll(lock);
    }

    private boolean removeAll(KeyColumn lock) {
        byte[] row = row(lock);
        for (int attempt = 0; attempt < 10; attempt++) {
            RowState state = rows.read(row, "get");
            if (state.holder == null) {
                return false;
            }
            CheckAndMutateResult r = rows.checkAndMutate(CheckAndMutate.newBuilder(row)
                    .ifEquals(family, HOLDER, state.holder.value)
                    .build(new Put(row).addColumn(family, HOLDER, FREE)), "checkAndMutate");
            if (r.isSuccess()) {
                return true;
            }
        }
        throw new TemporaryLockingException("the lock kept changing hands while force-releasing it on " + where, lock);
    }

    /**
     * One check-and-mutate on the holder cell: the claim whose grant took the counter to {@code token} (its id is
     * one per claim, so no later claim compares equal) is replaced by the free value, and the record written, in
     * one row operation; the record is stamped like {@link #putRecord}'s, with that token.
     */
    private boolean removeWithToken(KeyColumn lock, long token, byte[] record) {
        byte[] row = row(lock);
        RowState state = rows.read(row, "get");
        if (state.holder == null || state.counter != token) {
            return false;
        }
        Put free = new Put(row).addColumn(family, HOLDER, FREE);
        Put put = new Put(row).addColumn(tokenFamily, recordColumn(LockRecords.FORCED), recordTimestamp(token), record);
        try {
            return rows.checkAndMutate(CheckAndMutate.newBuilder(row).ifEquals(family, HOLDER, state.holder.value)
                    .build(RowMutations.of(List.of(free, put))), "checkAndMutate").isSuccess();
        } catch (IOException e) {
            throw HBaseErrors.translate(e, "checkAndMutate", where);
        }
    }

    // ---- listing --------------------------------------------------------------------------------------------------

    /** One bounded scan: see {@link HBaseListing}. */
    @Override
    public LockPage list(byte[] keyPrefix, int limit, String cursor) {
        return listing.page(keyPrefix, limit, cursor);
    }

    @Override
    public void close() {
        if (ownsConnection) {
            closeQuietly(connection);
        }
    }

    // ---- HBase access -------------------------------------------------------------------------------------------

    /** An expiry whose cell TTL HBase cannot set, or the claims family's TTL would outlast, is refused before any I/O. */
    @Override
    public void checkExpiry(Duration expiry) {
        ttls.of(expiry);
    }

    /**
     * After a grant whose answer we lack: our token when the region applied it, else empty (and the claim it may yet
     * write is given back when it does).
     *
     * <p>An interrupt or a timeout ends only the client's wait. The grant may still be queued on the region server
     * and land after any look. So first one check-and-mutate with the grant's own condition writes the empty free
     * value and increments the counter: the lock stays free, and the grant's check can no longer pass. When that
     * check fails instead, one get tells whether our claim is the holder. If not, and the grant can still pass (the
     * counter not past its expectation, or a one-cell check), or when we cannot tell, the claim it may write is left
     * to {@link LateGiveBacks}.
     */
    private OptionalLong settle(KeyColumn lock, byte[] row, Seen sent, HolderClaim claim, long token) {
        seen.forget(row);
        RowState state;
        try {
            if (rows.checkAndMutate(ifFree(row, sent, new Put(row).addColumn(family, HOLDER, FREE)), "checkAndMutate")
                    .isSuccess()) {
                return OptionalLong.empty();
            }
            state = rows.read(row, "get");
        } catch (StoreException failed) {
            if (Thread.currentThread().isInterrupted()) {
                throw failed; // an interrupt cut it: made again by the caller's UNINTERRUPTIBLE
            }
            giveBack(lock, row, claim);
            giveBackAfterDeadline(lock, row, claim);
            return OptionalLong.empty();
        }
        if (state.isHeldBy(claim)) {
            return ownToken(lock, row, claim, state, token);
        }
        if (state.counter == sent.counter() || LockTable.isFreeAt(sent.free(), sent.counter())) {
            // the grant still queued can land: once the holder we met leaves (the counter has not moved past the
            // grant's expectation), or where "free@c" shows again (another claim left to expire)
            giveBackAfterDeadline(lock, row, claim);
        }
        return OptionalLong.empty();
    }

    /** Gives back a claim we know was written; when that fails (a region offline), {@link LateGiveBacks} tries on. */
    private void giveBackOrKeep(KeyColumn lock, byte[] row, HolderClaim claim) {
        if (!giveBack(lock, row, claim)) {
            giveBackAfterDeadline(lock, row, claim);
        }
    }

    /** Gives {@code claim} back if a grant we gave up on writes it later: see {@link LateGiveBacks}. */
    private void giveBackAfterDeadline(KeyColumn lock, byte[] row, HolderClaim claim) {
        lateGiveBacks.add(() -> giveBack(lock, row, claim), claim.lifetime.toMillis());
    }

    /**
     * Compare-and-release of a claim we may have written but will not use (best effort: it expires anyway). It leaves
     * the empty free value, so the next grant checks the counter as well. An interrupt does not stop it.
     *
     * @return true when our claim was the holder and is free now; false when it was not, or the call failed
     */
    private boolean giveBack(KeyColumn lock, byte[] row, HolderClaim claim) {
        seen.forget(row);
        try {
            return HBaseErrors.UNINTERRUPTIBLE.call(() -> rows.checkAndMutate(CheckAndMutate.newBuilder(row)
                    .ifEquals(family, HOLDER, claim.value)
                    .build(new Put(row).addColumn(family, HOLDER, FREE)), "checkAndMutate")).isSuccess();
        } catch (StoreException releaseFailed) {
            log.debug("Could not give back an unused claim on {}; if it was written it expires within {}: {}", lock,
                    claim.lifetime, releaseFailed.toString());
            return false;
        }
    }

    private static void closeQuietly(Connection c) {
        try {
            c.close();
        } catch (IOException | RuntimeException e) {
            log.debug("Closing the HBase connection failed: {}", e.toString());
        }
    }
}
