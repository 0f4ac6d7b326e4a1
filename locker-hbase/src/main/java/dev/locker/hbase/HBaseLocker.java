package dev.locker.hbase;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockerConfig;
import dev.locker.api.PermanentLockingException;
import dev.locker.api.TemporaryLockingException;
import dev.locker.engine.ClaimStatus;
import dev.locker.engine.LockerBuilder;
import dev.locker.engine.LockerEngine;
import dev.locker.spi.StoreException;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.TableDescriptor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;

/**
 * Locks in an HBase table, decided by the region server in one atomic row operation.
 *
 * <p>The lock's row is its {@link KeyColumn#legible()} name ({@code vertex:42#name}, as {@code hbase shell} shows it;
 * injective, printable ASCII for any bytes, and a key prefix is a row prefix). Its claims family holds one cell, the
 * holder claim (owner metadata and an id of its own; empty means free), written with a per-cell TTL of
 * {@code expiry + serverClockSkew}
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
 *       or a get: {@link SeenRows#SEEN_ROWS} rows, least recently used dropped), else one get first; a check that fails is
 *       followed by one get, which names the holder or gives the current {@code c} for one more check. Acquire: 1
 *       round trip when the locker's last sight of the row is current, 2 for a row it has not seen, 3 when another
 *       holder came and went since; refused: 1 (unseen) or 2. A grant learnt only after a call that took longer than
 *       the expiry is given back and claimed afresh (its validity, counted from before the call, is already over).</li>
 *   <li>renew = {@code checkAndMutate} "holder value is still ours" then rewrite it with a fresh TTL: in place, same
 *       claim, same token; fails once the server expired it or someone force-released it. A shorter TTL deletes the
 *       older versions in the same step (after a get for their timestamp), which would show again otherwise.</li>
 *   <li>release = {@code checkAndMutate} "holder value is ours" then write the free value the table's layout names
 *       ({@link TableLayout}: {@code free@token} on layout 2, the empty value on layout 1; 1 round trip). A Delete
 *       is avoided on purpose: HBase's delete markers hide any later Put that lands in the same millisecond, which
 *       would make the next grant invisible.</li>
 *   <li>The counter only ever increases: neither release, forced release nor any TTL touches it, so every grant's
 *       token is greater than all earlier ones.</li>
 * </ul>
 *
 * <p><b>Sharing a table with the previous layout</b> (a rolling upgrade): a table made before this build has no
 * layout value, and this build's lockers write there only what earlier ones write ({@link HBaseLayout} switches it
 * once every locker is upgraded). The cells and their encodings are unchanged
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
 *       never the counter in front of a present holder cell, whichever family sorts first ({@code HBaseDriver.grant}). So a grant
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
 *       {@link LockTable#RECORD_TIMESTAMP_BASE} plus the fencing token it was written under (a forced release: the counter read
 *       before it), so a record written under a higher token is never hidden by one written under a lower one.</li>
 * </ul>
 */
public final class HBaseLocker extends LockerEngine<ClaimStatus> {

    private static final Logger log = LoggerFactory.getLogger(HBaseLocker.class);

    private final TableName tableName;

    private final TableLayout layout;

    private HBaseLocker(Builder b, TableName tableName, Duration claimsFamilyTtl, TableLayout layout, String where) {
        super(b, config -> new HBaseDriver(config, b.connection, b.closeConnectionOnClose, tableName, b.options,
                claimsFamilyTtl, layout, where));
        this.tableName = tableName;
        this.layout = layout;
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
        LockTable.validate(options, config); // bad input is refused before the connection is made
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

    /** The table's layout as it was when this locker opened it: a later switch reaches it when it opens again. */
    TableLayout layout() {
        return layout;
    }

    private static void closeQuietly(Connection c) {
        try {
            c.close();
        } catch (IOException | RuntimeException e) {
            log.debug("Closing the HBase connection failed: {}", e.toString());
        }
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
            Duration cellTtl = LockTable.validate(options, config); // before I/O
            TableName name = TableName.valueOf(options.table());
            String where = HBaseClients.describe(connection.getConfiguration(), options.table());
            TableDescriptor d;
            try {
                d = HBaseTables.ensure(connection, name, LockTable.families(options),
                        Map.of(TableLayout.KEY, TableLayout.CREATED.value), options.createTable(), where);
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
            TableLayout layout = TableLayout.of(d);
            if (layout == null) {
                throw new PermanentLockingException(TableLayout.unknown(d, where), null);
            }
            log.debug("Opened lock table {} on layout {}", name, layout);
            return new HBaseLocker(this, name, claimsTtl == HConstants.FOREVER ? null : Duration.ofSeconds(claimsTtl),
                    layout, where);
        }
    }
}
