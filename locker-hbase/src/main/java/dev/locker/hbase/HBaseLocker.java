package dev.locker.hbase;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.LockInfo;
import dev.locker.api.LockOwner;
import dev.locker.api.LockPage;
import dev.locker.api.LockerConfig;
import dev.locker.api.PermanentLockingException;
import dev.locker.spi.StoreException;
import dev.locker.api.TemporaryLockingException;
import dev.locker.spi.TemporaryStoreException;
import dev.locker.local.AbstractLocker;
import dev.locker.local.ClaimStatus;
import dev.locker.local.ListCursor;
import dev.locker.local.LockerBuilder;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.CompareOperator;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.CheckAndMutate;
import org.apache.hadoop.hbase.client.CheckAndMutateResult;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptor;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Increment;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.RowMutations;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableBuilder;
import org.apache.hadoop.hbase.client.TableDescriptor;
import org.apache.hadoop.hbase.filter.BinaryComparator;
import org.apache.hadoop.hbase.filter.SingleColumnValueFilter;
import org.apache.hadoop.hbase.util.Bytes;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * Locks in an HBase table, decided by the region server in one atomic row operation.
 *
 * <p>The lock's row is its {@link KeyColumn#legible()} name ({@code vertex:42#name}, as {@code hbase shell} shows it;
 * injective, printable ASCII for any bytes, and a key prefix is a row prefix). Its claims family holds one cell, the holder claim (owner
 * metadata and a random claim id; empty means free), written with a per-cell TTL of {@code expiry + serverClockSkew}
 * ({@link HBaseOptions#serverClockSkew()}): the region server hides it once its own clock passes the cell's timestamp
 * plus that TTL, so a dead claim is absent to every read and every check, whatever the clients' clocks say. The token
 * family (no TTL) holds the lock's fencing counter.
 *
 * <ul>
 *   <li>writeLock = one {@code checkAndMutate}: if the holder cell is absent, expired or empty, write our claim and
 *       {@code Increment} the counter, atomically in one row operation; the incremented value is our fencing token.
 *       The dead claim it replaces is scrubbed by that same write. When the check fails, one {@code get} names the
 *       holder. Uncontended acquire: 1 round trip; contended: 2. A grant learnt only after a call that took longer than
 *       the expiry is given back and claimed afresh: the HBase client retries a call whose reply was lost with the same
 *       nonce, and if our claim expired in between (and another holder came and went), the retry re-applies the claim
 *       while the region answers the deduplicated Increment with the first call's, stale, value.</li>
 *   <li>renew = {@code checkAndMutate} "holder value is still ours" then rewrite it with a fresh TTL: in place, same
 *       claim, same token; fails once the server expired it or someone force-released it.</li>
 *   <li>release = {@code checkAndMutate} "holder value is ours" then write the empty value (1 round trip). A Delete
 *       is avoided on purpose: HBase's delete markers hide any later Put that lands in the same millisecond, which
 *       would make the next grant invisible.</li>
 *   <li>The counter only ever increases: neither release, forced release nor any TTL touches it, so every grant's
 *       token is greater than all earlier ones.</li>
 * </ul>
 *
 * <p>Contenders never leave a claim behind, so a row holds at most one live claim: the holder. The claims family's
 * TTL ({@link HBaseOptions#ttl()}) is only a safety net that must exceed every expiry; the builder checks it.
 *
 * <p><b>Safety argument.</b> What decides the holder: one {@code checkAndMutate} on the lock row, atomic on its region
 * server, which writes our claim only where the holder cell is absent, expired or empty, and increments the fencing
 * counter in the same row operation. What decides expiry: the region server's clock, through the cell's TTL. What a
 * paused holder can and cannot do: its deadline is one monotonic reading taken before the granting (or renewing) call
 * plus the expiry, less a drift allowance, compared again after each call; a grant that answered after longer than the
 * expiry is given back; renewal and release compare the holder cell with our claim's value, so after an expiry or a
 * takeover a late one changes nothing. Assumptions: writes acknowledged by the region server survive (the WAL, HBase's
 * default durability); the token family keeps no TTL (checked when the locker opens); and the clocks below.
 *
 * <p><b>Clocks.</b> Cells are stamped, and their TTL judged, by the clock of the region server that serves the lock's
 * region at that moment; a region moves between region servers (balancing, a crash, a split), and HBase lets their
 * clocks differ from the master's by up to {@code hbase.master.maxclockskew} (30 s). What that does:
 * <ul>
 *   <li>A clock behind, or stepped back, cannot hide a write. Every write of the holder cell is a check-and-mutate on
 *       that cell, and the region server stamps such a Put with max(now, the checked cell's timestamp)
 *       ({@code HRegion.checkAndMutateInternal}, HBASE-14054); an Increment gets max(now, the counter's timestamp + 1).
 *       So a grant after a release, a renewal, a release are each the cell's newest version (a tie in timestamp goes
 *       to the later write), and the fencing counter only grows ({@code HBaseServerClockTest}). Never write the holder
 *       cell with a blind Put: that rule holds only for the checked cell.</li>
 *   <li>A clock behind makes claims live longer than their expiry (by the difference) while it stays behind: liveness
 *       only. But a claim it stamped and a clock ahead then judges (after a correction forward, or on another region
 *       server) dies early by the two distances added up.</li>
 *   <li>A clock ahead, or stepped forward, makes claims die early by the difference: a region moved to a region
 *       server 20 s ahead would drop a 60 s claim 20 s before its holder stops trusting it, and grant it to a second
 *       holder. So the cell's TTL is the expiry plus {@code serverClockSkew} (default 10 s), while a holder's validity
 *       stays the expiry (less the drift allowance) on its own monotonic clock. Safe while every region server that
 *       serves the lock's region during a claim's life keeps its clock within {@code serverClockSkew / 2} of true
 *       time: then the clock that judges a claim's TTL is never more than {@code serverClockSkew} ahead of the clock
 *       that stamped it (a bound on the spread between servers, or on one step, is not enough: a clock behind at
 *       stamping and later forward steps add up). The cost is liveness: the lock of a holder that crashed is free
 *       {@code expiry + serverClockSkew} after its last grant or renewal. {@link HBaseDoctor} measures the region
 *       servers' clocks against half the allowance.</li>
 *   <li>Records (run and forced-release) are ordered by no clock: a record cell's timestamp is
 *       {@link #RECORD_TIMESTAMP_BASE} plus the fencing token it was written under (a forced release: the counter read
 *       before it), so a record written under a higher token is never hidden by one written under a lower one.</li>
 * </ul>
 */
public final class HBaseLocker extends AbstractLocker<ClaimStatus> {

    private static final Logger log = LoggerFactory.getLogger(HBaseLocker.class);

    /** The holder cell's qualifier in the claims family. */
    static final byte[] HOLDER = Bytes.toBytes("h");
    /** The fencing counter's qualifier in the token family. */
    static final byte[] COUNTER = Bytes.toBytes("n");
    private static final byte[] FREE = new byte[0];
    private static final String LIST_CURSOR_TAG = "hbase1";
    /**
     * The longest holder cell TTL (~73 million years): a cell's timestamp plus its TTL stays far inside the long range
     * of milliseconds, where HBase's expiry test {@code timestamp + ttl < now} would overflow and drop the cell at once.
     */
    static final Duration MAX_CELL_TTL = Duration.ofMillis(Long.MAX_VALUE / 4);

    private final Connection connection;
    private final boolean ownsConnection;
    private final TableName tableName;
    /** Tables whose multi-action calls run in the calling thread ({@link HBaseClients#tables}). */
    private final TableBuilder tables;
    private final byte[] family;
    private final byte[] tokenFamily;
    /** The holder cell's TTL on the region server: the expiry plus the region servers' clock allowance. */
    private final long cellTtlMillis;
    private final String where;

    private HBaseLocker(Builder b, TableName tableName, String where) {
        super(b);
        this.connection = b.connection;
        this.ownsConnection = b.closeConnectionOnClose;
        this.tableName = tableName;
        this.tables = HBaseClients.tables(b.connection, tableName);
        this.family = b.options.familyBytes();
        this.tokenFamily = b.options.tokenFamilyBytes();
        this.cellTtlMillis = cellTtl(config.expiry(), b.options.serverClockSkew()).toMillis();
        this.where = where;
    }

    /** A locker on an open connection (the caller keeps owning it unless {@link Builder#closeConnectionOnClose}). */
    public static Builder builder(Connection connection) {
        return new Builder(connection);
    }

    /**
     * Connects to the cluster of {@code options} and opens a locker that owns the connection (closed with the locker).
     * Fails within the options' operation timeout when the cluster is unreachable.
     */
    public static HBaseLocker open(HBaseOptions options, LockerConfig config) {
        validate(options, config); // bad input is refused before the connection is made
        Connection c;
        try {
            c = HBaseClients.connect(options);
        } catch (IOException e) {
            StoreException se = HBaseErrors.translate(e, "connecting", options.describe());
            throw se.isTemporary() ? new TemporaryLockingException(se.getMessage(), null, null, e)
                    : new PermanentLockingException(se.getMessage(), null, null, e);
        }
        try {
            return builder(c).options(options).config(config).closeConnectionOnClose(true).build();
        } catch (RuntimeException e) {
            closeQuietly(c);
            throw e;
        }
    }

    /** The lock table. */
    public TableName tableName() {
        return tableName;
    }

    // ---- hooks --------------------------------------------------------------------------------------------------

    @Override
    protected ClaimStatus writeSingleLock(KeyColumn lock, LockOwner owner) {
        byte[] row = row(lock);
        long ttl = ttlMillis();
        long expiryNanos = saturatedNanos(config.expiry()); // an expiry above ~292 years must not overflow
        for (int attempt = 1; ; attempt++) {
            long started = time.nanoTime(); // the cell's TTL runs on the region server from after this reading
            Instant before = time.now();
            HolderClaim claim = HolderClaim.create(owner, before, Duration.ofMillis(ttl));
            OptionalLong token = claim(lock, row, claim, ttl);
            if (token.isPresent()) {
                if (time.nanoTime() - started < expiryNanos) {
                    return ClaimStatus.granted(claim.value, token.getAsLong(), deadline(started, config.expiry()));
                }
                // Not trusted: our claim may have expired on the server during the call, another holder been granted
                // and gone, and the client's retry (same nonce) re-applied our claim with the deduplicated, stale
                // counter value. Give the claim back and claim afresh.
                giveBack(lock, row, claim);
                log.debug("Claim on {} took longer than the expiry {}: given back (attempt {})", lock, config.expiry(), attempt);
            }
            if (attempt >= config.retries()) {
                throw new TemporaryLockingException((token.isPresent() ? "every claim took longer than the expiry "
                        + config.expiry() : "the lock changed hands " + attempt + " times while we tried to claim it")
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
     * @throws TemporaryLockingException naming the holder when another claim holds the lock
     */
    private OptionalLong claim(KeyColumn lock, byte[] row, HolderClaim claim, long ttl) {
        CheckAndMutateResult r;
        try {
            Put put = new Put(row).addColumn(family, HOLDER, claim.value);
            put.setTTL(ttl);
            Increment next = new Increment(row).addColumn(tokenFamily, COUNTER, 1L);
            r = checkAndMutate(CheckAndMutate.newBuilder(row).ifEquals(family, HOLDER, FREE)
                    .build(RowMutations.of(List.of(put, next))), "checkAndMutate");
        } catch (TemporaryStoreException e) {
            // the server may have applied it before the failure reached us: look once before giving up
            OptionalLong ours = grantedToUs(lock, row, claim);
            if (ours.isPresent()) {
                return ours;
            }
            throw e;
        } catch (IOException e) {
            throw HBaseErrors.translate(e, "checkAndMutate", where);
        }
        if (r.isSuccess()) {
            return OptionalLong.of(Bytes.toLong(r.getResult().getValue(tokenFamily, COUNTER)));
        }
        RowState state = read(row, "get");
        if (state.isHeldBy(claim)) {
            // the client retried our check-and-mutate after the server had applied it: the lock is ours
            return OptionalLong.of(state.counter);
        }
        if (state.holder != null) {
            throw new TemporaryLockingException("lock is held by another process on " + where, lock, state.holder.owner, null);
        }
        return OptionalLong.empty();
    }

    @Override
    protected ClaimStatus renewSingleLock(KeyColumn lock, ClaimStatus status) {
        byte[] row = row(lock);
        byte[] mine = status.claimId();
        long started = time.nanoTime();
        Put put = new Put(row).addColumn(family, HOLDER, mine);
        put.setTTL(ttlMillis());
        CheckAndMutateResult r = checkAndMutate(CheckAndMutate.newBuilder(row).ifEquals(family, HOLDER, mine).build(put),
                "checkAndMutate");
        if (!r.isSuccess()) {
            RowState state = read(row, "get");
            throw new ExpiredLockException("our claim is no longer the holder (expired on the region server's clock, or "
                    + "force-released); release the transaction's locks and start again", lock,
                    state.holder == null ? null : state.holder.owner, null);
        }
        return status.renewed(deadline(started, config.expiry()));
    }

    /** One get: the holder cell still holds our claim (a TTL-expired or replaced cell does not). */
    @Override
    protected ClaimStatus verifySingleLock(KeyColumn lock, ClaimStatus status) {
        RowState state = read(row(lock), "get");
        if (state.holder != null && Arrays.equals(state.holder.value, status.claimId())) {
            return status;
        }
        throw new ExpiredLockException("our claim is no longer the holder (expired on the region server's clock, or "
                + "force-released)" + (state.holder == null ? "" : "; the lock now belongs to " + state.holder.owner.rid()),
                lock, state.holder == null ? null : state.holder.owner, null);
    }

    // ---- records (run once) ---------------------------------------------------------------------------------------

    /**
     * The timestamp base of a record cell: records are ordered by the fencing token they were written under, not by a
     * region server's clock, so a record cell's timestamp is this base plus that token ({@link #recordTimestamp}).
     * Far above any clock (2^62 ms, ~146 million years from 1970), so the first record of this layout outranks a
     * record of the previous one, stamped by a region server's clock, and is read instead of it.
     */
    static final long RECORD_TIMESTAMP_BASE = 1L << 62;

    /** A record cell's timestamp: ordered by the fencing token, whatever the region servers' clocks do. */
    static long recordTimestamp(long token) {
        return RECORD_TIMESTAMP_BASE + Math.max(0L, token);
    }

    /** A record is a cell of the token family (no TTL, like the token counter) in the lock's row: {@code r<name>}. */
    private static byte[] recordColumn(String name) {
        return Bytes.toBytes("r" + name);
    }

    @Override
    protected Optional<byte[]> readRecord(KeyColumn lock, String name) {
        Get get = new Get(row(lock)).addColumn(tokenFamily, recordColumn(name));
        try (Table t = tables.build()) {
            return Optional.ofNullable(t.get(get).getValue(tokenFamily, recordColumn(name)));
        } catch (IOException e) {
            throw HBaseErrors.translate(e, "get", where);
        }
    }

    /**
     * An operator's record (a forced release), written whoever holds the lock: timestamped with the lock's fencing
     * counter as read just before, so that it outranks every record of an earlier holder's time (a tie, two forced
     * releases with no grant between them, goes to the later write).
     */
    @Override
    protected void putRecord(KeyColumn lock, String name, byte[] value) {
        byte[] row = row(lock);
        long counter = read(row, "get").counter;
        try (Table t = tables.build()) {
            t.put(new Put(row).addColumn(tokenFamily, recordColumn(name), recordTimestamp(counter), value));
        } catch (IOException e) {
            throw HBaseErrors.translate(e, "put", where);
        }
    }

    /**
     * Atomic: a check-and-mutate on our holder cell (alive, by its TTL on the region server's clock). The record cell
     * carries an explicit timestamp derived from our fencing token (the region server stamps only cells without one),
     * so a record written under a higher token is never hidden by one written under a lower token, whichever clocks
     * stamped the holder cell meanwhile.
     */
    @Override
    protected boolean writeRecord(KeyColumn lock, String name, byte[] value, ClaimStatus holding) {
        byte[] row = row(lock);
        Put put = new Put(row).addColumn(tokenFamily, recordColumn(name), recordTimestamp(holding.fencingToken()), value);
        return checkAndMutate(CheckAndMutate.newBuilder(row).ifEquals(family, HOLDER, holding.claimId()).build(put),
                "checkAndMutate").isSuccess();
    }

    @Override
    protected void deleteSingleLock(KeyColumn lock, ClaimStatus status) {
        byte[] row = row(lock);
        byte[] mine = status.claimId();
        CheckAndMutateResult r = checkAndMutate(CheckAndMutate.newBuilder(row).ifEquals(family, HOLDER, mine)
                .build(new Put(row).addColumn(family, HOLDER, FREE)), "checkAndMutate");
        if (!r.isSuccess()) {
            log.debug("Release of {} by {}: our claim was already gone (expired or force-released)", lock, config.rid());
        }
    }

    @Override
    protected Optional<LockOwner> readHolder(KeyColumn lock) {
        RowState state = read(row(lock), "get");
        return state.holder == null ? Optional.empty() : Optional.of(state.holder.owner);
    }

    @Override
    protected boolean deleteAllClaims(KeyColumn lock) {
        byte[] row = row(lock);
        for (int attempt = 0; attempt < 10; attempt++) {
            RowState state = read(row, "get");
            if (state.holder == null) {
                return false;
            }
            CheckAndMutateResult r = checkAndMutate(CheckAndMutate.newBuilder(row).ifEquals(family, HOLDER, state.holder.value)
                    .build(new Put(row).addColumn(family, HOLDER, FREE)), "checkAndMutate");
            if (r.isSuccess()) {
                return true;
            }
        }
        throw new TemporaryLockingException("the lock kept changing hands while force-releasing it on " + where, lock);
    }

    /** One get of the holder cell (hidden by its TTL once expired) and the counter, which is the holder's token. */
    @Override
    protected Optional<LockInfo> readHolding(KeyColumn lock) {
        Get get = new Get(row(lock)).addColumn(family, HOLDER).addColumn(tokenFamily, COUNTER);
        try (Table t = tables.build()) {
            Result r = t.get(get);
            return r.isEmpty() ? Optional.empty() : Optional.ofNullable(heldLock(r, new byte[0]));
        } catch (IOException e) {
            throw HBaseErrors.translate(e, "get", where);
        }
    }

    /**
     * One check-and-mutate on the holder cell: the claim whose grant took the counter to {@code token} (its value is
     * random per claim, so no later claim compares equal) is replaced by the free value, and the record written, in
     * one row operation; the record is stamped like {@link #putRecord}'s, with that token.
     */
    @Override
    protected boolean deleteClaimWithToken(KeyColumn lock, long token, byte[] record) {
        byte[] row = row(lock);
        RowState state = read(row, "get");
        if (state.holder == null || state.counter != token) {
            return false;
        }
        Put free = new Put(row).addColumn(family, HOLDER, FREE);
        Put put = new Put(row).addColumn(tokenFamily, recordColumn(FORCED), recordTimestamp(token), record);
        try {
            return checkAndMutate(CheckAndMutate.newBuilder(row).ifEquals(family, HOLDER, state.holder.value)
                    .build(RowMutations.of(List.of(free, put))), "checkAndMutate").isSuccess();
        } catch (IOException e) {
            throw HBaseErrors.translate(e, "checkAndMutate", where);
        }
    }

    /**
     * One bounded {@code Scan} of the lock table per call, from the cursor's row (exclusive) or the prefix's first row,
     * to the end of the prefix's rows (a lock's row is its legible name, which keeps key prefixes), returning at most
     * {@code limit} rows ({@code caching = limit}, one RPC per region it crosses). The region servers filter: a
     * {@code SingleColumnValueFilter} keeps only rows whose holder cell is present and non-empty, and the per-cell TTL
     * already hides expired claims, so only live holders cross the network. Every row found is checked again on its
     * decoded lock. The cursor is the last row returned.
     */
    @Override
    protected LockPage listHeld(byte[] keyPrefix, int limit, String cursor) {
        byte[] after = cursor == null ? null : ListCursor.decode(cursor, LIST_CURSOR_TAG, 1)[0];
        SingleColumnValueFilter held = new SingleColumnValueFilter(family, HOLDER, CompareOperator.NOT_EQUAL,
                new BinaryComparator(FREE));
        held.setFilterIfMissing(true);
        held.setLatestVersionOnly(true);
        byte[] first = KeyColumn.legibleKeyPrefix(keyPrefix).getBytes(StandardCharsets.US_ASCII);
        byte[] end = Arrays.copyOf(first, first.length + 1);
        end[first.length] = 0x7f; // every character of a legible name is below 0x7f
        Scan scan = new Scan().addColumn(family, HOLDER).addColumn(tokenFamily, COUNTER).readVersions(1)
                .setLimit(limit).setCaching(limit).setFilter(held).withStopRow(end, false);
        if (after != null) {
            scan.withStartRow(after, false);
        } else {
            scan.withStartRow(first, true);
        }
        List<LockInfo> out = new ArrayList<>();
        int rows = 0;
        try (Table t = tables.build(); ResultScanner rs = t.getScanner(scan)) {
            for (Result r = rs.next(); r != null; r = rs.next()) {
                rows++;
                after = r.getRow();
                LockInfo info = heldLock(r, keyPrefix);
                if (info != null) {
                    out.add(info);
                }
                if (rows == limit) {
                    break;
                }
            }
        } catch (IOException e) {
            throw HBaseErrors.translate(e, "scan", where);
        }
        return new LockPage(out, rows == limit ? ListCursor.encode(LIST_CURSOR_TAG, after) : null);
    }

    /** A lock's row: its legible name. */
    static byte[] row(KeyColumn lock) {
        return lock.legible().getBytes(StandardCharsets.US_ASCII);
    }

    /** A scanned lock row as a listed lock; null for a row of another key prefix or a cell this library did not write. */
    private LockInfo heldLock(Result r, byte[] keyPrefix) {
        try {
            KeyColumn lock = KeyColumn.fromLegible(new String(r.getRow(), StandardCharsets.US_ASCII));
            Cell cell = r.getColumnLatestCell(family, HOLDER);
            HolderClaim claim = cell == null ? null : HolderClaim.decode(CellUtil.cloneValue(cell));
            if (claim == null || !lock.keyStartsWith(keyPrefix)) {
                return null;
            }
            byte[] counter = r.getValue(tokenFamily, COUNTER);
            return new LockInfo(lock, claim.owner, counter == null ? 0L : Bytes.toLong(counter),
                    Instant.ofEpochMilli(cell.getTimestamp()).plus(claim.lifetime));
        } catch (IllegalArgumentException notOurs) {
            log.debug("Not listing row {} of {}: {}", Bytes.toStringBinary(r.getRow()), where, notOurs.toString());
            return null;
        }
    }

    @Override
    protected void closeBackend() {
        if (ownsConnection) {
            closeQuietly(connection);
        }
    }

    // ---- HBase access -------------------------------------------------------------------------------------------

    private long ttlMillis() {
        return cellTtlMillis;
    }

    /**
     * The holder cell's TTL: {@code expiry + serverClockSkew} rounded up to whole milliseconds (HBase's unit), at least
     * 1 ms: never shorter than the validity its holder trusts (an expiry beyond it fails at build).
     *
     * @throws IllegalArgumentException when the sum exceeds {@link #MAX_CELL_TTL} (HBase judges a cell dead once
     *                                  {@code timestamp + ttl < now}, which overflows near the long range)
     */
    /**
     * What can be checked of {@code options} and {@code config} without the cluster: the cell TTL fits (an absurd
     * expiry is refused) and a lock row of {@code maxKeyBytes} fits HBase's row length.
     *
     * @return the claims' cell TTL
     * @throws IllegalArgumentException naming what does not fit
     */
    static Duration validate(HBaseOptions options, LockerConfig config) {
        Duration cellTtl = cellTtl(config.expiry(), options.serverClockSkew());
        if (3L * config.maxKeyBytes() + 1 > HConstants.MAX_ROW_LENGTH) {
            throw new IllegalArgumentException("maxKeyBytes " + config.maxKeyBytes() + " is too large for HBase: a lock "
                    + "row (its legible name, up to 3 characters per byte, plus '#') must fit in "
                    + HConstants.MAX_ROW_LENGTH + " bytes, so maxKeyBytes <= " + (HConstants.MAX_ROW_LENGTH - 1) / 3);
        }
        return cellTtl;
    }

    static Duration cellTtl(Duration expiry, Duration serverClockSkew) {
        Duration total;
        try {
            total = expiry.plus(serverClockSkew);
        } catch (ArithmeticException overflow) {
            total = null;
        }
        if (total == null || total.compareTo(MAX_CELL_TTL) > 0) {
            throw new IllegalArgumentException("expiry " + expiry + " plus serverClockSkew " + serverClockSkew
                    + " is too long for an HBase cell TTL: at most " + MAX_CELL_TTL.toDays() + " days");
        }
        long millis = total.toMillis() + (total.getNano() % 1_000_000 == 0 ? 0 : 1);
        return Duration.ofMillis(Math.max(1L, millis));
    }

    private CheckAndMutateResult checkAndMutate(CheckAndMutate cam, String action) {
        try (Table t = tables.build()) {
            return t.checkAndMutate(cam);
        } catch (IOException e) {
            throw HBaseErrors.translate(e, action, where);
        }
    }

    /**
     * After an ambiguous failure: our token when the holder is the claim we tried to write, empty when it is not.
     * When we cannot tell, the claim is given back, so that a claim written without our knowing does not block
     * everyone until it expires.
     */
    private OptionalLong grantedToUs(KeyColumn lock, byte[] row, HolderClaim claim) {
        RowState state;
        try {
            state = read(row, "get");
        } catch (StoreException readFailed) {
            giveBack(lock, row, claim);
            return OptionalLong.empty();
        }
        return state.isHeldBy(claim) ? OptionalLong.of(state.counter) : OptionalLong.empty();
    }

    /** Compare-and-release of a claim we may have written but will not use (best effort: it expires anyway). */
    private void giveBack(KeyColumn lock, byte[] row, HolderClaim claim) {
        try {
            checkAndMutate(CheckAndMutate.newBuilder(row).ifEquals(family, HOLDER, claim.value)
                    .build(new Put(row).addColumn(family, HOLDER, FREE)), "checkAndMutate");
        } catch (StoreException releaseFailed) {
            log.debug("Could not give back an unused claim on {}; if it was written it expires within {}: {}", lock,
                    config.expiry(), releaseFailed.toString());
        }
    }

    private RowState read(byte[] row, String action) {
        Get get = new Get(row).addColumn(family, HOLDER).addColumn(tokenFamily, COUNTER);
        Result r;
        try (Table t = tables.build()) {
            r = t.get(get);
        } catch (IOException e) {
            throw HBaseErrors.translate(e, action, where);
        }
        byte[] counter = r.getValue(tokenFamily, COUNTER);
        return new RowState(HolderClaim.decode(r.getValue(family, HOLDER)), counter == null ? 0L : Bytes.toLong(counter));
    }

    private static void closeQuietly(Connection c) {
        try {
            c.close();
        } catch (IOException | RuntimeException e) {
            log.debug("Closing the HBase connection failed: {}", e.toString());
        }
    }

    /** What one read of a lock row saw: the live holder (null when free) and the fencing counter. */
    private static final class RowState {
        final HolderClaim holder;
        final long counter;

        RowState(HolderClaim holder, long counter) {
            this.holder = holder;
            this.counter = counter;
        }

        boolean isHeldBy(HolderClaim claim) {
            return holder != null && Arrays.equals(holder.value, claim.value);
        }
    }

    /** The column families of a lock table created by this library. */
    static List<ColumnFamilyDescriptor> families(HBaseOptions options) {
        return List.of(
                ColumnFamilyDescriptorBuilder.newBuilder(options.familyBytes())
                        .setMaxVersions(1)
                        .setTimeToLive((int) Math.min(Integer.MAX_VALUE - 1L, options.ttl().toSeconds()))
                        .setInMemory(true)
                        .build(),
                ColumnFamilyDescriptorBuilder.newBuilder(options.tokenFamilyBytes())
                        .setMaxVersions(1)
                        .setInMemory(true)
                        .build());
    }

    /** Options of an {@link HBaseLocker}; the connection is required, the rest has defaults. */
    public static final class Builder extends LockerBuilder<Builder> {
        private final Connection connection;
        private HBaseOptions options = HBaseOptions.builder().build();
        private boolean closeConnectionOnClose;

        private Builder(Connection connection) {
            this.connection = Objects.requireNonNull(connection, "connection must not be null");
        }

        /** Table, families, TTL and createTable (the quorum and client settings of a given connection are its own). */
        public Builder options(HBaseOptions o) {
            this.options = Objects.requireNonNull(o, "options must not be null");
            return this;
        }

        /** Close the connection when the locker closes (default false: the caller owns it). */
        public Builder closeConnectionOnClose(boolean on) {
            this.closeConnectionOnClose = on;
            return this;
        }

        /**
         * Finds (or creates) the lock table and checks its families: the claims family's TTL must exceed the expiry,
         * and the token family must have none.
         *
         * @throws IllegalArgumentException   before any I/O, when the expiry plus serverClockSkew exceeds the longest
         *                                    cell TTL (~73 million years) or maxKeyBytes the longest row
         * @throws PermanentLockingException when the table or a family is missing, or the TTLs are unsafe
         * @throws TemporaryLockingException when the cluster cannot be reached within the operation timeout
         */
        public HBaseLocker build() {
            Duration cellTtl = validate(options, config); // before I/O
            TableName name = TableName.valueOf(options.table());
            String where = HBaseClients.describe(connection.getConfiguration(), options.table());
            TableDescriptor d;
            try {
                d = HBaseTables.ensure(connection, name, families(options), options.createTable(), where);
            } catch (StoreException e) {
                throw e.isTemporary() ? new TemporaryLockingException(e.getMessage(), null, null, e)
                        : new PermanentLockingException(e.getMessage(), null, null, e);
            }
            int claimsTtl = d.getColumnFamily(options.familyBytes()).getTimeToLive();
            if (claimsTtl != HConstants.FOREVER && Duration.ofSeconds(claimsTtl).compareTo(cellTtl) <= 0) {
                throw new PermanentLockingException("the claims family '" + options.family() + "' of " + where + " has a TTL of "
                        + claimsTtl + " s, not longer than the claim expiry " + config.expiry() + " plus the region "
                        + "servers' clock allowance " + options.serverClockSkew() + ": claims would vanish while held; "
                        + "raise the family TTL or shorten the expiry", null);
            }
            int tokenTtl = d.getColumnFamily(options.tokenFamilyBytes()).getTimeToLive();
            if (tokenTtl != HConstants.FOREVER) {
                throw new PermanentLockingException("the token family '" + options.tokenFamily() + "' of " + where
                        + " has a TTL (" + tokenTtl + " s): fencing counters would restart; remove its TTL", null);
            }
            return new HBaseLocker(this, name, where);
        }
    }
}
