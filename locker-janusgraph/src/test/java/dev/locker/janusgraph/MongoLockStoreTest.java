package dev.locker.janusgraph;

import dev.locker.mongo.InProcessMongo;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** JanusGraph's lock tests with the locks on the in-process MongoDB wire-protocol server. */
class MongoLockStoreTest extends AtomicLockerLockStoreTest {

    private static InProcessMongo mongo;

    @BeforeAll
    static void startMongo() {
        mongo = InProcessMongo.start();
    }

    @AfterAll
    static void stopMongo() {
        mongo.close();
    }

    @Override
    String lockerUri() {
        return mongo.uri() + "&lockerCollection=janusgraph_locks";
    }
}
