package dev.locker.engine;

import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockerProvider;
import dev.locker.api.Lockers;
import dev.locker.api.OptionSyntax;
import dev.locker.spi.UriOptions;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The {@code mem:} backend, <b>inside one JVM only</b>. {@code mem:} and {@code mem:NAME} name a store that lives as
 * long as this JVM; lockers opened on the same name in this JVM share it, different names are independent. Another
 * process never sees these locks: two JVMs on {@code mem:jobs} both get every lock. For processes of one host use
 * {@code file:DIR} (module {@code locker-file}), across hosts Redis, MongoDB or HBase.
 *
 * <p>Two protocols, chosen by the {@code protocol} option. {@code atomic}, the default, is a {@link MemLocker}: each
 * grant is one atomic step, so leases of a few milliseconds work, as on the native backends.
 * {@code protocol=wait-and-read-back} is a {@link ConsistentKeyLocker} over an {@link InMemoryStore}: JanusGraph's
 * protocol, with its lock-wait, which refuses expiries under about twice the lock-wait. One name serves one protocol:
 * a locker asking for the other one on a name in use is refused, since the two would never meet on a lock.
 */
public final class MemLockerProvider implements LockerProvider {

    private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(MemLockerProvider.class);

    /** The option that picks the protocol. */
    static final String PROTOCOL = "protocol";
    static final String ATOMIC = "atomic";
    static final String WAIT_AND_READ_BACK = "wait-and-read-back";

    /** Each name's store: a {@link MemLockTable} (atomic) or an {@link InMemoryStore} (wait-and-read-back). */
    private static final ConcurrentHashMap<String, Object> STORES = new ConcurrentHashMap<>();

    @Override
    public Set<String> schemes() {
        return Set.of("mem");
    }

    @Override
    public Locker open(String uri, LockerConfig config) {
        Parsed p = parse(uri, config);
        Object store = STORES.computeIfAbsent(p.name(), n -> {
            log.info("mem:{} keeps its locks in this JVM only: other processes do not see them (two JVMs on mem:{} both "
                    + "get every lock); for the processes of one host use file:DIR, across hosts redis://, mongodb:// "
                    + "or hbase://", n, n);
            return p.atomic() ? new MemLockTable(n) : new InMemoryStore(n);
        });
        if (store instanceof MemLockTable) {
            if (!p.atomic()) {
                throw mixed(p.name(), ATOMIC, WAIT_AND_READ_BACK);
            }
            return MemLocker.builder((MemLockTable) store).config(p.config()).build();
        }
        if (p.atomic()) {
            throw mixed(p.name(), WAIT_AND_READ_BACK, ATOMIC);
        }
        return ConsistentKeyLocker.builder((InMemoryStore) store).config(p.config()).build();
    }

    private static IllegalArgumentException mixed(String name, String inUse, String asked) {
        return new IllegalArgumentException("mem:" + name + " serves protocol=" + inUse + " in this JVM, and a locker "
                + "asked for protocol=" + asked + ": lockers of the two protocols never meet on a lock, so one name "
                + "serves one protocol; use another name, or the same protocol");
    }

    @Override
    public LockerConfig check(String uri, LockerConfig config) {
        return parse(uri, config).config();
    }

    /** The common options, and {@code protocol}. */
    @Override
    public OptionSyntax optionSyntax() {
        return UriOptions.syntax(Set.of(PROTOCOL));
    }

    /** A {@code mem:} URI read: the store's name, the protocol and the effective configuration. */
    private record Parsed(String name, boolean atomic, LockerConfig config) {
    }

    /** The one parse of a {@code mem:} URI, for {@link #open} and {@link #check}; no store is created. */
    private static Parsed parse(String uri, LockerConfig config) {
        UriOptions options = UriOptions.parse(uri).requireKnown(Set.of(PROTOCOL));
        String base = options.base();
        String name = base.substring(base.indexOf(':') + 1);
        if (name.startsWith("//")) {
            name = name.substring(2);
        }
        String protocol = options.get(PROTOCOL, ATOMIC);
        if (!protocol.equals(ATOMIC) && !protocol.equals(WAIT_AND_READ_BACK)) {
            throw new IllegalArgumentException("option protocol=" + UriOptions.shown(uri, protocol) + " is not "
                    + ATOMIC + " or " + WAIT_AND_READ_BACK + " in locker URI " + Lockers.redact(uri));
        }
        LockerConfig effective = options.applyTo(config);
        if (protocol.equals(WAIT_AND_READ_BACK) && effective.lockWait().isZero()) {
            throw new IllegalArgumentException("lockWait must be positive for protocol=" + WAIT_AND_READ_BACK
                    + ": it bounds how late a claim may become visible, in locker URI " + Lockers.redact(uri));
        }
        return new Parsed(name, protocol.equals(ATOMIC), effective);
    }

    /** Whether the store of {@code mem:NAME} exists (for tests: {@link #check} creates none). */
    static boolean hasStore(String name) {
        return STORES.containsKey(name);
    }

    /**
     * The wait-and-read-back store behind {@code mem:NAME} (created if needed), e.g. to inspect lock rows.
     *
     * @throws IllegalArgumentException when the name serves the atomic protocol
     */
    public static InMemoryStore store(String name) {
        Object store = STORES.computeIfAbsent(name, InMemoryStore::new);
        if (!(store instanceof InMemoryStore)) {
            throw mixed(name, ATOMIC, WAIT_AND_READ_BACK);
        }
        return (InMemoryStore) store;
    }

    /**
     * The atomic table behind {@code mem:NAME} (created if needed), e.g. to build a {@link MemLocker} on it.
     *
     * @throws IllegalArgumentException when the name serves the wait-and-read-back protocol
     */
    public static MemLockTable table(String name) {
        Object store = STORES.computeIfAbsent(name, MemLockTable::new);
        if (!(store instanceof MemLockTable)) {
            throw mixed(name, WAIT_AND_READ_BACK, ATOMIC);
        }
        return (MemLockTable) store;
    }
}
