package dev.locker.janusgraph;

import org.janusgraph.diskstorage.BackendException;
import org.janusgraph.diskstorage.StaticBuffer;
import org.janusgraph.diskstorage.configuration.ModifiableConfiguration;
import org.janusgraph.diskstorage.keycolumnvalue.KeyColumnValueStore;
import org.janusgraph.diskstorage.keycolumnvalue.StoreTransaction;
import org.janusgraph.diskstorage.locking.PermanentLockingException;
import org.janusgraph.diskstorage.locking.TemporaryLockingException;
import org.janusgraph.diskstorage.util.StaticArrayEntry;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static dev.locker.janusgraph.GraphInstances.buffer;
import static dev.locker.janusgraph.GraphInstances.tx;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The wrapper's own promises, on {@code mem:} with a data store shared by the test's "processes". */
class LockerStoreManagerTest {

    private static final String URI = "mem:locker-store-manager-test?protocol=wait-and-read-back&lockWait=10ms";
    private final String share = "manager-test-" + System.nanoTime();

    private ModifiableConfiguration config(String instance) {
        return GraphInstances.config(SharedInMemoryStoreManager.class, share, instance, share + instance, share, URI,
                Duration.ofMinutes(5));
    }

    @Test
    void aMissingLockerUriIsAClearErrorBeforeAnyConnection() {
        ModifiableConfiguration c = config("a");
        c.remove(LockerOptions.URI);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new LockerStoreManager(c));
        assertTrue(e.getMessage().contains("storage.locker.uri"), e.getMessage());
        ModifiableConfiguration self = config("a");
        self.set(LockerOptions.BACKEND, LockerStoreManager.class.getName());
        assertThrows(IllegalArgumentException.class, () -> new LockerStoreManager(self));
    }

    @Test
    void aPasswordInTheUriNeverReachesAMessage() {
        ModifiableConfiguration c = config("a");
        c.set(LockerOptions.URI, "nosuch://user:s3cret@host/");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new LockerStoreManager(c));
        assertTrue(!e.getMessage().contains("s3cret"), e.getMessage());
    }

    /** JanusGraph's own locker takes a lock on a 6000-character unique value; so do we (through its stand-in). */
    @Test
    void aLongIndexValueIsLockedAndContended() throws Exception {
        try (Managers m = new Managers()) {
            StaticBuffer key = buffer("v".repeat(6000));
            StaticBuffer column = buffer("c");
            StoreTransaction t1 = tx(m.a);
            m.storeA.acquireLock(key, column, null, t1);
            m.storeA.mutate(key, List.of(StaticArrayEntry.of(column, buffer("x"))), List.of(), t1); // checks the locks
            StoreTransaction t2 = tx(m.b);
            m.storeB.acquireLock(key, column, null, t2);
            TemporaryLockingException e = assertThrows(TemporaryLockingException.class,
                    () -> m.storeB.mutate(key, List.of(StaticArrayEntry.of(column, buffer("y"))), List.of(), t2));
            assertInstanceOf(dev.locker.api.TemporaryLockingException.class, e.getCause());
            t2.rollback();
            t1.commit();
        }
    }

    /** A graph's clearStorage releases the locks of its namespace, even those of a transaction that leaked. */
    @Test
    void clearStorageReleasesTheNamespacesLocks() throws Exception {
        try (Managers m = new Managers()) {
            StaticBuffer key = buffer("unique-value");
            StaticBuffer column = buffer("c");
            StoreTransaction leaked = tx(m.a);
            m.storeA.acquireLock(key, column, null, leaked);
            m.storeA.mutate(key, List.of(StaticArrayEntry.of(column, buffer("x"))), List.of(), leaked);
            m.b.clearStorage();
            StoreTransaction next = tx(m.b);
            m.storeB.acquireLock(key, column, null, next);
            m.storeB.mutate(key, List.of(StaticArrayEntry.of(column, buffer("y"))), List.of(), next); // held now
            next.commit();
        }
    }

    @Test
    void anExpectedValueMismatchIsPermanent() throws Exception {
        try (Managers m = new Managers()) {
            StoreTransaction t = tx(m.a);
            m.storeA.acquireLock(buffer("k"), buffer("c"), buffer("expected"), t);
            assertThrows(PermanentLockingException.class,
                    () -> m.storeA.mutate(buffer("k"), List.of(StaticArrayEntry.of(buffer("c"), buffer("v"))), List.of(), t));
            t.rollback();
        }
    }

    /** Two "processes" (own mediator group and instance id each) on one data store and one Locker backend. */
    private final class Managers implements AutoCloseable {
        final LockerStoreManager a = new LockerStoreManager(config("a"));
        final LockerStoreManager b = new LockerStoreManager(config("b"));
        final KeyColumnValueStore storeA = a.openDatabase("graphindex");
        final KeyColumnValueStore storeB = b.openDatabase("graphindex");

        Managers() throws BackendException {
        }

        @Override
        public void close() throws BackendException {
            a.close();
            b.close();
        }
    }
}
