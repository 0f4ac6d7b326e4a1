package dev.locker.janusgraph;

import dev.locker.mongo.InProcessMongo;
import dev.locker.testkit.FaultProxy;
import org.janusgraph.diskstorage.BackendException;
import org.janusgraph.diskstorage.StaticBuffer;
import org.janusgraph.diskstorage.keycolumnvalue.KeyColumnValueStore;
import org.janusgraph.diskstorage.keycolumnvalue.StoreTransaction;
import org.janusgraph.diskstorage.locking.TemporaryLockingException;
import org.janusgraph.diskstorage.util.KeyColumn;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static dev.locker.janusgraph.GraphInstances.buffer;
import static dev.locker.janusgraph.GraphInstances.lockAndWrite;
import static dev.locker.janusgraph.GraphInstances.tryCommitRepeatedly;
import static dev.locker.janusgraph.GraphInstances.tx;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** locker-janusgraph on the in-process MongoDB wire-protocol server. */
class MongoJanusGraphTest {

    private static InProcessMongo mongo;

    private final String share = "jg-mongo-" + System.nanoTime();
    private final GraphInstances graphs = new GraphInstances(share);

    @BeforeAll
    static void startMongo() {
        mongo = InProcessMongo.start();
    }

    @AfterAll
    static void stopMongo() {
        mongo.close();
    }

    @AfterEach
    void closeAll() throws Exception {
        graphs.close();
    }

    private static int port(String uri) {
        String hostPort = uri.substring("mongodb://".length(), uri.indexOf('/', "mongodb://".length()));
        return Integer.parseInt(hostPort.substring(hostPort.lastIndexOf(':') + 1));
    }

    /** A URI whose calls give up after {@code socketTimeoutMs} without a reply. */
    private String uri(int port, int socketTimeoutMs) {
        return "mongodb://127.0.0.1:" + port + "/?serverSelectionTimeoutMS=3000&connectTimeoutMS=3000"
                + "&socketTimeoutMS=" + socketTimeoutMs + "&lockerCollection=" + share.replace('-', '_');
    }

    private LockerStoreManager open(String instance, String uri) throws BackendException {
        return graphs.open(GraphInstances.config(share, instance, share, uri, Duration.ofMinutes(5)));
    }

    /**
     * A claim whose upsert timed out reaches the server later, after its transaction rolled back without deleteLocks.
     * The backend withdraws it until it can, so the lock is not blocked for the whole expiry on any instance.
     */
    @Test
    void aTimedOutClaimIsWithdrawnAndDoesNotBlockTheLockForTheExpiry() throws Exception {
        StaticBuffer key = buffer("unique-value");
        StaticBuffer column = buffer("c");
        // only A's calls are to time out (those the proxy holds); on a loaded host the rest may take seconds
        LockerStoreManager b = open("b", uri(port(mongo.uri()), 30_000));
        KeyColumnValueStore storeB = b.openDatabase("graphindex");
        try (FaultProxy proxy = new FaultProxy("127.0.0.1", port(mongo.uri()))) {
            LockerStoreManager a = open("a", uri(proxy.port(), 2_000));
            KeyColumnValueStore storeA = a.openDatabase("graphindex");
            StoreTransaction warm = tx(a);
            lockAndWrite(storeA, buffer("warm-up"), column, "x", warm);
            warm.commit();
            proxy.freeze();
            StoreTransaction t = tx(a);
            assertThrows(TemporaryLockingException.class, () -> storeA.acquireLock(key, column, null, t));
            t.rollback(); // JanusGraph's rollback: the store was never recorded, so no deleteLocks
            proxy.thaw(); // the held request reaches the server now
            Thread.sleep(1000);
        }
        boolean committed = tryCommitRepeatedly(b, storeB, key, column, "b", 50, 100);
        assertTrue(committed, "the lock is still blocked by the claim of a transaction that failed and rolled back: "
                + b.locker().holder(new LockKeys(share, "graphindex_lock_").lockOf(new KeyColumn(key, column))));
    }
}
