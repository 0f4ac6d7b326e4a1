package dev.locker.hbase;

import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockerProvider;
import dev.locker.spi.UriOptions;

import java.util.Set;

/**
 * The {@code hbase://} backend: an {@link HBaseLocker} with a connection of its own, e.g.
 * {@code hbase://zk1,zk2,zk3:2181/locker_locks?znodeParent=/hbase&expiry=30s}. See {@link HBaseOptions#fromUri}.
 */
public final class HBaseLockerProvider implements LockerProvider {

    @Override
    public Set<String> schemes() {
        return Set.of("hbase");
    }

    @Override
    public Locker open(String uri, LockerConfig config) {
        HBaseOptions options = HBaseOptions.fromUri(uri);
        LockerConfig effective = UriOptions.parse(uri).applyTo(config);
        return HBaseLocker.open(options, effective);
    }
}
