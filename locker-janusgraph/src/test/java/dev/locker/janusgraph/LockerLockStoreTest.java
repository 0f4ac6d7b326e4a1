package dev.locker.janusgraph;

import org.janusgraph.diskstorage.BackendException;
import org.janusgraph.diskstorage.LockKeyColumnValueStoreTest;
import org.janusgraph.diskstorage.configuration.Configuration;
import org.janusgraph.diskstorage.configuration.ModifiableConfiguration;
import org.janusgraph.diskstorage.keycolumnvalue.KeyColumnValueStoreManager;
import org.janusgraph.graphdb.configuration.GraphDatabaseConfiguration;

/**
 * JanusGraph's own {@link LockKeyColumnValueStoreTest}, unmodified, on {@link LockerStoreManager} over a data store
 * the test's eight "processes" share, with the locks on the Locker backend a subclass names by URI. JanusGraph gives
 * every process its own mediator group and instance id, a 5 s lock expiry and 10 retries; the wrapper maps them.
 */
abstract class LockerLockStoreTest extends LockKeyColumnValueStoreTest {

    /** The Locker backend under test. */
    abstract String lockerUri();

    @Override
    public KeyColumnValueStoreManager openStorageManager(int id, Configuration configuration) throws BackendException {
        ModifiableConfiguration c = (ModifiableConfiguration) configuration;
        c.set(GraphDatabaseConfiguration.STORAGE_BACKEND, LockerStoreManager.class.getName());
        c.set(LockerOptions.BACKEND, SharedInMemoryStoreManager.class.getName());
        c.set(GraphDatabaseConfiguration.STORAGE_DIRECTORY, "lock-store-test-" + concreteClassName);
        c.set(LockerOptions.URI, lockerUri());
        c.set(LockerOptions.NAMESPACE, concreteClassName);
        return new LockerStoreManager(c);
    }
}
