package dev.locker.engine;

import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockerProvider;
import dev.locker.api.OptionSyntax;
import dev.locker.spi.UriOptions;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The {@code mem:} backend, <b>inside one JVM only</b>: a {@link ConsistentKeyLocker} over an {@link InMemoryStore}
 * that lives as long as this JVM. {@code mem:} and {@code mem:NAME} name the store; lockers opened on the same name in
 * this JVM share it, different names are independent. Another process never sees these locks: two JVMs on
 * {@code mem:jobs} both get every lock. For processes of one host use {@code file:DIR} (module {@code locker-file}),
 * across hosts Redis, MongoDB or HBase. Common options apply ({@code mem:jobs?lockWait=5ms}).
 */
public final class MemLockerProvider implements LockerProvider {

    private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(MemLockerProvider.class);

    private static final ConcurrentHashMap<String, InMemoryStore> STORES = new ConcurrentHashMap<>();

    @Override
    public Set<String> schemes() {
        return Set.of("mem");
    }

    @Override
    public Locker open(String uri, LockerConfig config) {
        Parsed p = parse(uri, config);
        InMemoryStore store = STORES.computeIfAbsent(p.name(), n -> {
            log.info("mem:{} keeps its locks in this JVM only: other processes do not see them (two JVMs on mem:{} both "
                    + "get every lock); for the processes of one host use file:DIR, across hosts redis://, mongodb:// "
                    + "or hbase://", n, n);
            return new InMemoryStore(n);
        });
        return ConsistentKeyLocker.builder(store).config(p.config()).build();
    }

    @Override
    public LockerConfig check(String uri, LockerConfig config) {
        return parse(uri, config).config();
    }

    /** The common options only. */
    @Override
    public OptionSyntax optionSyntax() {
        return UriOptions.syntax(Set.of());
    }

    /** A {@code mem:} URI read: the store's name and the effective configuration. */
    private record Parsed(String name, LockerConfig config) {
    }

    /** The one parse of a {@code mem:} URI, for {@link #open} and {@link #check}; no store is created. */
    private static Parsed parse(String uri, LockerConfig config) {
        UriOptions options = UriOptions.parse(uri).requireKnown(Set.of());
        String base = options.base();
        String name = base.substring(base.indexOf(':') + 1);
        if (name.startsWith("//")) {
            name = name.substring(2);
        }
        return new Parsed(name, options.applyTo(config));
    }

    /** Whether the store of {@code mem:NAME} exists (for tests: {@link #check} creates none). */
    static boolean hasStore(String name) {
        return STORES.containsKey(name);
    }

    /** The shared store behind {@code mem:NAME} (created if needed), e.g. to inspect lock rows. */
    public static InMemoryStore store(String name) {
        return STORES.computeIfAbsent(name, InMemoryStore::new);
    }
}
