package dev.locker.janusgraph;

import org.janusgraph.diskstorage.configuration.Configuration;
import org.janusgraph.diskstorage.inmemory.InMemoryStoreManager;
import org.janusgraph.diskstorage.keycolumnvalue.KCVSManagerProxy;
import org.janusgraph.graphdb.configuration.GraphDatabaseConfiguration;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A cheap data backend that several store managers (the "processes" of a test) share, as they would share a Cassandra
 * or HBase cluster: JanusGraph's in-memory store, one per {@code storage.directory} name. Closing a manager leaves the
 * data to the others; {@code clearStorage} clears it for all.
 */
public class SharedInMemoryStoreManager extends KCVSManagerProxy {

    private static final Map<String, InMemoryStoreManager> SHARED = new ConcurrentHashMap<>();

    public SharedInMemoryStoreManager(Configuration config) {
        super(SHARED.computeIfAbsent(name(config), n -> new InMemoryStoreManager(config)));
    }

    private static String name(Configuration config) {
        if (!config.has(GraphDatabaseConfiguration.STORAGE_DIRECTORY)) {
            throw new IllegalArgumentException("SharedInMemoryStoreManager needs storage.directory: the name of the share");
        }
        return config.get(GraphDatabaseConfiguration.STORAGE_DIRECTORY);
    }

    @Override
    public void close() {
        // shared with the other managers of the test
    }
}
