package dev.locker.hbase;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.LockInfo;
import dev.locker.api.LockOwner;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.TemporaryLockingException;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.CheckAndMutate;
import org.apache.hadoop.hbase.client.CheckAndMutateResult;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptor;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Increment;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.RowMutations;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.coprocessor.ObserverContext;
import org.apache.hadoop.hbase.coprocessor.RegionCoprocessor;
import org.apache.hadoop.hbase.coprocessor.RegionCoprocessorEnvironment;
import org.apache.hadoop.hbase.coprocessor.RegionObserver;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The HBase client's own retries of a call the region server applied (its reply lost, or the call stalled past the
 * client's RPC timeout) never revive a claim nor repeat a token, on the real mini cluster. {@link Observer}, a region
 * observer loaded on this class's tables only, holds back or fails the reply of an applied check-and-mutate, or stalls
 * one before its check, on one lock row chosen by the test. The HBase client resends such a call with the same nonce;
 * the region answers a repeated {@code Increment} without incrementing.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Order(2) // among the longest classes: started first
class HBaseClientRetryTest {

    private static final Duration LONG_EXPIRY = Duration.ofSeconds(30);

    private final HBaseTestCluster cluster = HBaseTestCluster.get();
    private final List<Locker> opened = new ArrayList<>();
    private Connection connection;
    /** A previous-layout locker's client: its RPC timeout outlasts any held reply, so it resends only when told. */
    private Connection previousLayoutClient;
    private HBaseOptions options;

    @BeforeAll
    void connect() throws Exception {
        // rpc timeout 2 s, operation timeout 4 s, 2 client retries
        connection = cluster.newConnection(Duration.ofSeconds(4));
        previousLayoutClient = cluster.newConnection(Duration.ofSeconds(40));
        options = HBaseOptions.builder().table("retry_locks").ttl(Duration.ofHours(1)).serverClockSkew(Duration.ZERO)
                .build();
        try (Admin admin = connection.getAdmin()) {
            TableName name = TableName.valueOf(options.table());
            if (!admin.tableExists(name)) {
                // the layout a locker gives the tables it creates: a release leaves free@token
                TableDescriptorBuilder d = TableDescriptorBuilder.newBuilder(name).setCoprocessor(Observer.class.getName())
                        .setValue(TableLayout.KEY, TableLayout.CREATED.value);
                for (ColumnFamilyDescriptor f : LockTable.families(options)) {
                    d.setColumnFamily(f);
                }
                admin.createTable(d.build());
            }
        }
    }

    @AfterEach
    void disarm() {
        Observer.reset();
    }

    @AfterAll
    void close() throws Exception {
        for (Locker l : opened) {
            try {
                l.close();
            } catch (RuntimeException ignored) {
                // best effort
            }
        }
        connection.close();
        previousLayoutClient.close();
    }

    private Locker locker(String rid, Duration expiry) {
        Locker l = HBaseLocker.builder(connection).options(options)
                .config(LockerConfig.builder().rid(rid + "-" + LockerConfig.randomRid().substring(0, 6)).expiry(expiry)
                        .build())
                .build();
        opened.add(l);
        return l;
    }

    private static KeyColumn lock(String name) {
        return KeyColumn.of("retry/" + name + "-" + LockerConfig.randomRid().substring(0, 8), "c");
    }

    private static <T> CompletableFuture<Object> async(java.util.concurrent.Callable<T> c) {
        return CompletableFuture.supplyAsync(() -> {
            try {
                return c.call();
            } catch (Throwable t) {
                return t;
            }
        });
    }

    /** writeLock then checkLocks; the token. On failure the transaction's locks are released and it rethrows. */
    private static long take(Locker l, KeyColumn lock, Object tx) {
        try {
            l.writeLock(lock, tx);
            l.checkLocks(tx);
            return l.fencingToken(lock, tx);
        } catch (RuntimeException e) {
            l.deleteLocks(tx);
            throw e;
        }
    }

    /**
     * A's grant is applied but its reply is lost; an operator force-releases the lock and B is granted and releases.
     * The client's resend of A's grant, with the same nonce, must not hand A a token at or below B's.
     */
    @Test
    void aGrantRetriedAfterAForcedReleaseAndAnotherHolderGetsAFreshToken() throws Exception {
        Locker a = locker("a", LONG_EXPIRY);
        Locker b = locker("b", LONG_EXPIRY);
        Locker operator = locker("operator", LONG_EXPIRY);
        KeyColumn lock = lock("fr-between");
        Observer.Hold hold = Observer.holdNextReply(LockTable.row(lock));
        Object ta = new Object();
        CompletableFuture<Object> grantA = async(() -> take(a, lock, ta));
        assertTrue(hold.applied.await(30, TimeUnit.SECONDS), "the region applied A's claim");
        long tokenOfA = operator.holding(lock).orElseThrow().fencingToken();
        assertTrue(operator.forceRelease(lock, "A looks stuck"), "the operator removed A's claim");
        Object tb = new Object();
        long tokenB = take(b, lock, tb);
        assertTrue(tokenB > tokenOfA);
        b.deleteLocks(tb);
        hold.resume.countDown(); // the lost reply reaches A's client, which retries with the same nonce
        Object outcome = grantA.get(60, TimeUnit.SECONDS);
        if (outcome instanceof Throwable t) {
            // refusing the grant would be sound
            assertInstanceOf(TemporaryLockingException.class, t, "A's retried grant: " + t);
            return;
        }
        long tokenA = (Long) outcome;
        Optional<LockInfo> shown = b.holding(lock);
        assertTrue(tokenA > tokenB, "A was granted AFTER B (B took " + tokenB + " and released) with token " + tokenA
                + ", not above B's; the lock shows " + shown);
    }

    /**
     * The same with A's grant on the free value that names the counter: A took and released the lock first, so its
     * grant checks that one cell. The resend finds the empty value the operator left, or B's free value, never A's.
     */
    @Test
    void aGrantOnTheFreeValueNamingTheCounterRetriedAfterAForcedReleaseAndAnotherHolderGetsAFreshToken()
            throws Exception {
        Locker a = locker("a", LONG_EXPIRY);
        Locker b = locker("b", LONG_EXPIRY);
        Locker operator = locker("operator", LONG_EXPIRY);
        KeyColumn lock = lock("fr-between-one-cell");
        Object first = new Object();
        long tokenOfA = take(a, lock, first);
        a.deleteLocks(first); // the holder cell is now "free@" A's token: A's next grant checks that cell alone
        Observer.Hold hold = Observer.holdNextReply(LockTable.row(lock));
        Object ta = new Object();
        CompletableFuture<Object> grantA = async(() -> take(a, lock, ta));
        assertTrue(hold.applied.await(30, TimeUnit.SECONDS), "the region applied A's claim");
        long tokenOfApplied = operator.holding(lock).orElseThrow().fencingToken();
        assertTrue(tokenOfApplied > tokenOfA);
        assertTrue(operator.forceRelease(lock, "A looks stuck"), "the operator removed A's claim");
        Object tb = new Object();
        long tokenB = take(b, lock, tb);
        assertTrue(tokenB > tokenOfApplied);
        b.deleteLocks(tb);
        hold.resume.countDown(); // the lost reply reaches A's client, which retries with the same nonce
        Object outcome = grantA.get(60, TimeUnit.SECONDS);
        if (outcome instanceof Throwable t) {
            assertInstanceOf(TemporaryLockingException.class, t, "A's retried grant: " + t);
            return;
        }
        long tokenA = (Long) outcome;
        Optional<LockInfo> shown = b.holding(lock);
        assertTrue(tokenA > tokenB, "A was granted AFTER B (B took " + tokenB + " and released) with token " + tokenA
                + ", not above B's; the lock shows " + shown);
        assertEquals(tokenA, shown.orElseThrow().fencingToken(), "A's token is the counter while A holds");
        a.deleteLocks(ta);
    }

    /**
     * A's grant on "free@c" is applied and its reply held until A's claim has expired. The expired cell shows the
     * older "free@c" again; B is granted on it and its claim expires too. The client's resend of A's grant (same
     * nonce) may then re-apply A's claim without incrementing. A must not use a claim granted longer than its expiry
     * ago: it gives it back and, if it claims afresh, gets a token above B's.
     */
    @Test
    void aGrantResentAfterItsClaimExpiredAndTheFreeValueShowsAgainIsNotTrusted() throws Exception {
        Duration expiry = Duration.ofMillis(500); // both claims expire well within the client RPC timeout of 2 s
        Locker a = locker("a", expiry);
        Locker b = locker("b", expiry);
        Locker operator = locker("operator", LONG_EXPIRY);
        KeyColumn lock = lock("resent-after-expiry");
        byte[] row = LockTable.row(lock);
        Object first = new Object();
        long tokenOfA = take(a, lock, first);
        a.deleteLocks(first);
        Observer.Hold hold = Observer.holdNextReply(row);
        Object ta = new Object();
        CompletableFuture<Object> grantA = async(() -> take(a, lock, ta));
        assertTrue(hold.applied.await(30, TimeUnit.SECONDS), "the region applied A's claim");
        long applied = tokenOfA + 1;
        boolean shownAgain = awaitFreeAt(row, tokenOfA);
        Object tb = new Object();
        long tokenB = shownAgain ? take(b, lock, tb) : -1;
        boolean shownOnceMore = shownAgain && awaitFreeAt(row, tokenOfA);
        hold.resume.countDown(); // the client resends with the same nonce, unless its RPC timeout did already
        Object outcome = grantA.get(60, TimeUnit.SECONDS);
        b.deleteLocks(tb);
        assumeTrue(shownOnceMore, "the expired claims did not show the older free value again");
        assertTrue(tokenB > applied, "B's token " + tokenB + " is not above A's applied grant's, " + applied);
        Optional<LockInfo> after = operator.holding(lock);
        if (outcome instanceof Throwable t) {
            assertInstanceOf(TemporaryLockingException.class, t, "A's grant: " + t);
            return;
        }
        long tokenA = (Long) outcome;
        assertTrue(tokenA > tokenB, "A trusted token " + tokenA + ", not above B's " + tokenB + "; the lock shows "
                + after);
        assertEquals(tokenA, after.orElseThrow().fencingToken(), "A's token is the counter while A holds");
        a.deleteLocks(ta);
    }

    /** Waits until the holder cell shows "free@{@code counter}" (a claim above it expired); false after 4 s. */
    private boolean awaitFreeAt(byte[] row, long counter) throws Exception {
        try (Table t = connection.getTable(TableName.valueOf(options.table()))) {
            for (int i = 0; i < 200; i++) {
                Result r = t.get(new Get(row).addColumn(options.familyBytes(), LockTable.HOLDER));
                if (LockTable.isFreeAt(r.getValue(options.familyBytes(), LockTable.HOLDER), counter)) {
                    return true;
                }
                Thread.sleep(20); // waits for a cell TTL on the region server; nothing is timed
            }
        }
        return false;
    }

    /**
     * O, a locker of the layout before the fencing counter was checked, grants with "holder empty" and an Increment.
     * Its reply is lost, and O is force-released, which leaves the empty value. O's resend re-applies O's claim and the
     * region skips the repeated Increment, so the counter stays at O's token. While O's claim is the holder, A's next
     * grant must be refused, though A's own earlier release left A expecting the free value that names the counter.
     */
    @Test
    void aClaimReAppliedByAPreviousLayoutResendIsNotOverwrittenByTheNextGrant() throws Exception {
        Locker a = locker("a", LONG_EXPIRY);
        Locker c = locker("c", LONG_EXPIRY);
        Locker operator = locker("operator", LONG_EXPIRY);
        KeyColumn lock = lock("previous-layout-resend");
        byte[] row = LockTable.row(lock);
        Object first = new Object();
        long tokenA = take(a, lock, first);
        a.deleteLocks(first); // "free@" A's token: A's next grant expects it
        forceEmpty(operator, lock); // the empty value, on which a previous-layout grant can apply
        HolderClaim claimOfO = previousLayoutClaim();
        Observer.Hold hold = Observer.holdNextReply(row);
        CompletableFuture<Object> sentByO = async(() -> previousLayoutGrant(row, claimOfO));
        assertTrue(hold.applied.await(30, TimeUnit.SECONDS), "the region applied O's claim");
        assertTrue(operator.forceRelease(lock, "O looks stuck"), "the operator removed O's claim");
        hold.resume.countDown(); // O's client resends with the same nonce
        Object outcomeO = sentByO.get(60, TimeUnit.SECONDS);
        Optional<LockInfo> shown = c.holding(lock);
        assumeTrue(shown.isPresent() && shown.get().holder().rid().equals("o-previous-layout"),
                "O's resend did not re-apply its claim (" + outcomeO + "); the lock shows " + shown);
        assumeTrue(shown.get().fencingToken() == tokenA + 2, "the resend moved the counter: " + shown);
        Object again = new Object();
        Object outcomeA = async(() -> {
            a.writeLock(lock, again);
            return a.fencingToken(lock, again);
        }).get(30, TimeUnit.SECONDS);
        Optional<LockInfo> after = c.holding(lock);
        a.deleteLocks(again);
        assertInstanceOf(TemporaryLockingException.class, outcomeA, "A was granted (" + outcomeA
                + ") over O's claim, which O believes it holds: two holders; the lock showed " + shown
                + ", then " + after);
    }

    /**
     * As above, but A takes and releases the lock between the forced release and O's resend. A's release leaves the
     * free value that names the counter, which no previous-layout grant accepts: the resend changes nothing.
     */
    @Test
    void aPreviousLayoutResendAfterThisBuildsReleaseChangesNothing() throws Exception {
        Locker a = locker("a", LONG_EXPIRY);
        Locker c = locker("c", LONG_EXPIRY);
        Locker operator = locker("operator", LONG_EXPIRY);
        KeyColumn lock = lock("previous-layout-resend-after-release");
        byte[] row = LockTable.row(lock);
        Object first = new Object();
        take(a, lock, first);
        a.deleteLocks(first);
        forceEmpty(operator, lock);
        HolderClaim claimOfO = previousLayoutClaim();
        Observer.Hold hold = Observer.holdNextReply(row);
        CompletableFuture<Object> sentByO = async(() -> previousLayoutGrant(row, claimOfO));
        assertTrue(hold.applied.await(30, TimeUnit.SECONDS), "the region applied O's claim");
        assertTrue(operator.forceRelease(lock, "O looks stuck"), "the operator removed O's claim");
        Object ta = new Object();
        long tokenA = take(a, lock, ta);
        a.deleteLocks(ta); // "free@" A's token
        hold.resume.countDown(); // O's client resends with the same nonce
        sentByO.get(60, TimeUnit.SECONDS);
        Optional<LockInfo> shown = c.holding(lock);
        assertTrue(shown.isEmpty(), "O's resend re-applied its claim over this build's free value: " + shown);
        Object again = new Object();
        long next = take(a, lock, again);
        assertTrue(next > tokenA, "A's next token " + next + " is not above its last, " + tokenA);
        a.deleteLocks(again);
    }

    /**
     * Tokens rise across grants of both layouts on one lock: this build's (on "free@c", then on the empty value after
     * a forced release), and a previous-layout locker's, which is refused on "free@c" and granted on the empty value.
     */
    @Test
    void tokensRiseAcrossBothLayoutsAndAForcedRelease() throws Exception {
        Locker a = locker("a", LONG_EXPIRY);
        Locker operator = locker("operator", LONG_EXPIRY);
        KeyColumn lock = lock("both-layouts");
        byte[] row = LockTable.row(lock);
        List<Long> tokens = new ArrayList<>();
        Object t1 = new Object();
        tokens.add(take(a, lock, t1));
        a.deleteLocks(t1); // "free@" t1
        HolderClaim claimOfO = previousLayoutClaim();
        assertEquals(Boolean.FALSE, previousLayoutGrant(row, claimOfO), "a previous-layout grant over free@c");
        Object t2 = new Object();
        tokens.add(take(a, lock, t2)); // on the one cell "free@" t1
        assertTrue(operator.forceRelease(lock, "test"), "forced release");
        a.deleteLocks(t2); // finds its claim gone, and ends the transaction
        assertEquals(Boolean.TRUE, previousLayoutGrant(row, claimOfO), "a previous-layout grant over the empty value");
        tokens.add(operator.holding(lock).orElseThrow().fencingToken());
        try (Table t = connection.getTable(TableName.valueOf(options.table()))) {
            assertTrue(t.checkAndMutate(CheckAndMutate.newBuilder(row)
                    .ifEquals(options.familyBytes(), LockTable.HOLDER, claimOfO.value)
                    .build(new Put(row).addColumn(options.familyBytes(), LockTable.HOLDER, LockTable.FREE)))
                    .isSuccess(), "O's release, as the previous layout writes it");
        }
        Object t3 = new Object();
        tokens.add(take(a, lock, t3)); // A expected "free@" its token, finds the empty value: both cells checked
        a.deleteLocks(t3);
        Object t4 = new Object();
        tokens.add(take(a, lock, t4)); // the one cell again
        a.deleteLocks(t4);
        for (int i = 1; i < tokens.size(); i++) {
            assertTrue(tokens.get(i) > tokens.get(i - 1), "tokens do not rise: " + tokens);
        }
    }

    /** Force-releases {@code lock} after taking it, so that its holder cell holds the empty value. */
    private void forceEmpty(Locker operator, KeyColumn lock) {
        Object tx = new Object();
        take(operator, lock, tx);
        assertTrue(operator.forceRelease(lock, "test"), "forced release");
        operator.deleteLocks(tx);
    }

    private static HolderClaim previousLayoutClaim() {
        return HolderClaim.create(new LockOwner("o-previous-layout", "h", 1, "main", "why", Instant.now()),
                Instant.now(), LONG_EXPIRY);
    }

    /** A grant as the layout before the counter check wrote it: "holder empty", the claim and an Increment. */
    private Boolean previousLayoutGrant(byte[] row, HolderClaim claim) throws IOException {
        Put put = new Put(row).addColumn(options.familyBytes(), LockTable.HOLDER, claim.value);
        put.setTTL(LONG_EXPIRY.toMillis());
        CheckAndMutate grant = CheckAndMutate.newBuilder(row)
                .ifEquals(options.familyBytes(), LockTable.HOLDER, LockTable.FREE)
                .build(RowMutations.of(List.of(put,
                        new Increment(row).addColumn(options.tokenFamilyBytes(), LockTable.COUNTER, 1L))));
        try (Table t = previousLayoutClient.getTable(TableName.valueOf(options.table()))) {
            return t.checkAndMutate(grant).isSuccess();
        }
    }

    /**
     * A's grant call is stalled before its check past the RPC timeout; the resend is granted, and A releases. The
     * stalled call then goes on: HBase bounds its row-lock wait and refuses the repeated nonce, so B is granted.
     */
    @Test
    void aStalledGrantCallThatLandsAfterTheReleaseDoesNotResurrectTheReleasedClaim() throws Exception {
        Locker a = locker("a", LONG_EXPIRY);
        Locker b = locker("b", LONG_EXPIRY);
        KeyColumn lock = lock("stalled-grant");
        a.holder(lock); // region located and cached
        Observer.Stall stall = Observer.stallNextClaim(LockTable.row(lock));
        Object ta = new Object();
        long tokenA = take(a, lock, ta); // attempt 1 stalls; the client's resend (attempt 2) is granted
        assertEquals(0, stall.arrived.getCount(), "the first call was stalled");
        a.deleteLocks(ta);
        assertTrue(a.holder(lock).isEmpty(), "released");
        stall.resume.countDown();
        stall.done.await(5, TimeUnit.SECONDS); // reached only if the late call got as far as its check and mutation
        Optional<LockInfo> shown = b.holding(lock);
        Object tb = new Object();
        Object outcome = async(() -> take(b, lock, tb)).get(30, TimeUnit.SECONDS);
        assertFalse(outcome instanceof Throwable, "A released the lock (token " + tokenA + "), yet B is refused: "
                + outcome + "; the lock shows " + shown);
        assertTrue((Long) outcome > tokenA);
        b.deleteLocks(tb);
    }

    /**
     * A renewal applied but whose reply is lost; an operator force-releases A before the client's retry: the retry's
     * check (holder = our claim) fails on the free cell, A is told it lost the lock, and nothing is revived.
     */
    @Test
    void aRenewalRetriedAfterAForcedReleaseDoesNotReviveTheClaim() throws Exception {
        Locker a = locker("a", LONG_EXPIRY);
        Locker operator = locker("operator", LONG_EXPIRY);
        KeyColumn lock = lock("renew-fr");
        Object ta = new Object();
        long tokenA = take(a, lock, ta);
        Observer.Hold hold = Observer.holdNextReply(LockTable.row(lock));
        Observer.holdAnyMutation = true; // the renewal is a check-and-mutate of a single Put
        CompletableFuture<Object> renewal = async(() -> {
            a.renewLocks(ta);
            return "renewed";
        });
        assertTrue(hold.applied.await(30, TimeUnit.SECONDS), "the region applied A's renewal");
        assertTrue(operator.forceRelease(lock, "A looks stuck", tokenA));
        hold.resume.countDown();
        Object outcome = renewal.get(60, TimeUnit.SECONDS);
        assertInstanceOf(ExpiredLockException.class, outcome, "the retried renewal must not revive A's claim: " + outcome);
        assertTrue(operator.holder(lock).isEmpty(), "still free after the retried renewal");
        Locker b = locker("b", LONG_EXPIRY);
        Object tb = new Object();
        assertTrue(take(b, lock, tb) > tokenA);
        b.deleteLocks(tb);
    }

    /**
     * A release applied but whose reply is lost; B is granted before the client's retry: the retry (compare-and-clear
     * on A's claim value) leaves B's claim alone.
     */
    @Test
    void aReleaseRetriedAfterTheNextGrantLeavesTheNewHolder() throws Exception {
        Locker a = locker("a", LONG_EXPIRY);
        Locker b = locker("b", LONG_EXPIRY);
        KeyColumn lock = lock("release-retried");
        Object ta = new Object();
        long tokenA = take(a, lock, ta);
        Observer.Hold hold = Observer.holdNextReply(LockTable.row(lock));
        Observer.holdAnyMutation = true;
        CompletableFuture<Object> release = async(() -> {
            a.deleteLocks(ta);
            return "released";
        });
        assertTrue(hold.applied.await(30, TimeUnit.SECONDS), "the region applied A's release");
        Observer.holdAnyMutation = false;
        Object tb = new Object();
        long tokenB = take(b, lock, tb);
        assertTrue(tokenB > tokenA);
        hold.resume.countDown();
        release.get(60, TimeUnit.SECONDS);
        assertEquals(b.rid(), a.holder(lock).orElseThrow().rid(), "B still holds after A's retried release");
        b.verifyLocks(tb);
        b.deleteLocks(tb);
    }

    /**
     * Client clocks decide nothing: A's wall clock an hour behind, B's an hour ahead (OffsetClock; their monotonic
     * clocks agree). B, judging by its clock, would think A's claim long dead, yet the region server's TTL keeps it:
     * B is refused while A holds, A renews in place (same token), and B's grant after A's release has a greater token.
     */
    @Test
    void clientWallClocksSkewedByAnHourNeitherShortenNorReorderClaims() throws Exception {
        dev.locker.api.TimeSource system = dev.locker.api.TimeSource.system();
        Locker a = HBaseLocker.builder(connection).options(options).config(LockerConfig.builder().rid("a-skew")
                .expiry(Duration.ofSeconds(5)).timeSource(new dev.locker.testkit.OffsetClock(system,
                        Duration.ofHours(-1))).build()).build();
        Locker b = HBaseLocker.builder(connection).options(options).config(LockerConfig.builder().rid("b-skew")
                .expiry(Duration.ofSeconds(5)).timeSource(new dev.locker.testkit.OffsetClock(system,
                        Duration.ofHours(1))).build()).build();
        opened.add(a);
        opened.add(b);
        KeyColumn lock = lock("skew");
        Object ta = new Object();
        long tokenA = take(a, lock, ta);
        TemporaryLockingException refused = org.junit.jupiter.api.Assertions.assertThrows(
                TemporaryLockingException.class, () -> b.writeLock(lock, new Object()));
        assertEquals(a.rid(), refused.holder().rid());
        a.renewLocks(ta);
        assertEquals(tokenA, a.fencingToken(lock, ta), "renewed in place");
        a.deleteLocks(ta);
        Object tb = new Object();
        assertTrue(take(b, lock, tb) > tokenA);
        b.deleteLocks(tb);
    }

    /**
     * The wait-and-read-back protocol over {@link HBaseKeyColumnValueStore}: A's token write (the check's mutation) is
     * applied but its reply is lost (after the HBase client's own retries, the store call fails temporarily). A does
     * not come to hold the lock; B, checking meanwhile, never holds it at the same time as A; and once A withdrew, B's
     * token is above any token A wrote.
     */
    @Test
    void waitAndReadBackOverHBaseKeepsExclusionWhenTheTokenWritesReplyIsLost() throws Exception {
        HBaseKeyColumnValueStore shared = HBaseKeyColumnValueStore.open(connection, "retry_kcvs", "l", true);
        try {
            dev.locker.testkit.FaultyStore storeA = new dev.locker.testkit.FaultyStore(shared);
            LockerConfig.Builder cfg = LockerConfig.builder().expiry(Duration.ofSeconds(10))
                    .lockWait(Duration.ofMillis(200));
            Locker a = dev.locker.engine.ConsistentKeyLocker.builder(storeA).config(cfg.rid("a-ck").build()).build();
            Locker b = dev.locker.engine.ConsistentKeyLocker.builder(shared).config(cfg.rid("b-ck").build()).build();
            opened.add(a);
            opened.add(b);
            KeyColumn lock = lock("ck-lost");
            Object ta = new Object();
            a.writeLock(lock, ta);
            storeA.scriptMutations(dev.locker.testkit.FaultyStore.Outcome.APPLIED_THEN_TEMPORARY_FAILURE);
            Object failure = async(() -> {
                a.checkLocks(ta);
                return "held";
            }).get(60, TimeUnit.SECONDS);
            assertInstanceOf(RuntimeException.class, failure, "A's check whose token write went unanswered: " + failure);
            assertFalse(dev.locker.testkit.Interleavings.believesItHolds(a, lock, ta,
                    dev.locker.api.TimeSource.system()));
            Object tb1 = new Object();
            Object outcomeB = async(() -> take(b, lock, tb1)).get(60, TimeUnit.SECONDS);
            a.deleteLocks(ta); // A withdraws what it wrote
            Object tb = tb1;
            if (outcomeB instanceof Throwable) {
                assertInstanceOf(TemporaryLockingException.class, outcomeB, "B refused while A's claim stands");
                tb = new Object();
                outcomeB = take(b, lock, tb);
            }
            assertTrue((Long) outcomeB >= 1);
            assertFalse(dev.locker.testkit.Interleavings.believesItHolds(a, lock, ta,
                    dev.locker.api.TimeSource.system()), "A never holds");
            b.deleteLocks(tb);
        } finally {
            shared.close();
        }
    }

    // ---- the fault injector ----------------------------------------------------------------------------------------

    /**
     * Region observer of this class's table. For one target row: {@link #holdNextReply} holds the reply of the next
     * applied claim (a check-and-mutate of a RowMutations; any check-and-mutate while {@link #holdAnyMutation}) until
     * the test resumes it, then fails it, as a reply lost on the network (the client retries with the same nonce);
     * {@link #stallNextClaim} stalls the next claim before its check until the test resumes it (the client's RPC
     * timeout passes meanwhile, and the client resends it).
     */
    public static final class Observer implements RegionCoprocessor, RegionObserver {

        static final AtomicReference<Hold> HOLD = new AtomicReference<>();
        static final AtomicReference<Stall> STALL = new AtomicReference<>();
        static volatile boolean holdAnyMutation;
        private static final ThreadLocal<Stall> STALLED_HERE = new ThreadLocal<>();

        static Hold holdNextReply(byte[] row) {
            Hold h = new Hold(row);
            HOLD.set(h);
            return h;
        }

        static Stall stallNextClaim(byte[] row) {
            Stall s = new Stall(row);
            STALL.set(s);
            return s;
        }

        static void reset() {
            Hold h = HOLD.getAndSet(null);
            if (h != null) {
                h.resume.countDown();
            }
            Stall s = STALL.getAndSet(null);
            if (s != null) {
                s.resume.countDown();
            }
            holdAnyMutation = false;
        }

        @Override
        public Optional<RegionObserver> getRegionObserver() {
            return Optional.of(this);
        }

        @Override
        public CheckAndMutateResult preCheckAndMutate(ObserverContext<RegionCoprocessorEnvironment> c,
                                                      CheckAndMutate cam, CheckAndMutateResult result) {
            Stall s = STALL.get();
            if (s != null && cam.getAction() instanceof RowMutations && Arrays.equals(s.row, cam.getRow())
                    && STALL.compareAndSet(s, null)) {
                STALLED_HERE.set(s);
                s.arrived.countDown();
                await(s.resume);
            }
            return result;
        }

        @Override
        public CheckAndMutateResult postCheckAndMutate(ObserverContext<RegionCoprocessorEnvironment> c,
                                                       CheckAndMutate cam, CheckAndMutateResult result)
                throws IOException {
            Stall stalled = STALLED_HERE.get();
            if (stalled != null) {
                STALLED_HERE.remove();
                stalled.applied = result.isSuccess();
                stalled.done.countDown();
            }
            Hold h = HOLD.get();
            if (h != null && result.isSuccess() && Arrays.equals(h.row, cam.getRow())
                    && (holdAnyMutation || cam.getAction() instanceof RowMutations) && HOLD.compareAndSet(h, null)) {
                h.applied.countDown();
                await(h.resume);
                throw new IOException("injected: the reply of an applied check-and-mutate was lost");
            }
            return result;
        }

        private static void await(CountDownLatch l) {
            try {
                l.await(60, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        static final class Hold {
            final byte[] row;
            final CountDownLatch applied = new CountDownLatch(1);
            final CountDownLatch resume = new CountDownLatch(1);

            Hold(byte[] row) {
                this.row = row;
            }
        }

        static final class Stall {
            final byte[] row;
            final CountDownLatch arrived = new CountDownLatch(1);
            final CountDownLatch resume = new CountDownLatch(1);
            final CountDownLatch done = new CountDownLatch(1);
            volatile boolean applied;

            Stall(byte[] row) {
                this.row = row;
            }
        }
    }
}
