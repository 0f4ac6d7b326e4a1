package dev.locker.redis;

import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.testkit.LockerFixture;
import dev.locker.testkit.RedisServer;

import java.time.Duration;

/** The conformance suite's backend on a local three-master Redis Cluster of its own, with a key prefix of its own. */
final class RedisClusterFixture implements LockerFixture {

    private final RedisServer.Cluster cluster = RedisServer.startCluster();
    private final String prefix = "cluster-" + LockerConfig.randomRid().substring(0, 8) + ":";

    RedisServer.Cluster cluster() {
        return cluster;
    }

    @Override
    public Locker open(LockerConfig config) {
        return RedisLocker.builder().uri(cluster.uri()).keyPrefix(prefix).config(config)
                .restartGuard(Duration.ZERO).build();
    }

    @Override
    public boolean expiryFollowsConfiguredClock() {
        return false;
    }

    @Override
    public void close() {
        cluster.close();
    }
}
