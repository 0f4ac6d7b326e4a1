package dev.locker.redis;

import dev.locker.api.KeyColumn;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.testkit.FaultProxy;
import dev.locker.testkit.LockerFixture;
import redis.clients.jedis.UnifiedJedis;

import java.time.Duration;

/**
 * The conformance suite's backend: one Redis server (or {@code LOCKER_REDIS_URI}), a key prefix of its own, and
 * lockers with a restart guard no shorter than the longest lease their sections ask for, so a restart in
 * {@link #repairBackend()} is guarded as in production. Breaking the backend is a {@code kill -9} of the server;
 * repairing it starts it again on the same port, without its data, and waits out the guard.
 */
class RedisFixture implements LockerFixture {

    /**
     * Four of the suite's 1.5 s expiries: the longest lease a scenario asks for. A lease's expiry over the guard is
     * refused, since it would outlive a restart that lost its claim.
     */
    static final Duration LONGEST_LEASE_GUARD = Duration.ofSeconds(6);

    /** Two of the suite's 1.5 s expiries: enough for sections whose leases all last one expiry. */
    static final Duration ONE_EXPIRY_LEASE_GUARD = Duration.ofSeconds(3);

    private final Duration restartGuard;
    private final RedisTarget target;
    private FaultProxy proxy;
    private final String prefix = "conformance-" + LockerConfig.randomRid().substring(0, 8) + ":";

    /** A server of its own whose lockers use {@code restartGuard}; a lease asking for more is refused loudly. */
    RedisFixture(Duration restartGuard) {
        this.restartGuard = restartGuard;
        this.target = RedisTarget.start();
        try (UnifiedJedis admin = target.admin()) {
            RedisTarget.awaitUptime(admin, restartGuard);
        }
    }

    @Override
    public Locker open(LockerConfig config) {
        return target.locker(prefix).config(config).restartGuard(guardFor(config)).timeout(Duration.ofSeconds(2)).build();
    }

    @Override
    public boolean expiryFollowsConfiguredClock() {
        return false; // the server's TIME decides expiry
    }

    @Override
    public boolean canBreakBackend() {
        return target.process() != null;
    }

    @Override
    public void breakBackend() {
        target.process().kill9();
    }

    /**
     * Restarts the server without its data and waits out the restart guard, so that the scenarios after this one
     * are not refused; {@link RedisRestartTest} shows the guard itself.
     */
    @Override
    public void repairBackend() {
        target.process().startAgain();
        try (UnifiedJedis admin = target.admin()) {
            RedisTarget.awaitUptime(admin, restartGuard);
        }
    }

    @Override
    public boolean canLoseClaims() {
        return true;
    }

    /** Deletes the lock's hash, as a restart without persistence would (the restart guard is not in the way). */
    @Override
    public void loseClaims(KeyColumn lock) {
        try (RedisLocker keys = target.locker(prefix).restartGuard(Duration.ZERO).build();
             UnifiedJedis admin = target.admin()) {
            admin.del(keys.redisKey(lock));
        }
    }

    @Override
    public boolean canFreezeConnections() {
        return target.process() != null;
    }

    @Override
    public synchronized Locker openFreezable(LockerConfig config) {
        if (proxy == null) {
            proxy = new FaultProxy("127.0.0.1", target.process().port());
        }
        return RedisLocker.builder().uri("redis://127.0.0.1:" + proxy.port()).keyPrefix(prefix).config(config)
                .restartGuard(guardFor(config)).timeout(Duration.ofSeconds(2)).build();
    }

    /** A scenario whose expiry outlasts the guard never restarts the server: it runs unguarded. */
    private Duration guardFor(LockerConfig config) {
        return config.expiry().compareTo(restartGuard) > 0 ? Duration.ZERO : restartGuard;
    }

    @Override
    public void freezeConnections() {
        proxy.freeze();
    }

    @Override
    public void thawConnections() {
        proxy.thaw();
    }

    @Override
    public void close() {
        if (proxy != null) {
            proxy.close();
        }
        target.close();
    }
}
