package dev.locker.local;

import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockerProvider;
import dev.locker.spi.UriOptions;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The {@code mem:} backend: a {@link ConsistentKeyLocker} over an {@link InMemoryStore} that lives as long as this
 * JVM. {@code mem:} and {@code mem:NAME} name the store; lockers opened on the same name share it (like several
 * processes on one server), different names are independent. Common options apply ({@code mem:jobs?lockWait=5ms}).
 */
public final class MemLockerProvider implements LockerProvider {

    private static final ConcurrentHashMap<String, InMemoryStore> STORES = new ConcurrentHashMap<>();

    @Override
    public Set<String> schemes() {
        return Set.of("mem");
    }

    @Override
    public Locker open(String uri, LockerConfig config) {
        UriOptions options = UriOptions.parse(uri).requireKnown(Set.of());
        String base = options.base();
        String name = base.substring(base.indexOf(':') + 1);
        if (name.startsWith("//")) {
            name = name.substring(2);
        }
        InMemoryStore store = STORES.computeIfAbsent(name, InMemoryStore::new);
        return ConsistentKeyLocker.builder(store).config(options.applyTo(config)).build();
    }

    /** The shared store behind {@code mem:NAME} (created if needed), e.g. to inspect lock rows. */
    public static InMemoryStore store(String name) {
        return STORES.computeIfAbsent(name, InMemoryStore::new);
    }
}
