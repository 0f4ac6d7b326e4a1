package dev.locker.redis;

import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockerProvider;
import dev.locker.api.OptionSyntax;

import java.util.Set;

/** The {@code redis://} and {@code rediss://} backends: {@link RedisLocker}, configured by {@link RedisUri}. */
public final class RedisLockerProvider implements LockerProvider {

    @Override
    public Set<String> schemes() {
        return Set.of("redis", "rediss");
    }

    @Override
    public Locker open(String uri, LockerConfig config) {
        return RedisLocker.open(uri, config);
    }

    @Override
    public LockerConfig check(String uri, LockerConfig config) {
        return RedisLocker.parse(uri, config).validated();
    }

    /** Options split at '&amp;' only, names percent-decoded: what {@code RedisUri} reads. */
    @Override
    public OptionSyntax optionSyntax() {
        return RedisUri.SYNTAX;
    }
}
