package dev.locker.shedlock;

import dev.locker.mongo.InProcessMongo;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** ShedLock's provider suite on MongoDB's wire protocol, served in-process by mongo-java-server. */
class MongoShedLockSuiteTest extends ShedLockSuiteOverLocker {

    private static InProcessMongo mongo;
    private static LockerLockProvider provider;

    @BeforeAll
    static void open() {
        mongo = InProcessMongo.start();
        provider = LockerLockProvider.open(mongo.uri());
    }

    @AfterAll
    static void close() {
        provider.close();
        mongo.close();
    }

    @Override
    LockerLockProvider provider() {
        return provider;
    }
}
