package dev.locker.hbase;

import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockerProvider;
import dev.locker.api.OptionSyntax;
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
        Parsed p = parse(uri, config);
        return HBaseLocker.open(p.options(), p.config());
    }

    @Override
    public LockerConfig check(String uri, LockerConfig config) {
        return parse(uri, config).config();
    }

    @Override
    public OptionSyntax optionSyntax() {
        return UriOptions.syntax(HBaseOptions.URI_OPTIONS);
    }

    /** An {@code hbase://} URI read: where the lock table lives and the effective configuration. */
    private record Parsed(HBaseOptions options, LockerConfig config) {
    }

    /** The one parse of an {@code hbase://} URI, for {@link #open} and {@link #check}: no connection, no thread. */
    private static Parsed parse(String uri, LockerConfig config) {
        HBaseOptions options = HBaseOptions.fromUri(uri);
        LockerConfig effective = UriOptions.parse(uri).applyTo(config);
        LockTable.validate(options, effective);
        return new Parsed(options, effective);
    }
}
