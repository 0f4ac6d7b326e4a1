package dev.locker.testkit;

import dev.locker.spi.Entry;
import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.api.LockInfo;
import dev.locker.api.LockPage;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.PermanentLockingException;
import dev.locker.spi.PermanentStoreException;
import dev.locker.spi.StoreTransaction;
import dev.locker.api.TemporaryLockingException;
import dev.locker.spi.TemporaryStoreException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * JanusGraph's ConsistentKeyLocker scenarios, re-expressed on our API, for the wait-and-read-back locker over any
 * key-column-value store. Faults are injected around the real store by {@link FaultyStore}; time is a
 * {@link VirtualClock}, so a scenario with a 100 ms lock-wait runs in microseconds. Each "process" is a locker
 * instance with its own rid; skewed processes see the clock through an {@link OffsetClock}.
 *
 * <p>The lock row of a key-column is {@code KeyColumn.encoded()}; claim columns start with their 8-byte timestamp
 * (first byte below 0x80), token columns with 0xFF (see locker-engine's ClaimCodec).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 60, unit = TimeUnit.SECONDS)
public abstract class ConsistentKeyConformanceSuite {

    /** The real store under test, opened once per test class (scenarios use fresh lock names). */
    protected abstract KeyColumnValueStore openStore() throws Exception;

    /** A ConsistentKeyLocker over {@code store} with {@code config} (its own mediator). */
    protected abstract Locker consistentKeyLocker(KeyColumnValueStore store, LockerConfig config);

    private KeyColumnValueStore real;
    protected FaultyStore store;
    protected VirtualClock clock;
    private final List<Locker> opened = new CopyOnWriteArrayList<>();
    private String prefix;

    private static final Duration LOCK_WAIT = Duration.ofMillis(100);
    private static final Duration EXPIRY = Duration.ofSeconds(30);
    private static final int RETRIES = 3;

    @BeforeAll
    void openRealStore() throws Exception {
        real = openStore();
    }

    @AfterAll
    void closeRealStore() {
        if (real != null) {
            real.close();
        }
    }

    @BeforeEach
    void fresh(TestInfo info) {
        clock = new VirtualClock();
        store = new FaultyStore(real);
        prefix = info.getTestMethod().map(m -> m.getName()).orElse("t") + "-" + LockerConfig.randomRid().substring(0, 8) + "/";
    }

    @AfterEach
    void closeLockers() {
        for (Locker l : opened) {
            l.close();
        }
        opened.clear();
    }

    protected LockerConfig.Builder config(String rid) {
        return LockerConfig.builder().rid(rid).lockWait(LOCK_WAIT).expiry(EXPIRY).retries(RETRIES).timeSource(clock);
    }

    protected Locker process(String rid) {
        return open(config(rid).build());
    }

    protected Locker open(LockerConfig config) {
        Locker l = consistentKeyLocker(store, config);
        opened.add(l);
        return l;
    }

    protected KeyColumn lock(String name) {
        return KeyColumn.of(prefix + name, "c");
    }

    /** The claim columns now in the lock's row (the token column excluded). */
    protected List<byte[]> claimColumns(KeyColumn lock) {
        List<byte[]> out = new ArrayList<>();
        for (Entry e : real.getSlice(lock.encoded(), new byte[0], new byte[0], real.beginTransaction())) {
            if (e.column().length > 8 && e.column()[0] >= 0) {
                out.add(e.column());
            }
        }
        return out;
    }

    @Test
    void singleWriteCheckDeleteLeavesNoClaim() {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        Object tx = new Object();
        a.writeLock(lock, tx);
        assertEquals(1, claimColumns(lock).size());
        a.checkLocks(tx);
        a.deleteLocks(tx);
        assertEquals(0, claimColumns(lock).size());
    }

    @Test
    void aSlowWriteIsRetriedAndItsColumnDeleted() {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        Object tx = new Object();
        store.slowNextMutations(1, LOCK_WAIT.multipliedBy(2), clock);
        a.writeLock(lock, tx);
        assertEquals(2, store.mutations(), "one slow write, one retry that also deletes the slow one");
        assertEquals(1, claimColumns(lock).size(), "the slow attempt's column was deleted");
        a.checkLocks(tx);
        assertTrue(a.status(lock, tx).orElseThrow().isHeld());
    }

    /**
     * A write that took exactly lockWait is not trusted: a claimant with the same timestamp could read the row at
     * the same clock reading as our write completes and miss it (found by the contention scenario: two holders).
     */
    @Test
    void aWriteTakingExactlyTheLockWaitIsRetried() {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        Object tx = new Object();
        store.slowNextMutations(1, LOCK_WAIT, clock);
        a.writeLock(lock, tx);
        assertEquals(2, store.mutations());
        assertEquals(1, claimColumns(lock).size());
    }

    @Test
    void exhaustedRetriesAreTemporaryWithTheCause() {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        store.failNextMutations(RETRIES, false, () -> new TemporaryStoreException("injected timeout"));
        TemporaryLockingException e = assertThrows(TemporaryLockingException.class, () -> a.writeLock(lock, new Object()));
        assertInstanceOf(TemporaryStoreException.class, e.getCause());
        assertEquals(lock, e.lock());
        assertEquals(RETRIES, store.mutations() - 1, "RETRIES attempts, then one clean-up delete");
        Object tx = new Object();
        a.writeLock(lock, tx); // the mediator was freed
        a.checkLocks(tx);
    }

    @Test
    void aPermanentStoreFailureIsPermanentAndTheColumnIsDeleted() {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        store.failNextMutations(1, true, () -> new PermanentStoreException("injected: table is read-only"));
        PermanentLockingException e = assertThrows(PermanentLockingException.class, () -> a.writeLock(lock, new Object()));
        assertInstanceOf(PermanentStoreException.class, e.getCause());
        assertEquals(0, claimColumns(lock).size(), "the written column was deleted");
    }

    @Test
    void localContentionDoesNoStoreIo() {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        Object first = new Object();
        a.writeLock(lock, first);
        int ops = store.operations();
        assertThrows(TemporaryLockingException.class, () -> a.writeLock(lock, new Object()));
        assertEquals(ops, store.operations(), "no store I/O for a lock held in this process");
    }

    @Test
    void repeatedWriteLockDoesNoIo() {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        Object tx = new Object();
        a.writeLock(lock, tx);
        int ops = store.operations();
        a.writeLock(lock, tx);
        assertEquals(ops, store.operations());
    }

    @Test
    void checkLocksTwiceReadsOnce() {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        Object tx = new Object();
        a.writeLock(lock, tx);
        a.checkLocks(tx);
        int ops = store.operations();
        a.checkLocks(tx);
        assertEquals(ops, store.operations(), "a confirmed lock costs no second I/O");
    }

    @Test
    void verifyLocksOnlyReads() {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        Object tx = new Object();
        a.writeLock(lock, tx);
        a.checkLocks(tx);
        int reads = store.reads();
        int mutations = store.mutations();
        a.verifyLocks(tx);
        assertEquals(reads + 1, store.reads(), "a confirmed lock is verified with one read");
        assertEquals(mutations, store.mutations(), "and nothing is written");
    }

    @Test
    void aClaimOneMillisecondSeniorWins() {
        Locker a = process("a");
        Locker b = open(config("b").timeSource(new OffsetClock(clock, Duration.ofMillis(-1))).build());
        KeyColumn lock = lock("x");
        Object ta = new Object();
        Object tb = new Object();
        a.writeLock(lock, ta);
        b.writeLock(lock, tb); // written later, but b's clock says 1 ms earlier
        TemporaryLockingException e = assertThrows(TemporaryLockingException.class, () -> a.checkLocks(ta));
        assertEquals(b.rid(), e.holder().rid());
        b.checkLocks(tb);
        assertTrue(b.status(lock, tb).orElseThrow().isHeld());
    }

    @Test
    void ourSeniorClaimHolds() {
        Locker a = process("a");
        Locker b = open(config("b").timeSource(new OffsetClock(clock, Duration.ofMillis(1))).build());
        KeyColumn lock = lock("x");
        Object ta = new Object();
        Object tb = new Object();
        a.writeLock(lock, ta);
        b.writeLock(lock, tb);
        a.checkLocks(ta);
        TemporaryLockingException e = assertThrows(TemporaryLockingException.class, () -> b.checkLocks(tb));
        assertEquals(a.rid(), e.holder().rid());
    }

    @Test
    void equalTimestampsGoToTheSmallerRid() {
        Locker z = process("z");
        Locker a = process("a");
        KeyColumn lock = lock("x");
        Object tz = new Object();
        Object ta = new Object();
        z.writeLock(lock, tz);
        a.writeLock(lock, ta); // same virtual instant
        a.checkLocks(ta);
        assertThrows(TemporaryLockingException.class, () -> z.checkLocks(tz));
    }

    @Test
    void ourClaimExpiringBeforeTheCheckIsExpiredLockException() {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        Object tx = new Object();
        a.writeLock(lock, tx);
        clock.advance(EXPIRY.plusMillis(1));
        assertThrows(ExpiredLockException.class, () -> a.checkLocks(tx));
    }

    @Test
    void expiredClaimsOfOthersAreIgnoredAndScrubbed() {
        Locker b = process("b");
        Locker a = process("a");
        KeyColumn lock = lock("x");
        b.writeLock(lock, new Object()); // b writes and dies
        clock.advance(EXPIRY.plusMillis(1));
        Object ta = new Object();
        a.writeLock(lock, ta);
        a.checkLocks(ta);
        assertEquals(1, claimColumns(lock).size(), "b's dead claim was scrubbed by a's check");
    }

    @Test
    void aContendedCheckScrubsDeadClaimsInTheBackground() throws Exception {
        Locker dead = process("dead");
        Locker holder = process("holder");
        Locker a = process("a");
        KeyColumn lock = lock("x");
        dead.writeLock(lock, new Object());
        clock.advance(EXPIRY.plusMillis(1));
        Object th = new Object();
        holder.writeLock(lock, th);
        holder.checkLocks(th);
        Object ta = new Object();
        a.writeLock(lock, ta);
        assertThrows(TemporaryLockingException.class, () -> a.checkLocks(ta));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (claimColumns(lock).size() > 2 && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertEquals(2, claimColumns(lock).size(), "only the holder's and a's claims remain");
    }

    /** A live claim of another locker instance counts, whatever its rid name: names are for operators, not owners. */
    @Test
    void aLiveClaimOfAnotherInstanceWithTheSameRidNameBlocks() {
        Locker before = process("same-rid");
        KeyColumn lock = lock("x");
        before.writeLock(lock, new Object()); // another instance with the same name (or an earlier incarnation)
        clock.advance(Duration.ofMillis(5));
        Locker after = process("same-rid");
        Object tx = new Object();
        after.writeLock(lock, tx);
        assertThrows(TemporaryLockingException.class, () -> after.checkLocks(tx));
        after.deleteLocks(tx);
        clock.advance(EXPIRY); // the earlier claim expired: now it is dead and scrubbed
        Object again = new Object();
        after.writeLock(lock, again);
        after.checkLocks(again);
        assertTrue(after.status(lock, again).orElseThrow().isHeld());
    }

    @Test
    void theTokenHighWaterMarkSurvivesForceRelease() {
        Locker a = process("a");
        Locker b = process("b");
        KeyColumn lock = lock("x");
        Object ta = new Object();
        a.writeLock(lock, ta);
        a.checkLocks(ta);
        long t = a.fencingToken(lock, ta);
        b.forceRelease(lock);
        assertEquals(0, claimColumns(lock).size());
        Object tb = new Object();
        b.writeLock(lock, tb);
        b.checkLocks(tb);
        assertTrue(b.fencingToken(lock, tb) > t);
    }

    @Test
    void aLateRenewalIsRefusedWithinTheLockWaitMargin() {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        Object tx = new Object();
        a.writeLock(lock, tx);
        a.checkLocks(tx);
        clock.advance(EXPIRY.minus(LOCK_WAIT.dividedBy(2)));
        assertThrows(ExpiredLockException.class, () -> a.renewLocks(tx),
                "a peer whose clock is ahead by up to lockWait may already consider the claim dead");
    }

    @Test
    void aFailedReadBackIsRetried() {
        Locker a = process("a");
        Locker b = process("b");
        KeyColumn lock = lock("x");
        Object tx = new Object();
        a.writeLock(lock, tx);
        clock.advance(LOCK_WAIT);
        store.failNextReads(RETRIES - 1, () -> new TemporaryStoreException("injected read timeout"));
        a.checkLocks(tx); // the read-back (and the confirming read) are tried again, as JanusGraph does
        Object other = new Object();
        b.writeLock(lock, other);
        clock.advance(LOCK_WAIT);
        assertThrows(TemporaryLockingException.class, () -> b.checkLocks(other), "a holds it");
        b.deleteLocks(other);
        a.deleteLocks(tx);
    }

    @Test
    void readBackFailuresBeyondTheRetriesAreTemporaryWithTheCause() {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        Object tx = new Object();
        a.writeLock(lock, tx);
        clock.advance(LOCK_WAIT);
        store.failNextReads(RETRIES, () -> new TemporaryStoreException("injected read timeout"));
        TemporaryLockingException e = assertThrows(TemporaryLockingException.class, () -> a.checkLocks(tx));
        assertInstanceOf(TemporaryStoreException.class, e.getCause());
        a.deleteLocks(tx);
    }

    @Test
    void deleteLocksSurvivesAStoreFailure() {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        Object tx = new Object();
        a.writeLock(lock, tx);
        a.checkLocks(tx);
        store.failNextMutations(1, false, () -> new TemporaryStoreException("injected"));
        a.deleteLocks(tx); // logs, does not throw
        Object again = new Object();
        a.writeLock(lock, again); // the mediator was freed all the same
        a.checkLocks(again); // our own released claim that could not be deleted is known to us: it never blocks us
    }

    // ---- listing ------------------------------------------------------------------------------------------------

    /** The SPI's getKeys: non-empty rows under a prefix, in unsigned byte order, after a start, at most a limit. */
    @Test
    void getKeysListsNonEmptyRowsUnderAPrefixInUnsignedOrder() {
        byte[] p = (prefix + "rows/").getBytes(StandardCharsets.UTF_8);
        byte[] a = concat(p, "a");
        byte[] ab = concat(p, "ab");
        byte[] b = concat(p, "b");
        byte[] high = concat(p, "\u00ff"); // 0xC3 0xBF: above every ASCII byte, unsigned
        byte[] emptied = concat(p, "emptied");
        byte[] outside = (prefix + "rows0").getBytes(StandardCharsets.UTF_8); // '0' sorts right after '/'
        List<Entry> cell = List.of(new Entry(new byte[]{1}, new byte[]{2}));
        for (byte[] row : List.of(high, b, ab, a, emptied, outside)) {
            real.mutate(row, cell, List.of(), real.beginTransaction());
        }
        real.mutate(emptied, List.of(), List.of(new byte[]{1}), real.beginTransaction());

        assertRows(List.of(a, ab, b, high), real.getKeys(p, null, 10, real.beginTransaction()));
        assertRows(List.of(a, ab), real.getKeys(p, null, 2, real.beginTransaction()));
        assertRows(List.of(b, high), real.getKeys(p, ab, 10, real.beginTransaction()));
        assertRows(List.of(ab, b, high), real.getKeys(p, a, 10, real.beginTransaction()));
        assertRows(List.of(a, ab, b, high), real.getKeys(p, "a".getBytes(StandardCharsets.UTF_8), 10,
                real.beginTransaction()), "a start before the prefix");
        assertRows(List.of(), real.getKeys(p, outside, 10, real.beginTransaction()), "a start after the prefix");
        List<byte[]> fromHere = real.getKeys(a, null, 10, real.beginTransaction());
        assertRows(List.of(a, ab), fromHere, "a prefix that is itself a row");

        byte[] ff = Arrays.copyOf(concat(p, "z"), p.length + 2); // a prefix ending in 0xFF: its range ends at p + "{"
        ff[ff.length - 1] = (byte) 0xFF;
        byte[] ff0 = Arrays.copyOf(ff, ff.length + 1);
        byte[] ffff = Arrays.copyOf(ff, ff.length + 1);
        ffff[ffff.length - 1] = (byte) 0xFF;
        byte[] next = concat(p, "{");
        for (byte[] row : List.of(next, ffff, ff0)) {
            real.mutate(row, cell, List.of(), real.beginTransaction());
        }
        assertRows(List.of(ff0, ffff), real.getKeys(ff, null, 10, real.beginTransaction()), "a prefix ending in 0xFF");
    }

    /**
     * Lock rows start with their key's length, so a key prefix is one row range per key length: keys of 1, 2 and 1001
     * bytes after the prefix are all listed, the locks of a key one byte shorter than the prefix (whose row nevertheless
     * continues with the prefix bytes) are not, the lengths in between without rows are skipped by a probe instead of
     * visited one by one, and listing changes nothing in the store.
     */
    @Test
    void listingVisitsOneRangePerKeyLengthAndSkipsLengthsWithoutRows() {
        Locker a = process("a");
        Locker viewer = process("viewer");
        String p = prefix + "len/";
        List<KeyColumn> held = List.of(KeyColumn.of(p + "1", "c"), KeyColumn.of(p + "22", "c"),
                KeyColumn.of(p + "x".repeat(1001), "c"));
        for (KeyColumn l : held) {
            take(a, l);
        }
        take(a, KeyColumn.of(p.substring(0, p.length() - 1), "/shorter-key"));
        int mutations = store.mutations();
        int reads = store.reads();
        List<KeyColumn> listed = new ArrayList<>();
        String cursor = null;
        do {
            int before = store.reads();
            LockPage page = viewer.list(p, 100, cursor);
            assertTrue(store.reads() - before <= 2 * 100 + 16, "store calls per list call: " + (store.reads() - before));
            page.locks().forEach(info -> listed.add(info.lock()));
            cursor = page.nextCursor().orElse(null);
        } while (cursor != null);
        assertEquals(held, listed, "in row order: by key length, then bytes");
        assertTrue(store.reads() - reads < 500, "the ~1000 key lengths without rows were skipped: "
                + (store.reads() - reads) + " store reads");
        assertEquals(mutations, store.mutations(), "listing writes nothing");
    }

    /** A claim written but not confirmed yet is the senior live claim: listed with token 0, then with its token. */
    @Test
    void aClaimNotConfirmedYetIsListedWithTokenZero() {
        Locker a = process("a");
        Locker viewer = process("viewer");
        KeyColumn lock = lock("x");
        Object tx = new Object();
        a.writeLock(lock, tx);
        LockInfo unconfirmed = viewer.list(lock.key(), 10, null).locks().get(0);
        assertEquals(a.rid(), unconfirmed.holder().rid());
        assertEquals(0, unconfirmed.fencingToken());
        a.checkLocks(tx);
        LockInfo confirmed = viewer.list(lock.key(), 10, null).locks().get(0);
        assertEquals(a.fencingToken(lock, tx), confirmed.fencingToken());
        assertEquals(unconfirmed.holder(), confirmed.holder());
    }

    /** A store that keeps the SPI's default getKeys cannot be listed: a permanent failure naming the store. */
    @Test
    void aStoreThatCannotListItsKeysMakesListingAPermanentFailure() {
        KeyColumnValueStore plain = new KeyColumnValueStore() {
            @Override
            public String name() {
                return "no-listing";
            }

            @Override
            public List<Entry> getSlice(byte[] key, byte[] start, byte[] end, StoreTransaction tx) {
                return real.getSlice(key, start, end, tx);
            }

            @Override
            public void mutate(byte[] key, List<Entry> additions, List<byte[]> deletions, StoreTransaction tx) {
                real.mutate(key, additions, deletions, tx);
            }

            @Override
            public StoreTransaction beginTransaction() {
                return real.beginTransaction();
            }

            @Override
            public void close() {
            }
        };
        Locker a = consistentKeyLocker(plain, config("a").build());
        opened.add(a);
        take(a, lock("x"));
        PermanentLockingException e = assertThrows(PermanentLockingException.class, () -> a.list(lock("").key(), 10, null));
        assertTrue(e.getMessage().contains("no-listing") && e.getMessage().contains("cannot list"), e.getMessage());
    }

    private static void take(Locker locker, KeyColumn lock) {
        Object tx = new Object();
        locker.writeLock(lock, tx);
        locker.checkLocks(tx);
    }

    private static byte[] concat(byte[] a, String b) {
        byte[] tail = b.getBytes(StandardCharsets.UTF_8);
        byte[] out = Arrays.copyOf(a, a.length + tail.length);
        System.arraycopy(tail, 0, out, a.length, tail.length);
        return out;
    }

    private static void assertRows(List<byte[]> expected, List<byte[]> actual) {
        assertRows(expected, actual, "");
    }

    private static void assertRows(List<byte[]> expected, List<byte[]> actual, String what) {
        assertEquals(expected.stream().map(KeyColumn::printable).toList(), actual.stream().map(KeyColumn::printable).toList(),
                what);
    }
}
