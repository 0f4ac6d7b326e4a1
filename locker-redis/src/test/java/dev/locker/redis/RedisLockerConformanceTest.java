package dev.locker.redis;

import dev.locker.testkit.LockerConformanceSuite;
import dev.locker.testkit.LockerFixture;

/** The whole conformance suite on one real redis-server (or the server named by LOCKER_REDIS_URI). */
class RedisLockerConformanceTest extends LockerConformanceSuite {

    @Override
    protected LockerFixture createFixture() {
        return new RedisFixture();
    }
}
