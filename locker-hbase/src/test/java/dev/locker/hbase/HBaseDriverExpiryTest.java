package dev.locker.hbase;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockInfo;
import dev.locker.api.LockerConfig;
import dev.locker.engine.ClaimStatus;
import dev.locker.spi.Deadlines;
import dev.locker.testkit.VirtualClock;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.PrivateCellUtil;
import org.apache.hadoop.hbase.Tag;
import org.apache.hadoop.hbase.TagType;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.regionserver.HRegion;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.time.Duration;
import java.time.Instant;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The lock table's driver gives a claim the expiry the engine passes, not the locker's configured one. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class HBaseDriverExpiryTest {

    private static final Duration CONFIGURED = Duration.ofSeconds(60);
    private static final Duration SKEW = Duration.ofSeconds(5);

    private final HBaseTestCluster cluster = HBaseTestCluster.get();
    private final VirtualClock clock = new VirtualClock();
    private final LockerConfig config = LockerConfig.builder().rid("a").expiry(CONFIGURED).timeSource(clock).build();
    private final HBaseOptions options = HBaseOptions.builder().table("driver_expiry_locks").ttl(Duration.ofDays(1))
            .serverClockSkew(SKEW).build();
    private final TableName tableName = TableName.valueOf(options.table());
    private Connection connection;
    private HBaseDriver driver;

    @BeforeAll
    void open() {
        connection = cluster.newConnection(Duration.ofSeconds(5));
        HBaseTables.ensure(connection, tableName, LockTable.families(options),
                java.util.Map.of(TableLayout.KEY, TableLayout.CREATED.value), true, "the test table");
        driver = new HBaseDriver(config, connection, true, tableName, options, options.ttl(), TableLayout.CREATED,
                "the test table");
    }

    @AfterAll
    void close() {
        driver.close();
    }

    private static KeyColumn lock(String name) {
        return KeyColumn.of("driver-expiry/" + name + "-" + LockerConfig.randomRid().substring(0, 8), "c");
    }

    /** The holder cell as the region server keeps it, with its tags: the client never sees the TTL tag. */
    private Cell holderCell(KeyColumn lock) throws Exception {
        List<HRegion> regions = cluster.util().getMiniHBaseCluster().getRegions(tableName);
        for (HRegion region : regions) {
            if (region.getRegionInfo().containsRow(LockTable.row(lock))) {
                Cell cell = region.get(new Get(LockTable.row(lock)).addColumn(options.familyBytes(), LockTable.HOLDER))
                        .getColumnLatestCell(options.familyBytes(), LockTable.HOLDER);
                if (cell != null) {
                    return cell;
                }
            }
        }
        throw new AssertionError("no holder cell for " + lock);
    }

    private static Duration cellTtl(Cell cell) {
        Tag ttl = PrivateCellUtil.getTag(cell, TagType.TTL_TAG_TYPE)
                .orElseThrow(() -> new AssertionError("the holder cell has no TTL"));
        return Duration.ofMillis(Tag.getValueAsLong(ttl));
    }

    @Test
    void aClaimWrittenForTenSecondsLivesTenSecondsPlusTheAllowanceOnTheRegionServer() throws Exception {
        KeyColumn lock = lock("ten");
        long startNanos = clock.nanoTime();

        ClaimStatus held = driver.write(lock, config.owner("ten"), Duration.ofSeconds(10), null);

        Cell cell = holderCell(lock);
        assertEquals(Duration.ofSeconds(10).plus(SKEW), cellTtl(cell));
        LockInfo holder = driver.readHolder(lock).orElseThrow();
        assertEquals(Instant.ofEpochMilli(cell.getTimestamp()).plus(Duration.ofSeconds(10)).plus(SKEW), holder.expiresAt());
        assertEquals(Deadlines.of(startNanos, Duration.ofSeconds(10)), held.deadlineNanos());
        driver.release(lock, held);
    }

    @Test
    void aRenewalForTwentySecondsGivesTheClaimTwentySecondsPlusTheAllowance() throws Exception {
        KeyColumn lock = lock("twenty");
        ClaimStatus held = driver.write(lock, config.owner("ten"), Duration.ofSeconds(10), null);
        clock.advance(Duration.ofSeconds(2));
        long startNanos = clock.nanoTime();

        ClaimStatus renewed = driver.renew(lock, held, Duration.ofSeconds(20));

        Cell cell = holderCell(lock);
        assertEquals(Duration.ofSeconds(20).plus(SKEW), cellTtl(cell));
        LockInfo holder = driver.readHolder(lock).orElseThrow();
        assertEquals(Instant.ofEpochMilli(cell.getTimestamp()).plus(Duration.ofSeconds(20)).plus(SKEW), holder.expiresAt());
        assertEquals(Deadlines.of(startNanos, Duration.ofSeconds(20)), renewed.deadlineNanos());
        assertEquals(held.fencingToken(), renewed.fencingToken(), "a renewal keeps the claim's token");
        assertEquals(held.fencingToken(), holder.fencingToken());
        assertEquals(renewed, driver.verify(lock, renewed), "the renewed claim is the holder");

        driver.release(lock, renewed);
        assertFalse(driver.readHolder(lock).isPresent(), "the renewed claim is released as ours");
    }

    @Test
    void aRenewalForTheWrittenExpiryRewritesTheSameClaimBytes() throws Exception {
        KeyColumn lock = lock("same");
        ClaimStatus held = driver.write(lock, config.owner("same"), Duration.ofSeconds(10), null);

        ClaimStatus renewed = driver.renew(lock, held, Duration.ofSeconds(10));

        assertArrayEquals(held.claimId(), renewed.claimId());
        assertEquals(Duration.ofSeconds(10).plus(SKEW), cellTtl(holderCell(lock)));
        assertTrue(driver.readHolder(lock).isPresent());
        driver.release(lock, renewed);
    }
}
