package dev.locker.mongo;

import dev.locker.spi.KeyColumnValueStore;
import dev.locker.api.Locker;
import dev.locker.engine.ExpectedValueCheckingStore;
import dev.locker.engine.InMemoryStore;
import dev.locker.testkit.LeaseDurationsSection;
import dev.locker.testkit.LockerConformanceSuite;
import dev.locker.testkit.LockerFixture;
import org.testcontainers.containers.MongoDBContainer;
import org.testcontainers.junit.jupiter.Container;
import org.testcontainers.junit.jupiter.Testcontainers;

/**
 * The shared conformance suite on a real MongoDB 7 single-node replica set in Docker, for machines that have Docker;
 * skipped elsewhere.
 */
@Testcontainers(disabledWithoutDocker = true)
class MongoLockerContainerConformanceTest extends LockerConformanceSuite implements LeaseDurationsSection {

    @Container
    static final MongoDBContainer MONGO = new MongoDBContainer("mongo:7");

    private final InMemoryStore data = new InMemoryStore("evc-data");

    @Override
    protected LockerFixture createFixture() {
        return MongoFixture.external(MONGO.getReplicaSetUrl("locker_test"));
    }

    @Override
    protected KeyColumnValueStore expectedValueChecking(Locker locker) {
        return new ExpectedValueCheckingStore(data, locker);
    }
}
