package dev.locker.hbase;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockOwner;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.PermanentLockingException;
import dev.locker.api.TemporaryLockingException;
import dev.locker.spi.DeploymentCheck.Finding;
import dev.locker.spi.DeploymentCheck.Level;
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
import org.apache.hadoop.hbase.util.Bytes;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.parallel.Isolated;

import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The lock table's descriptor decides which free value a release writes: new tables are on the token layout, older
 * ones keep the empty value and the two-cell grant until switched, and lockers on both layouts exclude each other.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
// creates tables and reopens a table's regions: the master's and region server's work would stall other classes'
// 1.5 s keep-alive renewals
@Isolated
class HBaseTableLayoutTest {

    private static final Duration EXPIRY = Duration.ofSeconds(30);
    private static final String WHERE = "the test table";

    private final HBaseTestCluster cluster = HBaseTestCluster.get();
    private final List<Locker> opened = new ArrayList<>();
    private Connection connection;

    @BeforeAll
    void connect() {
        connection = cluster.newConnection(Duration.ofSeconds(10));
    }

    @AfterAll
    void close() throws Exception {
        for (Locker l : opened) {
            l.close();
        }
        connection.close();
    }

    private static HBaseOptions options(String table) {
        return HBaseOptions.builder().table(table + "_" + LockerConfig.randomRid().substring(0, 6))
                .ttl(Duration.ofHours(1)).serverClockSkew(Duration.ZERO).build();
    }

    private HBaseLocker locker(HBaseOptions options, String rid) {
        HBaseLocker l = HBaseLocker.builder(connection).options(options)
                .config(LockerConfig.builder().rid(rid + "-" + LockerConfig.randomRid().substring(0, 6))
                        .expiry(EXPIRY).build())
                .build();
        opened.add(l);
        return l;
    }

    private static KeyColumn lock(String name) {
        return KeyColumn.of("layout/" + name + "-" + LockerConfig.randomRid().substring(0, 8), "c");
    }

    /** A lock table as a build before the layout value made it: the families, no layout, maybe {@link GrantChecks}. */
    private TableName tableWithoutLayout(HBaseOptions options, boolean observed) throws IOException {
        TableName name = TableName.valueOf(options.table());
        try (Admin admin = connection.getAdmin()) {
            TableDescriptorBuilder d = TableDescriptorBuilder.newBuilder(name);
            if (observed) {
                d.setCoprocessor(GrantChecks.class.getName());
            }
            for (ColumnFamilyDescriptor f : LockTable.families(options)) {
                d.setColumnFamily(f);
            }
            admin.createTable(d.build());
        }
        return name;
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

    private byte[] holderCell(HBaseOptions options, KeyColumn lock) throws IOException {
        try (Table t = connection.getTable(TableName.valueOf(options.table()))) {
            Result r = t.get(new Get(LockTable.row(lock)).addColumn(options.familyBytes(), LockTable.HOLDER));
            return r.getValue(options.familyBytes(), LockTable.HOLDER);
        }
    }

    private static HolderClaim previousLayoutClaim() {
        return HolderClaim.create(new LockOwner("o-previous-layout", "h", 1, "main", "why", Instant.now()),
                Instant.now(), EXPIRY);
    }

    /** A grant as the layout before the counter check wrote it: "holder empty", the claim and an Increment. */
    private boolean previousLayoutGrant(HBaseOptions options, KeyColumn lock, HolderClaim claim) throws IOException {
        byte[] row = LockTable.row(lock);
        Put put = new Put(row).addColumn(options.familyBytes(), LockTable.HOLDER, claim.value);
        put.setTTL(EXPIRY.toMillis());
        CheckAndMutate grant = CheckAndMutate.newBuilder(row)
                .ifEquals(options.familyBytes(), LockTable.HOLDER, LockTable.FREE)
                .build(RowMutations.of(List.of(put,
                        new Increment(row).addColumn(options.tokenFamilyBytes(), LockTable.COUNTER, 1L))));
        try (Table t = connection.getTable(TableName.valueOf(options.table()))) {
            return t.checkAndMutate(grant).isSuccess();
        }
    }

    /** A release as the previous layout writes it: the claim compared, the empty value written. */
    private boolean previousLayoutRelease(HBaseOptions options, KeyColumn lock, HolderClaim claim) throws IOException {
        byte[] row = LockTable.row(lock);
        try (Table t = connection.getTable(TableName.valueOf(options.table()))) {
            return t.checkAndMutate(CheckAndMutate.newBuilder(row)
                    .ifEquals(options.familyBytes(), LockTable.HOLDER, claim.value)
                    .build(new Put(row).addColumn(options.familyBytes(), LockTable.HOLDER, LockTable.FREE)))
                    .isSuccess();
        }
    }

    @Test
    void aTableALockerCreatesIsOnTheTokenLayoutAndAReleaseLeavesFreeAtToken() throws Exception {
        HBaseOptions options = options("layout_created");
        HBaseLocker a = locker(options, "a");
        try (Admin admin = connection.getAdmin()) {
            assertEquals(HBaseLayout.CURRENT, admin.getDescriptor(a.tableName()).getValue(HBaseLayout.KEY));
        }
        assertEquals(TableLayout.TOKEN_ON_RELEASE, a.layout());
        KeyColumn lock = lock("created");
        Object tx = new Object();
        long token = take(a, lock, tx);
        a.deleteLocks(tx);
        assertArrayEquals(LockTable.freeAt(token), holderCell(options, lock), "free@token after a release");
        HBaseLayout.State s = HBaseLayout.read(cluster.uri(options.table(), ""));
        assertTrue(s.isCurrent() && s.known(), s.toString());
    }

    /**
     * A table without the value, as earlier builds made it: a release leaves the empty value, the next grant checks
     * the holder cell and the counter, and a previous-layout writer is granted over what this build leaves.
     */
    @Test
    void aTableWithoutTheValueKeepsTheEmptyReleaseAndTheTwoCellGrant() throws Exception {
        HBaseOptions options = options("layout_previous");
        tableWithoutLayout(options, true);
        HBaseLocker a = locker(options, "a");
        assertEquals(TableLayout.EMPTY_ON_RELEASE, a.layout());
        KeyColumn lock = lock("previous");
        String row = Bytes.toString(LockTable.row(lock));
        List<Long> tokens = new ArrayList<>();
        Object t1 = new Object();
        tokens.add(take(a, lock, t1));
        a.deleteLocks(t1);
        assertArrayEquals(LockTable.FREE, holderCell(options, lock), "the empty value after a release");

        Object t2 = new Object();
        tokens.add(take(a, lock, t2)); // expects the empty value at its own token: both cells checked
        a.deleteLocks(t2);
        assertEquals(List.of("counter absent", "holder and counter"), GrantChecks.of(row),
                "the first grant, then the grant after this locker's own release");

        HolderClaim claimOfO = previousLayoutClaim();
        assertTrue(previousLayoutGrant(options, lock, claimOfO), "a previous-layout grant over this build's release");
        assertEquals("o-previous-layout", a.holder(lock).orElseThrow().rid(), "this build reads its claim");
        tokens.add(a.holding(lock).orElseThrow().fencingToken());
        assertThrows(TemporaryLockingException.class, () -> a.writeLock(lock, new Object()));
        assertTrue(previousLayoutRelease(options, lock, claimOfO));
        Object t3 = new Object();
        tokens.add(take(a, lock, t3));
        a.deleteLocks(t3);
        assertArrayEquals(LockTable.FREE, holderCell(options, lock), "still the empty value");
        for (int i = 1; i < tokens.size(); i++) {
            assertTrue(tokens.get(i) > tokens.get(i - 1), "tokens do not rise: " + tokens);
        }
    }

    /**
     * A switched table: a locker opened before the switch keeps the empty value, one opened after writes free@token,
     * each grants over what the other leaves, and the one after checks one cell after its own release.
     */
    @Test
    void aLockerOpenedBeforeTheSwitchAndOneOpenedAfterEachReadWhatTheOtherWrites() throws Exception {
        HBaseOptions options = options("layout_switched");
        tableWithoutLayout(options, true); // a table with a coprocessor: the switch reopens its regions
        String uri = cluster.uri(options.table(), "");
        HBaseLocker before = locker(options, "before");
        HBaseLayout.State was = HBaseLayout.finalizeLayout(uri);
        assertEquals("1", was.layout());
        assertFalse(was.isCurrent());
        assertTrue(HBaseLayout.read(uri).isCurrent(), "switched");
        assertEquals("2", HBaseLayout.finalizeLayout(uri).layout(), "switching again changes nothing");
        HBaseLocker after = locker(options, "after");
        assertEquals(TableLayout.EMPTY_ON_RELEASE, before.layout(), "an open locker keeps the layout it opened with");
        assertEquals(TableLayout.TOKEN_ON_RELEASE, after.layout());

        KeyColumn lock = lock("switched");
        String row = Bytes.toString(LockTable.row(lock));
        List<Long> tokens = new ArrayList<>();
        Object t1 = new Object();
        tokens.add(take(before, lock, t1));
        before.deleteLocks(t1);
        assertArrayEquals(LockTable.FREE, holderCell(options, lock));
        Object t2 = new Object();
        tokens.add(take(after, lock, t2));
        assertThrows(TemporaryLockingException.class, () -> before.writeLock(lock, new Object()));
        after.deleteLocks(t2);
        assertArrayEquals(LockTable.freeAt(tokens.get(1)), holderCell(options, lock));
        Object t3 = new Object();
        tokens.add(take(after, lock, t3)); // on its own free@token: one cell
        after.deleteLocks(t3);
        Object t4 = new Object();
        tokens.add(take(before, lock, t4)); // reads free@token, which it never writes
        assertEquals(before.rid(), after.holder(lock).orElseThrow().rid());
        before.deleteLocks(t4);
        assertArrayEquals(LockTable.FREE, holderCell(options, lock));
        assertEquals(List.of(
                "counter absent", // before's first grant
                "holder and counter", // after's, on the empty value before left
                "holder and counter", // before's, refused: it expected the empty value its own layout leaves
                "holder", // after's, on its own free@token
                "holder and counter", // before's, expecting the empty value again: refused, then a read
                "holder"), // before's, on the free@token it read
                GrantChecks.of(row));
        for (int i = 1; i < tokens.size(); i++) {
            assertTrue(tokens.get(i) > tokens.get(i - 1), "tokens do not rise: " + tokens);
        }
    }

    /** Two lockers opened before the switch and two after contend for one lock: one holder at a time, tokens rise. */
    @Test
    void lockersOnBothLayoutsContendWithOneHolderAtATimeAndRisingTokens() throws Exception {
        HBaseOptions options = options("layout_contended");
        TableName name = tableWithoutLayout(options, false); // switched without a reopen
        List<HBaseLocker> lockers = new ArrayList<>(List.of(locker(options, "before1"), locker(options, "before2")));
        HBaseLayout.finalizeLayout(connection, name, WHERE);
        lockers.add(locker(options, "after1"));
        lockers.add(locker(options, "after2"));
        KeyColumn lock = lock("contended");
        AtomicInteger inside = new AtomicInteger();
        AtomicReference<String> overlap = new AtomicReference<>();
        List<Long> tokens = Collections.synchronizedList(new ArrayList<>());
        AtomicInteger refusals = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(lockers.size());
        try {
            List<Future<?>> done = new ArrayList<>();
            for (HBaseLocker l : lockers) {
                done.add(pool.submit(() -> {
                    for (int held = 0; held < 8; ) {
                        Object tx = new Object();
                        long token;
                        try {
                            token = take(l, lock, tx);
                        } catch (TemporaryLockingException refused) {
                            refusals.incrementAndGet();
                            Thread.onSpinWait();
                            continue;
                        }
                        if (inside.incrementAndGet() != 1) {
                            overlap.compareAndSet(null, l.rid() + " holds with token " + token + " beside another");
                        }
                        tokens.add(token); // in the order of holding, as holds never overlap
                        inside.decrementAndGet();
                        l.deleteLocks(tx);
                        held++;
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get(150, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        assertNull(overlap.get());
        assertEquals(lockers.size() * 8, tokens.size());
        for (int i = 1; i < tokens.size(); i++) {
            assertTrue(tokens.get(i) > tokens.get(i - 1), "tokens do not rise at " + i + ": " + tokens);
        }
    }

    /** The doctor warns on the previous layout with the command to switch, passes the current, fails an unknown one. */
    @Test
    void theDoctorNamesTheLayoutAndTheCommandToSwitch() throws Exception {
        HBaseOptions options = options("layout_doctor");
        TableName name = tableWithoutLayout(options, false);
        String uri = cluster.uri(options.table(), "expiry=30s");
        Finding previous = layoutFinding(new HBaseDoctor().check(uri, s -> { }));
        assertEquals(Level.WARN, previous.level(), previous.toString());
        assertTrue(previous.why().contains("layout 1"), previous.why());
        assertTrue(previous.fix().contains("once every locker of the table runs this build")
                && previous.fix().contains("locker hbase-layout --uri URI --finalize")
                && previous.fix().contains("alter '" + options.table() + "', METADATA => {'locker.layout' => '2'}"),
                previous.fix());

        HBaseLayout.finalizeLayout(connection, name, WHERE);
        Finding current = layoutFinding(new HBaseDoctor().check(uri, s -> { }));
        assertEquals(Level.OK, current.level(), current.toString());
        assertTrue(current.why().contains("layout 2"), current.why());

        try (Admin admin = connection.getAdmin()) {
            admin.modifyTable(TableDescriptorBuilder.newBuilder(admin.getDescriptor(name))
                    .setValue(HBaseLayout.KEY, "9").build(), false);
            Finding unknown = HBaseDoctor.layout(admin.getDescriptor(name));
            assertEquals(Level.FAIL, unknown.level(), unknown.toString());
        }
        PermanentLockingException refused = assertThrows(PermanentLockingException.class,
                () -> locker(options, "newer"));
        assertTrue(refused.getMessage().contains("locker.layout='9'"), refused.getMessage());
        assertThrows(PermanentLockingException.class, () -> HBaseLayout.finalizeLayout(connection, name, WHERE),
                "a layout this build does not know is not switched back");
    }

    private static Finding layoutFinding(List<Finding> findings) {
        Optional<Finding> f = findings.stream().filter(x -> x.check().equals("layout")).findFirst();
        return f.orElseThrow(() -> new AssertionError("no layout finding in " + findings));
    }

    /** Region observer of this class's tables: records what each grant (a check-and-mutate of two mutations) checks. */
    public static final class GrantChecks implements RegionCoprocessor, RegionObserver {

        private static final Map<String, List<String>> CHECKS = new ConcurrentHashMap<>();

        static List<String> of(String row) {
            return CHECKS.getOrDefault(row, List.of());
        }

        @Override
        public Optional<RegionObserver> getRegionObserver() {
            return Optional.of(this);
        }

        @Override
        public CheckAndMutateResult preCheckAndMutate(ObserverContext<RegionCoprocessorEnvironment> c,
                                                      CheckAndMutate cam, CheckAndMutateResult result) {
            if (cam.getAction() instanceof RowMutations) {
                String check = cam.hasFilter() ? "holder and counter"
                        : Bytes.equals(cam.getQualifier(), LockTable.COUNTER) ? "counter absent" : "holder";
                CHECKS.computeIfAbsent(Bytes.toString(cam.getRow()), k -> new CopyOnWriteArrayList<>()).add(check);
            }
            return result;
        }
    }
}
