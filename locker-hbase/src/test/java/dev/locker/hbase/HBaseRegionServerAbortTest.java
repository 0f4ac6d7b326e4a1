package dev.locker.hbase;

import dev.locker.api.KeyColumn;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.TemporaryLockingException;
import org.apache.hadoop.hbase.MiniHBaseCluster;
import org.apache.hadoop.hbase.ServerName;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.RegionInfo;
import org.apache.hadoop.hbase.util.JVMClusterUtil;
import org.junit.jupiter.api.parallel.Isolated;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The region server hosting the lock table dies while a lock is held. While the master recovers its regions (WAL
 * split, reassignment), calls fail temporarily and in bounded time; nobody is ever granted the held lock; afterwards
 * the claim is still there (it was in the WAL), its holder can renew and release it, and the next holder's token is
 * greater.
 */
// alone: it aborts the shared mini cluster's region server, which every class uses
@Isolated
class HBaseRegionServerAbortTest {

    private static final Duration OUTAGE_LIMIT = Duration.ofMinutes(2);

    @Test
    void aRegionServerAbortWhileALockIsHeldNeverGrantsItTwice() throws Exception {
        HBaseTestCluster cluster = HBaseTestCluster.get();
        MiniHBaseCluster mini = cluster.util().getMiniHBaseCluster();
        // a second region server to kill, so that hbase:meta (on the first) stays up
        JVMClusterUtil.RegionServerThread victim = mini.startRegionServer();
        victim.waitForServerOnline();
        ServerName victimName = victim.getRegionServer().getServerName();
        HBaseOptions options = HBaseOptions.builder().table("abort_locks").build();
        TableName table = TableName.valueOf(options.table());
        LockerConfig.Builder config = LockerConfig.builder().expiry(Duration.ofMinutes(5));
        try (Connection connection = cluster.newConnection(Duration.ofSeconds(3));
             Locker a = HBaseLocker.builder(connection).options(options).config(config.rid("holder").build()).build();
             Locker b = HBaseLocker.builder(connection).options(options).config(config.rid("contender").build()).build()) {
            try (Admin admin = connection.getAdmin()) {
                RegionInfo region = admin.getRegions(table).get(0);
                admin.move(region.getEncodedNameAsBytes(), victimName);
                cluster.util().waitFor(60_000, () -> admin.getRegions(victimName).stream()
                        .anyMatch(r -> r.getTable().equals(table)));
            }
            KeyColumn lock = KeyColumn.named("survives-a-crash");
            Object ta = new Object();
            a.writeLock(lock, ta);
            a.checkLocks(ta);
            long token = a.fencingToken(lock, ta);

            victim.getRegionServer().abort("test: the region server hosting the lock table crashes");
            long t0 = System.nanoTime();
            int temporaryFailures = 0;
            TemporaryLockingException contended = null;
            while (contended == null) {
                try {
                    b.writeLock(lock, new Object());
                    fail("the contender was granted a lock that is held, during a region server crash");
                } catch (TemporaryLockingException e) {
                    if (e.holder() != null) {
                        contended = e; // the region is back and the claim with it
                    } else {
                        temporaryFailures++;
                        assertTrue(e.getCause() != null, "an outage keeps its cause: " + e);
                    }
                }
                if (System.nanoTime() - t0 > OUTAGE_LIMIT.toNanos()) {
                    fail("the lock table was still unavailable after " + OUTAGE_LIMIT);
                }
                Thread.sleep(100);
            }
            long outageMs = (System.nanoTime() - t0) / 1_000_000;
            System.out.println("[locker-hbase] region server abort: lock table unavailable for ~" + outageMs + " ms ("
                    + temporaryFailures + " temporary failures, each bounded by the 3 s operation timeout)");

            assertEquals(a.rid(), contended.holder().rid(), "the claim survived the crash (WAL replay)");
            a.renewLocks(ta); // still ours, in place
            a.checkLocks(ta);
            assertEquals(token, a.fencingToken(lock, ta));
            a.deleteLocks(ta);
            Object tb = new Object();
            b.writeLock(lock, tb);
            b.checkLocks(tb);
            assertTrue(b.fencingToken(lock, tb) > token, "the counter survived the crash too");
            b.deleteLocks(tb);
        }
    }
}
