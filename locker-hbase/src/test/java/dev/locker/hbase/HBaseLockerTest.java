package dev.locker.hbase;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockInfo;
import dev.locker.api.LockOwner;
import dev.locker.api.LockPage;
import dev.locker.api.LockTransaction;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.TemporaryLockingException;
import dev.locker.api.TimeSource;
import dev.locker.testkit.OffsetClock;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptor;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionImplementation;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.util.Bytes;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** HBase-specific behaviour of {@link HBaseLocker}: round trips, row layout, server clock, lost replies, TTLs. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Order(2) // among the longest classes: started first
class HBaseLockerTest {

    private final HBaseTestCluster cluster = HBaseTestCluster.get();
    private final List<Locker> opened = new ArrayList<>();
    private Connection connection;
    private HBaseOptions options;
    private Table table;

    @BeforeAll
    void connect() throws Exception {
        org.apache.hadoop.conf.Configuration conf = new org.apache.hadoop.conf.Configuration(cluster.util().getConfiguration());
        conf.setBoolean("hbase.client.metrics.enable", true);
        HBaseClients.applyTimeouts(conf, HBaseOptions.builder().operationTimeout(Duration.ofSeconds(5)).build());
        connection = org.apache.hadoop.hbase.client.ConnectionFactory.createConnection(conf);
        // one region server whose clock never steps: no allowance for clock disagreement (HBaseServerClockTest has one)
        options = HBaseOptions.builder().table("locker_test_locks").ttl(Duration.ofHours(1)).serverClockSkew(Duration.ZERO)
                .build();
        table = connection.getTable(TableName.valueOf(options.table()));
    }

    @AfterAll
    void close() throws Exception {
        for (Locker l : opened) {
            l.close();
        }
        table.close();
        connection.close();
    }

    private Locker locker(String name, Duration expiry, TimeSource clock) {
        Locker l = HBaseLocker.builder(connection).options(options)
                .config(LockerConfig.builder().rid(name + "-" + LockerConfig.randomRid().substring(0, 8)).expiry(expiry)
                        .timeSource(clock).build())
                .build();
        opened.add(l);
        return l;
    }

    private Locker locker(String name) {
        return locker(name, Duration.ofSeconds(30), TimeSource.system());
    }

    private static KeyColumn lock(String name) {
        return KeyColumn.of("hbase-test/" + name + "-" + LockerConfig.randomRid().substring(0, 8), "c");
    }

    /** Client RPCs (to region servers) this connection made so far. */
    private long clientRpcs() {
        Map<String, com.codahale.metrics.Counter> counters =
                ((ConnectionImplementation) connection).getConnectionMetrics().getRpcCounters();
        long n = 0;
        for (Map.Entry<String, com.codahale.metrics.Counter> e : counters.entrySet()) {
            if (e.getKey().contains("ClientService")) {
                n += e.getValue().getCount();
            }
        }
        return n;
    }

    /**
     * A grant's check names the counter it expects: known from this locker's last sight of the row (its own grant or
     * release, or a get), else read first. So an acquire costs 1 RPC when that sight is still current, 2 for a lock the
     * locker has not seen, 3 when another holder came and went since; renew and release 1 each.
     */
    @Test
    void roundTripsOfAcquireRenewReleaseAndRefusal() {
        Locker a = locker("a");
        Locker b = locker("b");
        KeyColumn warm = lock("warm-up");
        Object w = new Object();
        a.writeLock(warm, w); // locates the region once: later calls use the cached location
        a.deleteLocks(w);

        KeyColumn lock = lock("x");
        Object tx = new Object();
        long before = clientRpcs();
        a.writeLock(lock, tx);
        a.checkLocks(tx);
        long unseen = clientRpcs() - before;

        before = clientRpcs();
        a.renewLocks(tx);
        long renew = clientRpcs() - before;

        before = clientRpcs();
        assertThrows(TemporaryLockingException.class, () -> b.writeLock(lock, new Object()));
        long refusalUnseen = clientRpcs() - before;

        before = clientRpcs();
        assertThrows(TemporaryLockingException.class, () -> b.writeLock(lock, new Object()));
        long refusalSeen = clientRpcs() - before;

        before = clientRpcs();
        a.deleteLocks(tx);
        long release = clientRpcs() - before;

        Object tx2 = new Object();
        before = clientRpcs();
        a.writeLock(lock, tx2);
        a.checkLocks(tx2);
        long again = clientRpcs() - before;
        long tokenA = a.fencingToken(lock, tx2);
        a.deleteLocks(tx2);

        Object tb = new Object();
        before = clientRpcs();
        b.writeLock(lock, tb); // b last saw the counter at a's first token
        long stale = clientRpcs() - before;
        assertTrue(b.fencingToken(lock, tb) > tokenA);
        b.deleteLocks(tb);

        System.out.printf("[locker-hbase] round trips: acquire+check of an unseen lock=%d, again after its release=%d, "
                + "after another holder=%d, renew=%d, refused acquire=%d (seen: %d), release=%d%n",
                unseen, again, stale, renew, refusalUnseen, refusalSeen, release);
        assertEquals(2, unseen, "a get for the counter, then one checkAndMutate; checkLocks needs no I/O");
        assertEquals(1, again, "the locker's own release told it the counter: one checkAndMutate");
        assertEquals(3, stale, "a check on an out-of-date counter fails, a get, a checkAndMutate");
        assertEquals(1, renew);
        assertEquals(1, refusalUnseen, "the get names the holder");
        assertEquals(2, refusalSeen, "a refused checkAndMutate plus one get naming the holder");
        assertEquals(1, release);
    }

    /**
     * The grant's check returns one cell, whose timestamp the region server stamps the claim with (at least): the
     * holder cell, or the counter when the holder cell is absent, never a record cell (stamped 2^62 plus a token). A
     * grant on a row with a run record and no holder cell (the family TTL removed the free value) writes a claim
     * stamped by the server's clock, which expires.
     */
    @Test
    void aClaimGrantedNextToARecordIsStampedByTheServerClockAndExpires() throws Exception {
        HBaseOptions shortTtl = HBaseOptions.builder().table("locker_test_short_ttl").ttl(Duration.ofSeconds(2))
                .serverClockSkew(Duration.ZERO).build();
        LockerConfig config = LockerConfig.builder().expiry(Duration.ofSeconds(1)).build();
        try (Locker a = HBaseLocker.builder(connection).options(shortTtl).config(config).build();
             Locker b = HBaseLocker.builder(connection).options(shortTtl).config(config).build();
             Table t = connection.getTable(TableName.valueOf(shortTtl.table()))) {
            KeyColumn lock = lock("recorded");
            a.runOnce(lock, "record a run", lease -> { }); // token 1, its record, then the free value
            Thread.sleep(2500); // the family TTL removes the free value; the record (token family) stays
            Result before = t.get(new Get(LockTable.row(lock)));
            assertNull(before.getValue(shortTtl.familyBytes(), LockTable.HOLDER));
            assertEquals(2, before.size(), "the counter and the record: " + before);
            Object tb = new Object();
            b.writeLock(lock, tb);
            assertEquals(2, b.fencingToken(lock, tb));
            long stamped = t.get(new Get(LockTable.row(lock)))
                    .getColumnLatestCell(shortTtl.familyBytes(), LockTable.HOLDER).getTimestamp();
            assertTrue(stamped < LockTable.RECORD_TIMESTAMP_BASE
                            && Math.abs(stamped - System.currentTimeMillis()) < 60_000,
                    "the claim is stamped by the server's clock: " + stamped);
            Thread.sleep(1300);
            assertFalse(a.holder(lock).isPresent(), "b's claim expired");
            Object ta = new Object();
            a.writeLock(lock, ta);
            assertEquals(3, a.fencingToken(lock, ta));
            a.deleteLocks(ta);
        }
    }

    /**
     * The grant's check keeps the holder cell (or, when absent, the counter) whatever the order of the two families:
     * here the token family sorts first. Grants on a free value, on an absent holder cell, and refusals all work.
     */
    @Test
    void grantsWorkWhenTheTokenFamilySortsBeforeTheClaimsFamily() throws Exception {
        HBaseOptions reversed = HBaseOptions.builder().table("locker_test_reversed").family("z").tokenFamily("a")
                .ttl(Duration.ofHours(1)).serverClockSkew(Duration.ZERO).build();
        LockerConfig config = LockerConfig.builder().expiry(Duration.ofMillis(500)).build();
        try (Locker a = HBaseLocker.builder(connection).options(reversed).config(config).build();
             Locker b = HBaseLocker.builder(connection).options(reversed).config(config).build()) {
            KeyColumn lock = lock("reversed");
            Object t1 = new Object();
            a.writeLock(lock, t1);
            // tokens rise with every grant; a grant retried after a slow reply skips one, so none is pinned exactly
            long first = a.fencingToken(lock, t1);
            assertTrue(first >= 1, "token " + first);
            assertThrows(TemporaryLockingException.class, () -> b.writeLock(lock, new Object()));
            a.deleteLocks(t1);
            Object t2 = new Object();
            b.writeLock(lock, t2); // on the free value
            long second = b.fencingToken(lock, t2);
            assertTrue(second > first, second + " after " + first);
            Thread.sleep(800); // b "crashes": its claim expires
            Object t3 = new Object();
            a.writeLock(lock, t3);
            long third = a.fencingToken(lock, t3);
            assertTrue(third > second, third + " after " + second);
            assertEquals(a.rid(), b.holder(lock).orElseThrow().rid());
            a.deleteLocks(t3);
        }
    }

    @Test
    void oneRowPerLockWithTheHolderCellAndAFencingCounter() throws Exception {
        Locker a = locker("a");
        KeyColumn lock = lock("layout");
        LockTransaction tx = new LockTransaction("rebuild index 7");
        a.writeLock(lock, tx);
        a.checkLocks(tx);
        long token = a.fencingToken(lock, tx);

        Result row = table.get(new Get(LockTable.row(lock)));
        assertEquals(2, row.size(), "one holder cell and one counter cell: " + row);
        assertEquals(lock.legible(), Bytes.toString(row.getRow()), "the row is the lock's legible name");
        assertTrue(Bytes.toString(row.getRow()).matches("hbase-test/layout-[0-9a-f]{8}#c"),
                "legible in hbase shell: " + Bytes.toStringBinary(row.getRow()));
        HolderClaim claim = HolderClaim.decode(row.getValue(options.familyBytes(), LockTable.HOLDER));
        assertEquals(a.rid(), claim.owner.rid());
        assertEquals("rebuild index 7", claim.owner.why());
        assertEquals(Duration.ofSeconds(30), claim.lifetime);
        assertEquals(token, Bytes.toLong(row.getValue(options.tokenFamilyBytes(), LockTable.COUNTER)));

        a.deleteLocks(tx);
        row = table.get(new Get(LockTable.row(lock)));
        assertArrayEquals(LockTable.freeAt(token), row.getValue(options.familyBytes(), LockTable.HOLDER),
                "released = the free value naming the released claim's token");
        assertEquals(token, Bytes.toLong(row.getValue(options.tokenFamilyBytes(), LockTable.COUNTER)), "the counter stays");
        assertFalse(a.holder(lock).isPresent());
    }

    @Test
    void theRegionServersClockDecidesExpiryNotTheClients() throws Exception {
        // a's clock runs an hour ahead, b's an hour behind; the server's TTL alone decides when a claim is dead
        Locker ahead = locker("ahead", Duration.ofMillis(1500), new OffsetClock(TimeSource.system(), Duration.ofHours(1)));
        Locker behind = locker("behind", Duration.ofMillis(1500), new OffsetClock(TimeSource.system(), Duration.ofHours(-1)));
        KeyColumn lock = lock("skew");
        Object tb = new Object();
        behind.writeLock(lock, tb);
        behind.checkLocks(tb);
        long first = behind.fencingToken(lock, tb);
        TemporaryLockingException e = assertThrows(TemporaryLockingException.class, () -> ahead.writeLock(lock, new Object()),
                "a client whose clock says the claim is long dead is still refused");
        assertEquals(behind.rid(), e.holder().rid());
        Thread.sleep(2000); // the claim's TTL passes on the server
        Object ta = new Object();
        ahead.writeLock(lock, ta);
        ahead.checkLocks(ta);
        assertTrue(ahead.fencingToken(lock, ta) > first);
        assertThrows(dev.locker.api.ExpiredLockException.class, () -> behind.renewLocks(tb));
        behind.deleteLocks(tb); // must not free ahead's claim
        assertEquals(ahead.rid(), behind.holder(lock).orElseThrow().rid());
    }

    @Test
    void renewalRewritesTheHolderCellWithAFreshTtlInPlace() throws Exception {
        // each step has a third of the expiry to spare, so a busy machine's slow round trip still fits
        Duration expiry = Duration.ofSeconds(3);
        Locker a = locker("a", expiry, TimeSource.system());
        KeyColumn lock = lock("renewed");
        Object tx = new Object();
        a.writeLock(lock, tx);
        long token = a.fencingToken(lock, tx);
        Thread.sleep(expiry.toMillis() / 3 * 2);
        a.renewLocks(tx);
        Thread.sleep(expiry.toMillis() / 3 * 2); // past the first TTL, within the renewed one
        assertEquals(a.rid(), a.holder(lock).orElseThrow().rid(), "the renewed claim outlives its first TTL");
        assertEquals(token, a.fencingToken(lock, tx), "same claim, same token");
        Thread.sleep(expiry.toMillis()); // past the renewed TTL: the server expires the renewed cell too
        assertFalse(a.holder(lock).isPresent(), "a renewed claim still expires on the server");
        a.deleteLocks(tx);
    }

    @Test
    void aDeadHoldersCellIsReplacedByTheNextGrant() throws Exception {
        Locker a = locker("a", Duration.ofMillis(500), TimeSource.system());
        Locker b = locker("b");
        KeyColumn lock = lock("scrub");
        a.writeLock(lock, new Object()); // a "crashes" holding it
        Thread.sleep(800);
        Object tb = new Object();
        b.writeLock(lock, tb);
        Result row = table.get(new Get(LockTable.row(lock)));
        assertEquals(b.rid(), HolderClaim.decode(row.getValue(options.familyBytes(), LockTable.HOLDER)).owner.rid());
        assertEquals(2, row.size());
        b.deleteLocks(tb);
    }

    @Test
    void tokensKeepIncreasingWhenTheFamilyTtlSafetyNetRemovesClaims() throws Exception {
        HBaseOptions shortTtl = HBaseOptions.builder().table("locker_test_short_ttl").ttl(Duration.ofSeconds(2))
                .serverClockSkew(Duration.ZERO).build();
        LockerConfig config = LockerConfig.builder().expiry(Duration.ofSeconds(1)).build();
        try (Locker a = HBaseLocker.builder(connection).options(shortTtl).config(config).build();
             Table t = connection.getTable(TableName.valueOf(shortTtl.table()))) {
            KeyColumn lock = lock("ttl");
            Object t1 = new Object();
            a.writeLock(lock, t1);
            long first = a.fencingToken(lock, t1);
            a.deleteLocks(t1);
            Thread.sleep(2500); // the family TTL removes the (released, empty) holder cell
            assertNull(t.get(new Get(LockTable.row(lock))).getValue(shortTtl.familyBytes(), LockTable.HOLDER));
            Object t2 = new Object();
            a.writeLock(lock, t2);
            assertTrue(a.fencingToken(lock, t2) > first, "the counter lives in a family without TTL");
            a.deleteLocks(t2);
        }
    }

    @Test
    void aLostReplyIsRecognisedAsOurOwnGrant() throws Exception {
        HBaseOptions lossy = lossyTable("locker_test_lossy");
        try (Locker a = HBaseLocker.builder(connection).options(lossy).config(LockerConfig.defaults()).build();
             Locker b = HBaseLocker.builder(connection).options(lossy).config(LockerConfig.defaults()).build()) {
            KeyColumn lock = lock("lost");
            Object ta = new Object();
            LostReplyObserver.LOSE_NEXT.set(1);
            a.writeLock(lock, ta); // applied, reply lost; the client's retry finds the holder is our claim
            a.checkLocks(ta);
            assertEquals(0, LostReplyObserver.LOSE_NEXT.get(), "the reply was lost once");
            assertTrue(a.status(lock, ta).orElseThrow().isHeld());
            long tokenA = a.fencingToken(lock, ta);
            assertTrue(tokenA > 0);
            TemporaryLockingException e = assertThrows(TemporaryLockingException.class, () -> b.writeLock(lock, new Object()));
            assertEquals(a.rid(), e.holder().rid());
            a.deleteLocks(ta);
            Object tb = new Object();
            b.writeLock(lock, tb);
            assertTrue(b.fencingToken(lock, tb) > tokenA);
            b.deleteLocks(tb);
        } finally {
            LostReplyObserver.LOSE_NEXT.set(0);
        }
    }

    @Test
    void aClaimWhoseFateIsUnknownIsGivenBack() throws Exception {
        HBaseOptions lossy = lossyTable("locker_test_lossy2");
        try (Locker a = HBaseLocker.builder(connection).options(lossy).config(LockerConfig.defaults()).build();
             Locker b = HBaseLocker.builder(connection).options(lossy).config(LockerConfig.defaults()).build()) {
            KeyColumn lock = lock("unknown");
            LostReplyObserver.FAIL_CLAIMS.set(true);
            LostReplyObserver.FAIL_GETS.set(true);
            try {
                TemporaryLockingException e = assertThrows(TemporaryLockingException.class, () -> a.writeLock(lock, new Object()));
                assertTrue(e.getCause() != null);
            } finally {
                LostReplyObserver.FAIL_CLAIMS.set(false);
                LostReplyObserver.FAIL_GETS.set(false);
            }
            // the claim was applied by the region, but a could not tell: it gave it back instead of leaving it to expire
            Object tb = new Object();
            b.writeLock(lock, tb);
            assertEquals(b.rid(), a.holder(lock).orElseThrow().rid());
            b.deleteLocks(tb);
        }
    }

    @Test
    void aClaimRetriedByTheClientAfterItExpiredNeverReusesALaterHoldersToken() throws Exception {
        HBaseOptions lossy = lossyTable("locker_test_lossy3");
        LockerConfig shortLived = LockerConfig.builder().expiry(Duration.ofMillis(300)).build();
        try (Locker a = HBaseLocker.builder(connection).options(lossy).config(shortLived).build();
             Locker b = HBaseLocker.builder(connection).options(lossy).config(LockerConfig.defaults()).build()) {
            KeyColumn lock = lock("retried");
            LostReplyObserver.Hold hold = new LostReplyObserver.Hold();
            LostReplyObserver.HOLD.set(hold);
            LostReplyObserver.LOSE_NEXT.set(1);
            Object ta = new Object();
            CompletableFuture<RuntimeException> writer = CompletableFuture.supplyAsync(() -> {
                try {
                    a.writeLock(lock, ta);
                    return null;
                } catch (RuntimeException e) {
                    return e;
                }
            });
            assertTrue(hold.applied.await(10, TimeUnit.SECONDS), "the region applied a's claim");
            // a's claim is in the table but its reply is held back; the claim expires on the region server, then b
            // is granted the lock and releases it, before a's client learns of the failure and retries
            Thread.sleep(600);
            Object tb = new Object();
            b.writeLock(lock, tb);
            b.checkLocks(tb);
            long tokenB = b.fencingToken(lock, tb);
            b.deleteLocks(tb);
            hold.resume.countDown();
            assertNull(writer.get(30, TimeUnit.SECONDS), "a gave the untrusted grant back and claimed the free lock afresh");
            long tokenA = a.fencingToken(lock, ta);
            assertTrue(tokenA > tokenB, "a was granted after b with token " + tokenA + ", not above b's " + tokenB);
            assertEquals(a.rid(), b.holder(lock).orElseThrow().rid());
            a.deleteLocks(ta);
            Object tb2 = new Object();
            b.writeLock(lock, tb2);
            assertTrue(b.fencingToken(lock, tb2) > tokenB);
            b.deleteLocks(tb2);
        } finally {
            LostReplyObserver.LOSE_NEXT.set(0);
            LostReplyObserver.HOLD.set(null);
        }
    }

    @Test
    void aStalledRegionServerIsATemporaryFailureWithinTheOperationTimeout() throws Exception {
        HBaseOptions lossy = lossyTable("locker_test_stalled");
        CountDownLatch stall = new CountDownLatch(1);
        try (Connection quick = cluster.newConnection(Duration.ofSeconds(2));
             Locker a = HBaseLocker.builder(quick).options(lossy).config(LockerConfig.defaults()).build()) {
            KeyColumn lock = lock("stalled");
            a.holder(lock); // region located and cached
            LostReplyObserver.STALL_GETS.set(stall);
            TemporaryLockingException e = assertThrows(TemporaryLockingException.class, () -> a.holder(lock),
                    "a region server that does not answer within the operation timeout may answer later");
            assertTrue(e.getCause() != null);
            LostReplyObserver.STALL_GETS.set(null);
            LostReplyObserver.STALL_CHECK_AND_MUTATES.set(stall);
            KeyColumn other = lock("stalled-claim");
            e = assertThrows(TemporaryLockingException.class, () -> a.writeLock(other, new Object()),
                    "a region server that does not answer a claim within the operation timeout may answer later");
            assertTrue(e.getCause() != null);
        } finally {
            LostReplyObserver.STALL_GETS.set(null);
            LostReplyObserver.STALL_CHECK_AND_MUTATES.set(null);
            stall.countDown();
        }
    }

    private HBaseOptions lossyTable(String name) throws Exception {
        HBaseOptions lossy = HBaseOptions.builder().table(name).serverClockSkew(Duration.ZERO).build();
        try (Admin admin = connection.getAdmin()) {
            TableDescriptorBuilder d = TableDescriptorBuilder.newBuilder(TableName.valueOf(name))
                    .setCoprocessor(LostReplyObserver.class.getName())
                    .setValue(TableLayout.KEY, TableLayout.CREATED.value); // as a locker creates it
            for (ColumnFamilyDescriptor f : LockTable.families(lossy)) {
                d.setColumnFamily(f);
            }
            admin.createTable(d.build());
        }
        return lossy;
    }

    @Test
    void holderNamesTheOwnerWithMetadata() {
        Locker a = locker("a");
        KeyColumn lock = lock("owner");
        Object tx = new LockTransaction("nightly compaction");
        a.writeLock(lock, tx);
        LockOwner o = locker("viewer").holder(lock).orElseThrow();
        assertEquals(a.rid(), o.rid());
        assertEquals("nightly compaction", o.why());
        assertEquals(ProcessHandle.current().pid(), o.pid());
        assertEquals(Thread.currentThread().getName(), o.thread());
        assertTrue(o.since() != null);
        a.deleteLocks(tx);
    }

    /**
     * A listing page is one scan in which the region server keeps only live holders: the released lock, the lock whose
     * claim the cell TTL expired and the lock whose key is one byte shorter than the prefix cross neither the filters
     * nor the page; the three held ones do, with their fencing counters.
     */
    @Test
    void aListingPageIsOneScanOfLiveHoldersFilteredByTheRegionServer() throws Exception {
        Locker a = locker("a");
        Locker shortLived = locker("short", Duration.ofSeconds(1), TimeSource.system());
        Locker viewer = locker("viewer");
        String p = "hbase-list-" + LockerConfig.randomRid().substring(0, 8) + "/";
        shortLived.writeLock(KeyColumn.of(p + "expired", "c"), new Object());
        List<KeyColumn> held = List.of(KeyColumn.of(p + "1", "c"), KeyColumn.of(p + "22", "c"),
                KeyColumn.of(p + "x".repeat(300), "c"));
        List<Long> tokens = new ArrayList<>();
        for (KeyColumn l : held) {
            Object tx = new Object();
            a.writeLock(l, tx);
            tokens.add(a.fencingToken(l, tx));
        }
        Object released = new Object();
        a.writeLock(KeyColumn.of(p + "released", "c"), released);
        a.deleteLocks(released);
        a.writeLock(KeyColumn.of(p.substring(0, p.length() - 1), "/outside"), new Object());
        Thread.sleep(1500); // the short-lived claim's TTL passes on the region server
        viewer.list(p, 100, null); // locates the region

        long before = clientRpcs();
        LockPage page = viewer.list(p, 100, null);
        long rpcs = clientRpcs() - before;
        System.out.printf("[locker-hbase] round trips: one list page of %d locks = %d RPCs%n", page.locks().size(), rpcs);
        assertEquals(1, rpcs, "one scan RPC for a page (one region)");
        assertEquals(held, page.locks().stream().map(LockInfo::lock).toList(), "row order: by key length, then bytes");
        assertEquals(tokens, page.locks().stream().map(LockInfo::fencingToken).toList());
        assertTrue(page.nextCursor().isEmpty());
    }
}
