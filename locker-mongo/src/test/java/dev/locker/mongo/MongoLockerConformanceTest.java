package dev.locker.mongo;

import dev.locker.testkit.LockerConformanceSuite;
import dev.locker.testkit.LockerFixture;

/**
 * The shared conformance suite on MongoDB: on the in-process mongo-java-server by default, on a real mongod when
 * LOCKER_MONGO_URI is set (e.g. {@code mongodb://localhost:27017/?replicaSet=rs0}).
 */
class MongoLockerConformanceTest extends LockerConformanceSuite {

    @Override
    protected LockerFixture createFixture() {
        String external = MongoFixture.externalUri();
        return external != null ? MongoFixture.external(external) : MongoFixture.inProcess();
    }
}
