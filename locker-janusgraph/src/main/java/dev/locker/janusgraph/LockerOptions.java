package dev.locker.janusgraph;

import org.janusgraph.diskstorage.configuration.ConfigNamespace;
import org.janusgraph.diskstorage.configuration.ConfigOption;
import org.janusgraph.graphdb.configuration.GraphDatabaseConfiguration;
import org.janusgraph.graphdb.configuration.PreInitializeConfigOptions;

/**
 * The JanusGraph properties of {@link LockerStoreManager}, under {@code storage.locker}. The lock timings come from
 * JanusGraph's own {@code storage.lock.*} properties (see {@link LockerStoreManager}). All three are LOCAL options, like
 * {@code storage.backend}: every instance of a graph must be given the same values (they are not stored in the graph).
 */
@PreInitializeConfigOptions
public final class LockerOptions {

    private LockerOptions() {
    }

    public static final ConfigNamespace LOCKER_NS = new ConfigNamespace(GraphDatabaseConfiguration.STORAGE_NS, "locker",
            "Locks from a Locker backend (locker-janusgraph): set storage.backend to "
                    + "dev.locker.janusgraph.LockerStoreManager and name the data backend it wraps here");

    public static final ConfigOption<String> BACKEND = new ConfigOption<>(LOCKER_NS, "backend",
            "The data backend the locks are taken for: a shorthand JanusGraph knows (cql, hbase, inmemory, ...) or a "
                    + "KeyColumnValueStoreManager class name; its own storage.* options apply as usual",
            ConfigOption.Type.LOCAL, String.class);

    public static final ConfigOption<String> URI = new ConfigOption<>(LOCKER_NS, "uri",
            "The Locker backend by URI: mem:NAME, redis://..., mongodb://..., hbase://... (its module must be on the "
                    + "classpath); query options of the URI override the storage.lock.* timings. mem:NAME grants at "
                    + "acquireLock; mem:NAME?protocol=wait-and-read-back runs JanusGraph's own protocol, deciding at "
                    + "the mutation",
            ConfigOption.Type.LOCAL, String.class);

    public static final ConfigOption<String> NAMESPACE = new ConfigOption<>(LOCKER_NS, "namespace",
            "Prefix of this graph's lock keys on the Locker backend; graphs sharing one Locker backend need distinct "
                    + "namespaces. clearStorage releases every lock under it",
            ConfigOption.Type.LOCAL, "janusgraph");
}
