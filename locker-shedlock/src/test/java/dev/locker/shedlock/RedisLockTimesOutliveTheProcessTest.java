package dev.locker.shedlock;

import dev.locker.testkit.RedisServer;

/** ShedLock's durations outlive the holding process on a real {@code redis-server}. */
class RedisLockTimesOutliveTheProcessTest extends LockTimesOutliveTheProcess {

    private RedisServer redis;

    @Override
    void startBackend() {
        redis = RedisServer.start();
    }

    @Override
    void stopBackend() {
        if (redis != null) {
            redis.close();
        }
    }

    @Override
    String uri(String options) {
        return redis.uri() + "&" + options;
    }
}
