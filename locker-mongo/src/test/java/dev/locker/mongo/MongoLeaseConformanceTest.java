package dev.locker.mongo;

import dev.locker.testkit.ConformanceBase;
import dev.locker.testkit.ExpiryAndFencingSection;
import dev.locker.testkit.LeaseDurationsSection;
import dev.locker.testkit.LeaseSection;
import dev.locker.testkit.LockerFixture;

/**
 * The conformance sections on leases over time (expiry, fencing, keep-alive, durations) on a MongoDB of their own;
 * {@link MongoLockerConformanceTest} runs the rest of the suite beside it.
 */
class MongoLeaseConformanceTest extends ConformanceBase implements
        ExpiryAndFencingSection,
        LeaseSection,
        LeaseDurationsSection {

    @Override
    protected LockerFixture createFixture() {
        return newFixture();
    }

    /** An in-process server of its own, or the real mongod that LOCKER_MONGO_URI names. */
    static LockerFixture newFixture() {
        String external = MongoFixture.externalUri();
        return external != null ? MongoFixture.external(external) : MongoFixture.inProcess();
    }
}
