package dev.locker.mongo;

import dev.locker.spi.KeyColumnValueStore;
import dev.locker.api.Locker;
import dev.locker.engine.ExpectedValueCheckingStore;
import dev.locker.engine.InMemoryStore;
import dev.locker.testkit.LateGrantSection;
import dev.locker.testkit.LeaseDurationsSection;
import dev.locker.testkit.LockerConformanceSuite;
import dev.locker.testkit.LockerFixture;

/**
 * The shared conformance suite on MongoDB: on the in-process mongo-java-server by default, on a real mongod when
 * LOCKER_MONGO_URI is set (e.g. {@code mongodb://localhost:27017/?replicaSet=rs0}). The expected-value scenarios
 * guard an in-memory data store with the MongoLocker: the locks are MongoDB's, the guarded cells are not.
 */
class MongoLockerConformanceTest extends LockerConformanceSuite implements LeaseDurationsSection,
        LateGrantSection {

    private final InMemoryStore data = new InMemoryStore("evc-data");

    @Override
    protected LockerFixture createFixture() {
        String external = MongoFixture.externalUri();
        return external != null ? MongoFixture.external(external) : MongoFixture.inProcess();
    }

    @Override
    protected KeyColumnValueStore expectedValueChecking(Locker locker) {
        return new ExpectedValueCheckingStore(data, locker);
    }
}
