package dev.locker.hbase;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.LockInfo;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockPage;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.CheckAndMutate;
import org.apache.hadoop.hbase.client.CheckAndMutateResult;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptor;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.coprocessor.ObserverContext;
import org.apache.hadoop.hbase.coprocessor.RegionCoprocessor;
import org.apache.hadoop.hbase.coprocessor.RegionCoprocessorEnvironment;
import org.apache.hadoop.hbase.coprocessor.RegionObserver;
import org.apache.hadoop.hbase.util.Bytes;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.parallel.Isolated;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A "free@c" value shown again under an expired claim, or dropped by a flush, never repeats a token nor revives a claim.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
// flushes and holds region server handlers: other classes' 1.5 s keep-alive renewals would stall behind them
@Isolated
class HBaseFreeValueShownAgainTest {

    private static final Duration LONG_EXPIRY = Duration.ofSeconds(30);
    /** Short enough that a claim expires within the test; long enough for a take on a loaded machine. */
    private static final Duration SHORT_EXPIRY = Duration.ofSeconds(1);

    private final HBaseTestCluster cluster = HBaseTestCluster.get();
    private final List<Locker> opened = new ArrayList<>();
    private Connection connection;
    private HBaseOptions options;
    private TableName table;

    @BeforeAll
    void connect() throws Exception {
        // an RPC timeout of 10 s: a held reply is resent only once the test lets it fail, never on a timer
        connection = cluster.newConnection(Duration.ofSeconds(20));
        options = HBaseOptions.builder().table("shown_again_locks").ttl(Duration.ofHours(1))
                .serverClockSkew(Duration.ZERO).build();
        table = TableName.valueOf(options.table());
        try (Admin admin = connection.getAdmin()) {
            if (!admin.tableExists(table)) {
                TableDescriptorBuilder d = TableDescriptorBuilder.newBuilder(table).setCoprocessor(Observer.class.getName())
                        .setValue(TableLayout.KEY, TableLayout.CREATED.value); // as a locker creates it: free@token
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
        return KeyColumn.of("again/" + name + "-" + LockerConfig.randomRid().substring(0, 8), "c");
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

    private static long takeAndRelease(Locker l, KeyColumn lock) {
        Object tx = new Object();
        long token = take(l, lock, tx);
        l.deleteLocks(tx);
        return token;
    }

    private static CompletableFuture<Object> async(java.util.concurrent.Callable<?> c) {
        return CompletableFuture.supplyAsync(() -> {
            try {
                return c.call();
            } catch (Throwable t) {
                return t;
            }
        });
    }

    /** The holder cell's value as the region server shows it now (null when absent). */
    private byte[] holderCell(byte[] row) throws IOException {
        try (Table t = connection.getTable(table)) {
            Result r = t.get(new Get(row).addColumn(options.familyBytes(), LockTable.HOLDER));
            return r.getValue(options.familyBytes(), LockTable.HOLDER);
        }
    }

    /** Waits until the holder cell's value passes {@code shown}; false after 10 s. */
    private boolean awaitHolderCell(byte[] row, Predicate<byte[]> shown) throws Exception {
        for (int i = 0; i < 500; i++) {
            if (shown.test(holderCell(row))) {
                return true;
            }
            Thread.sleep(20); // waits for a cell TTL on the region server; nothing is timed
        }
        return false;
    }

    private boolean awaitFreeAt(byte[] row, long counter) throws Exception {
        return awaitHolderCell(row, v -> LockTable.isFreeAt(v, counter));
    }

    private static String show(byte[] value) {
        return value == null ? "absent" : Bytes.toStringBinary(value);
    }

    /**
     * A released at t1, so A's next grant expects "free@t1" and checks that one cell. B took t1 + 1 over it and
     * expired, which shows "free@t1" again with the counter past it. A's grant passes its check there, yet A must hold
     * a token above B's, and be the holder the row shows with that counter.
     */
    @Test
    void aGrantExpectingAFreeValueShownAgainUnderAnExpiredClaimGetsATokenAboveThatClaims() throws Exception {
        Locker a = locker("a", LONG_EXPIRY);
        Locker b = locker("b", SHORT_EXPIRY);
        KeyColumn lock = lock("stale-one-cell");
        byte[] row = LockTable.row(lock);
        long t1 = takeAndRelease(a, lock);
        Object tb = new Object();
        long tokenB = take(b, lock, tb);
        assertEquals(t1 + 1, tokenB, "B granted on A's free value");
        assertTrue(awaitFreeAt(row, t1), "B's expired claim shows A's free value again");
        Object ta = new Object();
        long tokenA = take(a, lock, ta);
        LockInfo shown = a.holding(lock).orElseThrow();
        assertTrue(tokenA > tokenB, "A was granted token " + tokenA + " after B's " + tokenB);
        assertEquals(a.rid(), shown.holder().rid(), "A holds");
        assertEquals(tokenA, shown.fencingToken(), "A's token is the counter while A holds");
        assertThrows(ExpiredLockException.class, () -> b.verifyLocks(tb), "B's claim expired");
        b.deleteLocks(tb);
        a.deleteLocks(ta);
        assertTrue(takeAndRelease(a, lock) > tokenA, "the next token rises again");
    }

    /**
     * A released at t1; B took t1 + 1 over "free@t1", and a flush ran under B's live claim (one version kept). Once B's
     * claim expires the cell shows "free@t1" or nothing; either way A's next grant gets a token above B's.
     */
    @Test
    void aFlushUnderALiveClaimOverAFreeValueLeavesTheNextGrantATokenAboveThatClaims() throws Exception {
        Locker a = locker("a", LONG_EXPIRY);
        Locker b = locker("b", Duration.ofSeconds(3));
        KeyColumn lock = lock("flushed");
        byte[] row = LockTable.row(lock);
        long t1 = takeAndRelease(a, lock);
        Object tb = new Object();
        long tokenB = take(b, lock, tb);
        try (Admin admin = connection.getAdmin()) {
            admin.flush(table);
        }
        assertTrue(awaitHolderCell(row, v -> HolderClaim.decode(v) == null), "B's claim expires");
        byte[] afterExpiry = holderCell(row);
        Object ta = new Object();
        long tokenA = take(a, lock, ta);
        assertTrue(tokenA > tokenB, "A was granted token " + tokenA + " after B's " + tokenB + " (A expected free@" + t1
                + "; the cell showed " + show(afterExpiry) + " after the flush and B's expiry)");
        assertEquals(tokenA, a.holding(lock).orElseThrow().fencingToken(), "A's token is the counter while A holds");
        b.deleteLocks(tb);
        a.deleteLocks(ta);
    }

    /**
     * A's renewal is applied but its reply held until the renewed claim expired, "free@t0" showed again and B took
     * the lock. The client's resend (same nonce) finds B's claim: A learns it lost the lock, and B keeps it.
     */
    @Test
    void aRenewalResentAfterItsClaimExpiredAndTheNextHolderTookTheFreeValueShownAgainDoesNotReviveIt()
            throws Exception {
        Locker a = locker("a", SHORT_EXPIRY.multipliedBy(2)); // room for the take and the renewal's send
        Locker b = locker("b", LONG_EXPIRY);
        KeyColumn lock = lock("renewal-late");
        byte[] row = LockTable.row(lock);
        long t0 = takeAndRelease(a, lock);
        Object ta = new Object();
        long tokenA = take(a, lock, ta);
        Observer.Hold hold = Observer.holdNextReply(row);
        CompletableFuture<Object> renewal = async(() -> {
            a.renewLocks(ta);
            return "renewed";
        });
        assertTrue(hold.applied.await(30, TimeUnit.SECONDS), "the region applied A's renewal");
        assertTrue(awaitFreeAt(row, t0), "A's renewed claim expired and shows free@" + t0 + " again");
        Object tb = new Object();
        long tokenB = take(b, lock, tb);
        assertTrue(tokenB > tokenA);
        hold.resume.countDown(); // the reply is lost; the client resends with the same nonce
        Object outcome = renewal.get(60, TimeUnit.SECONDS);
        assertTrue(hold.resends.get() >= 1, "the client resent A's renewal");
        assertInstanceOf(ExpiredLockException.class, outcome, "A's resent renewal after B took the lock: " + outcome);
        assertEquals(b.rid(), a.holder(lock).orElseThrow().rid(), "B still holds after A's resent renewal");
        b.verifyLocks(tb);
        assertEquals(tokenB, b.holding(lock).orElseThrow().fencingToken());
        a.deleteLocks(ta);
        b.deleteLocks(tb);
    }

    /**
     * A's release is applied ("free@t"), its reply held; B took t + 1 on that one cell and expired, which shows "free@t"
     * again. The client's resend of A's release changes nothing, and the next grant gets a token above B's.
     */
    @Test
    void aReleaseResentAfterTheNextHolderExpiredOverItsFreeValueChangesNothing() throws Exception {
        Locker a = locker("a", LONG_EXPIRY);
        Locker b = locker("b", SHORT_EXPIRY);
        Locker c = locker("c", LONG_EXPIRY);
        KeyColumn lock = lock("release-late");
        byte[] row = LockTable.row(lock);
        Object ta = new Object();
        long tokenA = take(a, lock, ta);
        Observer.Hold hold = Observer.holdNextReply(row);
        CompletableFuture<Object> release = async(() -> {
            a.deleteLocks(ta);
            return "released";
        });
        assertTrue(hold.applied.await(30, TimeUnit.SECONDS), "the region applied A's release");
        Object tb = new Object();
        long tokenB = take(b, lock, tb);
        assertEquals(tokenA + 1, tokenB, "B granted on A's free value");
        assertTrue(awaitFreeAt(row, tokenA), "B's expired claim shows A's free value again");
        hold.resume.countDown(); // the reply is lost; the client resends with the same nonce
        assertEquals("released", release.get(60, TimeUnit.SECONDS));
        assertTrue(hold.resends.get() >= 1, "the client resent A's release");
        assertTrue(LockTable.isFreeAt(holderCell(row), tokenA), "A's resent release left the cell as it was: "
                + show(holderCell(row)));
        assertTrue(c.holder(lock).isEmpty(), "nobody holds");
        Object tc = new Object();
        long tokenC = take(c, lock, tc);
        assertTrue(tokenC > tokenB, "C was granted token " + tokenC + " after B's " + tokenB);
        b.deleteLocks(tb);
        c.deleteLocks(tc);
    }

    /**
     * A's lease is granted on "free@t0" and closed with its hold-at-least left; the leave is applied (its Delete takes
     * "free@t0" too) but its reply held. Once A's left claim expires the cell is absent, and B is granted on the counter
     * check. The client's resend of A's leave finds B's claim and changes nothing.
     */
    @Test
    void aLeaveResentAfterTheLeftClaimExpiredAndTheNextHolderTookTheLockDoesNotReviveIt() throws Exception {
        Locker a = locker("a", LONG_EXPIRY);
        Locker b = locker("b", LONG_EXPIRY);
        KeyColumn lock = lock("leave-late");
        byte[] row = LockTable.row(lock);
        long t0 = takeAndRelease(a, lock);
        dev.locker.api.Lease lease = a.acquire(lock, "test", dev.locker.api.LeaseOptions.expiry(LONG_EXPIRY)
                .keepAlive(false).holdAtLeast(Duration.ofMillis(700)));
        long tokenA = lease.fencingToken();
        assertEquals(t0 + 1, tokenA, "A granted on its own free value");
        Observer.Hold hold = Observer.holdNextReply(row);
        CompletableFuture<Object> leave = async(() -> {
            lease.close();
            return "closed";
        });
        assertTrue(hold.applied.await(30, TimeUnit.SECONDS), "the region applied A's leave");
        assertTrue(awaitHolderCell(row, v -> HolderClaim.decode(v) == null), "A's left claim expires");
        assertEquals("absent", show(holderCell(row)), "the leave's Delete took the free value below A's claim");
        Object tb = new Object();
        long tokenB = take(b, lock, tb);
        assertTrue(tokenB > tokenA, "B was granted token " + tokenB + " after A's " + tokenA);
        hold.resume.countDown(); // the reply is lost; the client resends with the same nonce
        leave.get(60, TimeUnit.SECONDS);
        assertTrue(hold.resends.get() >= 1, "the client resent A's leave");
        assertEquals(b.rid(), a.holder(lock).orElseThrow().rid(), "B still holds after A's resent leave");
        b.verifyLocks(tb);
        assertEquals(tokenB, b.holding(lock).orElseThrow().fencingToken());
        b.deleteLocks(tb);
    }

    /**
     * Listing keeps every live claim and drops every free value: a claim granted on "free@c" is listed, as is one
     * granted on "free@c" shown again; a released lock, one whose claim expired over "free@c" and a force-released
     * one are not.
     */
    @Test
    void aListingShowsEveryClaimGrantedOnAFreeValueAndNoLockWhoseFreeValueShows() throws Exception {
        Locker a = locker("a", LONG_EXPIRY);
        Locker shortLived = locker("short", SHORT_EXPIRY);
        Locker operator = locker("operator", LONG_EXPIRY);
        String p = "again-list-" + LockerConfig.randomRid().substring(0, 8) + "/";
        KeyColumn held = KeyColumn.of(p + "held", "c");
        KeyColumn released = KeyColumn.of(p + "released", "c");
        KeyColumn shownAgain = KeyColumn.of(p + "shown-again", "c");
        KeyColumn takenOnShownAgain = KeyColumn.of(p + "taken-on-shown-again", "c");
        KeyColumn forced = KeyColumn.of(p + "forced", "c");
        Map<String, Long> expected = new TreeMap<>();

        takeAndRelease(a, held);
        expected.put(held.legible(), take(a, held, new Object()));
        takeAndRelease(a, released);
        takeAndRelease(a, forced);
        take(a, forced, new Object());
        assertTrue(operator.forceRelease(forced, "test"));
        for (KeyColumn l : List.of(shownAgain, takenOnShownAgain)) {
            long t = takeAndRelease(a, l);
            take(shortLived, l, new Object());
            assertTrue(awaitFreeAt(LockTable.row(l), t), "the short-lived claim on " + l + " shows free@" + t + " again");
        }
        expected.put(takenOnShownAgain.legible(), take(operator, takenOnShownAgain, new Object()));

        LockPage page = operator.list(p, 100, null);
        Map<String, Long> listed = new TreeMap<>();
        for (LockInfo info : page.locks()) {
            listed.put(info.lock().legible(), info.fencingToken());
        }
        assertEquals(expected, listed, "listed locks and their tokens");
        for (int limit = 1; limit <= 2; limit++) {
            assertEquals(expected, listAll(operator, p, limit), "listed in pages of " + limit);
        }
    }

    private static Map<String, Long> listAll(Locker l, String prefix, int limit) {
        Map<String, Long> out = new TreeMap<>();
        String cursor = null;
        for (int pages = 0; pages < 100; pages++) {
            LockPage page = l.list(prefix, limit, cursor);
            for (LockInfo info : page.locks()) {
                out.put(info.lock().legible(), info.fencingToken());
            }
            Optional<String> next = page.nextCursor();
            if (next.isEmpty()) {
                return out;
            }
            cursor = next.get();
        }
        throw new AssertionError("listing did not end within 100 pages");
    }

    // ---- the fault injector ----------------------------------------------------------------------------------------

    /**
     * Region observer of this class's table: {@link #holdNextReply} holds the reply of the next applied check-and-mutate
     * on one row until the test resumes it, then fails it as a reply lost on the network. The client then resends the
     * call with the same nonce.
     */
    public static final class Observer implements RegionCoprocessor, RegionObserver {

        static final AtomicReference<Hold> HOLD = new AtomicReference<>();
        /** The hold whose reply was held: later calls on its row with the same check are the client's resends. */
        static final AtomicReference<Hold> HELD = new AtomicReference<>();

        static Hold holdNextReply(byte[] row) {
            Hold h = new Hold(row);
            HOLD.set(h);
            return h;
        }

        static void reset() {
            Hold h = HOLD.getAndSet(null);
            if (h != null) {
                h.resume.countDown();
            }
            HELD.set(null);
        }

        @Override
        public Optional<RegionObserver> getRegionObserver() {
            return Optional.of(this);
        }

        @Override
        public CheckAndMutateResult preCheckAndMutate(ObserverContext<RegionCoprocessorEnvironment> c,
                                                      CheckAndMutate cam, CheckAndMutateResult result) {
            Hold h = HELD.get();
            if (h != null && Arrays.equals(h.row, cam.getRow()) && Arrays.equals(h.checked, cam.getValue())) {
                h.resends.incrementAndGet();
            }
            return result;
        }

        @Override
        public CheckAndMutateResult postCheckAndMutate(ObserverContext<RegionCoprocessorEnvironment> c,
                                                       CheckAndMutate cam, CheckAndMutateResult result)
                throws IOException {
            Hold h = HOLD.get();
            if (h != null && result.isSuccess() && Arrays.equals(h.row, cam.getRow()) && HOLD.compareAndSet(h, null)) {
                h.checked = cam.getValue();
                HELD.set(h);
                h.applied.countDown();
                try {
                    h.resume.await(60, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                throw new IOException("injected: the reply of an applied check-and-mutate was lost");
            }
            return result;
        }

        static final class Hold {
            final byte[] row;
            final CountDownLatch applied = new CountDownLatch(1);
            final CountDownLatch resume = new CountDownLatch(1);
            final AtomicInteger resends = new AtomicInteger();
            /** The value the held call checked: its resends check the same. */
            volatile byte[] checked;

            Hold(byte[] row) {
                this.row = row;
            }
        }
    }
}
