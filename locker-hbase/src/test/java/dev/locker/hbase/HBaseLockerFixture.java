package dev.locker.hbase;

import dev.locker.api.KeyColumn;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.testkit.LockerFixture;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.Delete;
import org.apache.hadoop.hbase.client.Table;

import java.time.Duration;

/**
 * HBaseLockers on the shared mini cluster, all on one lock table of this fixture and one connection (as the lockers
 * of several processes share one cluster). Breaking the backend takes the lock table's regions offline.
 */
final class HBaseLockerFixture implements LockerFixture {

    private final HBaseTestCluster cluster = HBaseTestCluster.get();
    private final Connection connection;
    private final HBaseOptions options;

    HBaseLockerFixture(String table) {
        this.connection = cluster.newConnection(Duration.ofSeconds(3));
        // one region server whose clock never steps: no allowance for clock disagreement (HBaseServerClockTest has one);
        // the claims family's TTL (the safety net, which the builder wants above every expiry) above the suite's
        // longest expiry, 10 years: the default, 7 days, refuses such a locker at build (PermanentLockingException)
        this.options = HBaseOptions.builder().table(table).ttl(Duration.ofDays(365L * 20)).serverClockSkew(Duration.ZERO)
                .build();
    }

    HBaseOptions options() {
        return options;
    }

    Connection connection() {
        return connection;
    }

    @Override
    public Locker open(LockerConfig config) {
        return HBaseLocker.builder(connection).options(options).config(config).build();
    }

    @Override
    public boolean expiryFollowsConfiguredClock() {
        return false; // the region server's clock expires claims (per-cell TTL)
    }

    @Override
    public boolean canBreakBackend() {
        return true;
    }

    @Override
    public void breakBackend() {
        cluster.setRegionsOnline(TableName.valueOf(options.table()), false);
    }

    @Override
    public void repairBackend() {
        cluster.setRegionsOnline(TableName.valueOf(options.table()), true);
    }

    @Override
    public boolean canLoseClaims() {
        return true;
    }

    /** Deletes the lock's row (claim, token counter, metadata), as a restore from an older snapshot would. */
    @Override
    public void loseClaims(KeyColumn lock) {
        try (Table t = connection.getTable(TableName.valueOf(options.table()))) {
            t.delete(new Delete(LockTable.row(lock)));
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    @Override
    public void close() throws Exception {
        connection.close();
    }
}
