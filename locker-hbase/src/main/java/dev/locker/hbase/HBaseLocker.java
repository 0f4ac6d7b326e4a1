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
import org.apache.hadoop.hbase.filter.FilterList;
import org.apache.hadoop.hbase.filter.QualifierFilter;
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
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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
 *   <li>writeLock = one {@code checkAndMutate} whose check names the counter value {@code c} it expects: if the
 *       holder cell is absent, expired or empty AND the counter is {@code c} (absent for a lock never granted), write
 *       our claim and {@code Increment} the counter to {@code c + 1}, atomically in one row operation; {@code c + 1} is
 *       our fencing token. The dead claim it replaces is scrubbed by that same write. The HBase client resends a call
 *       whose reply was lost, with the same nonce; once the first was applied the counter is past {@code c}, so a
 *       resend changes nothing, whatever happened in between (an expiry, a forced release, other holders): a claim is
 *       written at most once, and its token is the one its own write issued, never a value the region's nonce table
 *       answers for a repeated Increment. {@code c} is what this locker last saw of the row (its own grant or release,
 *       or a get: {@link #SEEN_ROWS} rows, least recently used dropped), else one get first; a check that fails is
 *       followed by one get, which names the holder or gives the current {@code c} for one more check. Acquire: 1
 *       round trip when the locker's last sight of the row is current, 2 for a row it has not seen, 3 when another
 *       holder came and went since; refused: 1 (unseen) or 2. A grant learnt only after a call that took longer than
 *       the expiry is given back and claimed afresh (its validity, counted from before the call, is already over).</li>
 *   <li>renew = {@code checkAndMutate} "holder value is still ours" then rewrite it with a fresh TTL: in place, same
 *       claim, same token; fails once the server expired it or someone force-released it.</li>
 *   <li>release = {@code checkAndMutate} "holder value is ours" then write the empty value (1 round trip). A Delete
 *       is avoided on purpose: HBase's delete markers hide any later Put that lands in the same millisecond, which
 *       would make the next grant invisible.</li>
 *   <li>The counter only ever increases: neither release, forced release nor any TTL touches it, so every grant's
 *       token is greater than all earlier ones.</li>
 * </ul>
 *
 * <p><b>Sharing a table with the previous layout</b> (a rolling upgrade): the cells and their encodings are unchanged
 * (the counter is an 8-byte long written by an {@code Increment}), so lockers of both builds exclude each other and
 * read each other's claims and tokens; a grant of either build moves the counter, and a grant of this build whose
 * expected counter an older one moved fails its check and reads again. An older locker's own grant keeps its flaw (a
 * resend after a forced release or an expiry can re-apply its claim with a stale token, below a later holder's) until
 * it is upgraded; the tokens of this build's grants are still above every earlier grant.
 *
 * <p>Contenders never leave a claim behind, so a row holds at most one live claim: the holder. The claims family's
 * TTL ({@link HBaseOptions#ttl()}) is only a safety net that must exceed every expiry; the builder checks it.
 *
 * <p><b>Safety argument.</b> What decides the holder: one {@code checkAndMutate} on the lock row, atomic on its region
 * server, which writes our claim only where the holder cell is absent, expired or empty and the counter is the value
 * {@code c} we expect, and increments the fencing counter to {@code c + 1} in the same row operation. So every grant
 * moves the counter by one, a claim is written by one grant only, and while a claim holds no other grant happens: the
 * counter is the holder's token ({@code holding()}, listing and forced release by token read it as such). What decides expiry: the region server's clock, through the cell's TTL. What a
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
 *       A grant's check is a filter, for which "the checked cell" is the first cell the filter returns, so the filter
 *       returns one cell: the holder cell when present (the free value), else the counter (no version of the holder
 *       cell is visible then, and any timestamp from now on is newer than the expired ones); never a record cell, and
 *       never the counter in front of a present holder cell, whichever family sorts first ({@link #grant}). So a grant
 *       after a release, a renewal, a release are each the cell's newest version (a tie in timestamp goes to the later
 *       write), and the fencing counter only grows ({@code HBaseServerClockTest}). Never write the holder cell with a
 *       blind Put: that rule holds only for the checked cell.</li>
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
    /** Per lock row, what this locker last saw or wrote: the expectation of its next grant's check. */
    private final Map<String, Seen> seen = Collections.synchronizedMap(new LinkedHashMap<>(64, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Seen> eldest) {
            return size() > SEEN_ROWS;
        }
    });

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
                // Not trusted: the validity we count from before the call is already over (and the claim may have
                // expired on the server meanwhile). Give the claim back and claim afresh.
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
     * <p>The grant is one check-and-mutate whose condition names the counter value {@code c} we expect ("holder cell
     * free AND counter == c", {@link #grant}) and which increments the counter to {@code c + 1}: our token. {@code c}
     * comes from what this locker last saw of the row ({@link #seen}), else from one get. A resend of the call by the
     * HBase client (same nonce) after the first one was applied finds the counter at {@code c + 1} or beyond and
     * changes nothing, so our claim is written at most once, only while the counter is {@code c}, and the token is the
     * one our own write issued; no resend ever reaches the region's nonce deduplication of the Increment.
     *
     * @throws TemporaryLockingException naming the holder when another claim holds the lock
     */
    private OptionalLong claim(KeyColumn lock, byte[] row, HolderClaim claim, long ttl) {
        Seen expected = seen.get(key(row));
        boolean fresh = expected == null; // the expectation comes from a get made for this attempt
        if (fresh) {
            RowState state = read(row, "get");
            if (state.holder != null) {
                throw heldBy(lock, state);
            }
            expected = state.seen();
        }
        while (true) {
            long token = expected.counter + 1;
            CheckAndMutate grant = grant(row, expected, claim, ttl);
            CheckAndMutateResult r;
            try {
                r = checkAndMutate(grant, "checkAndMutate");
            } catch (TemporaryStoreException e) {
                // the server may have applied it before the failure reached us: look once before giving up
                OptionalLong ours = grantedToUs(lock, row, claim, token);
                if (ours.isPresent()) {
                    return ours;
                }
                throw e;
            }
            if (r.isSuccess()) {
                long counted = Bytes.toLong(r.getResult().getValue(tokenFamily, COUNTER));
                if (counted != token) {
                    // unreachable: the check saw the counter at token - 1 under the row lock, in the same row operation
                    log.warn("Grant on {} counted {}, not the expected {}: claim given back", lock, counted, token);
                    giveBack(lock, row, claim);
                    forget(row);
                    return OptionalLong.empty();
                }
                remember(row, new Seen(token, true)); // after our release: the free value, this counter
                return OptionalLong.of(token);
            }
            RowState state = read(row, "get");
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
     * The grant: one check-and-mutate "holder cell free AND counter == {@code expected.counter}" that writes our claim
     * (with its cell TTL) and increments the counter, in one row operation.
     *
     * <ul>
     *   <li>No counter yet (a lock never granted): the check is "counter absent" on that one cell. Every holder cell
     *       this library writes is written in the same row operation as an increment of the counter, which no TTL
     *       removes, so a row without a counter has no holder cell.</li>
     *   <li>Otherwise a filter (two or three {@code SingleColumnValueFilter}s): the counter equals {@code c}, and the
     *       holder cell is present with the free value ({@code expected.holderCell}), or absent (expired, or the
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
        RowMutations m;
        try {
            m = RowMutations.of(List.of(put, new Increment(row).addColumn(tokenFamily, COUNTER, 1L)));
        } catch (IOException e) {
            throw HBaseErrors.translate(e, "checkAndMutate", where);
        }
        if (expected.counter == 0) {
            return CheckAndMutate.newBuilder(row).ifNotExists(tokenFamily, COUNTER).build(m);
        }
        FilterList check = new FilterList(FilterList.Operator.MUST_PASS_ALL);
        check.addFilter(valueIs(tokenFamily, COUNTER, CompareOperator.EQUAL, Bytes.toBytes(expected.counter), true));
        if (expected.holderCell) {
            check.addFilter(valueIs(family, HOLDER, CompareOperator.EQUAL, FREE, true));
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
            remember(row, new Seen(token, true));
            return OptionalLong.of(token);
        }
        log.warn("Our claim on {} holds with the counter at {}, not our token {}: given back", lock, state.counter, token);
        giveBack(lock, row, claim);
        forget(row);
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
        if (r.isSuccess()) {
            remember(row, new Seen(status.fencingToken(), true));
        } else {
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
    private OptionalLong grantedToUs(KeyColumn lock, byte[] row, HolderClaim claim, long token) {
        RowState state;
        try {
            state = read(row, "get");
        } catch (StoreException readFailed) {
            giveBack(lock, row, claim);
            return OptionalLong.empty();
        }
        return state.isHeldBy(claim) ? ownToken(lock, row, claim, state, token) : OptionalLong.empty();
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
        byte[] holder = r.getValue(family, HOLDER);
        RowState state = new RowState(HolderClaim.decode(holder), holder != null,
                counter == null ? 0L : Bytes.toLong(counter));
        remember(row, state.seen());
        return state;
    }

    // ---- what this locker last saw of lock rows (a guess for the next grant's check; the check decides) ----------

    /** How many lock rows this locker remembers the last seen counter of (least recently used dropped first). */
    static final int SEEN_ROWS = 4096;

    private static String key(byte[] row) {
        return new String(row, StandardCharsets.US_ASCII);
    }

    private void remember(byte[] row, Seen s) {
        seen.put(key(row), s);
    }

    private void forget(byte[] row) {
        seen.remove(key(row));
    }

    /**
     * What a grant expects of a lock row: the counter ({@code 0}: none yet) and whether the holder cell is present with
     * the free value (true) or absent (false). After a read that found a holder: the state its release leaves.
     */
    private record Seen(long counter, boolean holderCell) {
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
        /** Whether the holder cell is present (a claim or the free value), false when absent (expired or never written). */
        final boolean holderCell;
        final long counter;

        RowState(HolderClaim holder, boolean holderCell, long counter) {
            this.holder = holder;
            this.holderCell = holderCell;
            this.counter = counter;
        }

        /** What the next grant can expect: this, or, while someone holds it, the free value its release leaves. */
        Seen seen() {
            return new Seen(counter, holderCell);
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
