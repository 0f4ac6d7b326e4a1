package dev.locker.hbase;

import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.TimeSource;
import org.apache.hadoop.hbase.client.Connection;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Lockers on the shared mini cluster over one connection of their own, all with the same options and expiry, on the
 * system clock. Closing closes every locker opened, then the connection.
 */
final class HBaseLockers implements AutoCloseable {

    private final Connection connection;
    private final HBaseOptions options;
    private final Duration expiry;
    private final List<Locker> opened = new ArrayList<>();

    HBaseLockers(HBaseOptions options, Duration expiry) {
        this.connection = HBaseTestCluster.get().newConnection(Duration.ofSeconds(5));
        this.options = options;
        this.expiry = expiry;
    }

    /** A locker whose rid is {@code name} and a random suffix. */
    Locker open(String name) {
        Locker l = HBaseLocker.builder(connection).options(options)
                .config(LockerConfig.builder().rid(name + "-" + LockerConfig.randomRid().substring(0, 8)).expiry(expiry)
                        .timeSource(TimeSource.system()).build())
                .build();
        opened.add(l);
        return l;
    }

    @Override
    public void close() throws Exception {
        for (Locker l : opened) {
            l.close();
        }
        connection.close();
    }
}
