package dev.locker.bench;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockerConfig;
import dev.locker.redis.RedisLocker;
import org.redisson.Redisson;
import org.redisson.api.RFencedLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import redis.clients.jedis.ConnectionPoolConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.params.SetParams;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One way of taking a lock on Redis: Locker, the raw floor (SET NX PX, then a compare-and-delete script), the fenced
 * floor (a grant script that issues a token, a compare-and-delete script that keeps it) or Redisson's
 * {@link RFencedLock}. Each offers an acquire-and-release of a named lock (uncontended: every thread has its
 * own) and an acquire that keeps the lock held (for the memory rows).
 */
abstract class RedisContender implements AutoCloseable {

    /** Connections per client: enough for the most threads a workload runs. */
    static final int POOL = 16;

    final String name;

    RedisContender(String name) {
        this.name = name;
    }

    /** Acquires and releases {@code lock}; throws when it was not granted. */
    abstract void pair(String lock);

    /** Acquires {@code lock} and keeps it (for 30 minutes at most); returns what a user would keep to release it. */
    abstract Object hold(String lock);

    static RedisContender of(String name, int port) {
        return switch (name) {
            case "locker" -> new Ours(port);
            case "raw" -> new Raw(port);
            case "fenced" -> new Fenced(port);
            case "redisson" -> new Theirs(port);
            default -> throw new IllegalArgumentException("no Redis contender named " + name);
        };
    }

    /** Locker with its defaults: fencing, owner checks, restart guard and eviction check on. */
    static final class Ours extends RedisContender {
        /** The default restart guard, which covers the 60 s expiry of the timed rows. */
        private static final Duration GUARD = Duration.ofSeconds(60);

        final RedisLocker locker;

        Ours(int port) {
            this(port, Duration.ofSeconds(60));
        }

        Ours(int port, Duration expiry) {
            // the guard must cover the expiry, so the 30-minute leases of the held-locks row would keep the fresh
            // server refusing grants for 30 minutes; they run unguarded instead. Their acquires still read the
            // admission marker for the eviction check, so a grant costs what a guarded one does
            this(port, expiry, expiry.compareTo(GUARD) <= 0 ? GUARD : Duration.ZERO);
        }

        /** With a restart guard of {@code guard} (on: its cost per grant is the same whatever its length). */
        Ours(int port, Duration expiry, Duration guard) {
            super("Locker");
            locker = RedisLocker.builder().node("127.0.0.1", port).poolSize(POOL).restartGuard(guard)
                    .config(LockerConfig.builder().expiry(expiry).build()).build();
        }

        @Override
        void pair(String lock) {
            try (Lease lease = locker.acquire(KeyColumn.named(lock), "bench")) {
                if (lease.fencingToken() <= 0) {
                    throw new IllegalStateException("no token");
                }
            }
        }

        @Override
        Object hold(String lock) {
            return locker.acquire(KeyColumn.named(lock), "bench");
        }

        @Override
        public void close() {
            locker.close();
        }
    }

    /** The floor: what a careful hand-written Redis lock does (unique token, SET NX PX, compare-and-delete). */
    static final class Raw extends RedisContender {
        private static final byte[] UNLOCK = ("if redis.call('get', KEYS[1]) == ARGV[1] then "
                + "return redis.call('del', KEYS[1]) else return 0 end").getBytes(StandardCharsets.US_ASCII);
        private final RedisClient client;
        private final byte[] sha;
        private final AtomicLong tokens = new AtomicLong();
        private final String instance = Long.toHexString(System.nanoTime());

        Raw(int port) {
            super("raw Jedis");
            ConnectionPoolConfig pool = new ConnectionPoolConfig();
            pool.setMaxTotal(POOL);
            pool.setMaxIdle(POOL);
            client = RedisClient.builder().hostAndPort(new HostAndPort("127.0.0.1", port))
                    .clientConfig(DefaultJedisClientConfig.builder().build()).poolConfig(pool).build();
            sha = client.scriptLoad(UNLOCK, new byte[]{'x'});
        }

        @Override
        void pair(String lock) {
            byte[] key = ("raw:" + lock).getBytes(StandardCharsets.UTF_8);
            byte[] token = (instance + tokens.incrementAndGet()).getBytes(StandardCharsets.US_ASCII);
            if (client.set(key, token, SetParams.setParams().nx().px(30_000)) == null) {
                throw new IllegalStateException("raw lock " + lock + " is held");
            }
            client.evalsha(sha, List.of(key), List.of(token));
        }

        @Override
        Object hold(String lock) {
            byte[] key = ("raw:" + lock).getBytes(StandardCharsets.UTF_8);
            byte[] token = (instance + tokens.incrementAndGet()).getBytes(StandardCharsets.US_ASCII);
            if (client.set(key, token, SetParams.setParams().nx().px(1_800_000)) == null) {
                throw new IllegalStateException("raw lock " + lock + " is held");
            }
            return token;
        }

        @Override
        public void close() {
            client.close();
        }
    }

    /**
     * The fenced floor: the least a lock with fencing tokens does on Redis 7.0, where a grant that issues a token must be
     * a script. The grant derives the token from the server's clock, and keeps it above the lock's last token. The
     * release is a compare-and-delete that leaves the bare token behind, so that later tokens stay higher. No owner
     * record, no wait queue, no restart guard, no eviction check: the value is "token owner" while held, "token" after.
     */
    static final class Fenced extends RedisContender {
        /** KEYS[1] the lock; ARGV[1] the owner, ARGV[2] the expiry in ms. The token, or nil when the lock is held. */
        static final String GRANT = """
                local v = redis.call('GET', KEYS[1])
                local last = 0
                if v then
                  if string.find(v, ' ', 1, true) then return false end
                  last = tonumber(v)
                end
                local t = redis.call('TIME')
                local token = math.max(last + 1, t[1] * 1000000 + t[2])
                redis.call('SET', KEYS[1], string.format('%d', token) .. ' ' .. ARGV[1], 'PX', ARGV[2])
                return token
                """;
        /** KEYS[1] the lock; ARGV[1] the token, ARGV[2] the owner. 1 when the claim was ours and is released. */
        static final String RELEASE = """
                if redis.call('GET', KEYS[1]) == ARGV[1] .. ' ' .. ARGV[2] then
                  redis.call('SET', KEYS[1], ARGV[1], 'KEEPTTL')
                  return 1
                end
                return 0
                """;
        private final RedisClient client;
        private final byte[] grant;
        private final byte[] release;
        private final byte[] owner = Long.toHexString(System.nanoTime()).getBytes(StandardCharsets.US_ASCII);

        Fenced(int port) {
            super("fenced script pair");
            ConnectionPoolConfig pool = new ConnectionPoolConfig();
            pool.setMaxTotal(POOL);
            pool.setMaxIdle(POOL);
            client = RedisClient.builder().hostAndPort(new HostAndPort("127.0.0.1", port))
                    .clientConfig(DefaultJedisClientConfig.builder().build()).poolConfig(pool).build();
            grant = client.scriptLoad(GRANT.getBytes(StandardCharsets.US_ASCII), new byte[]{'x'});
            release = client.scriptLoad(RELEASE.getBytes(StandardCharsets.US_ASCII), new byte[]{'x'});
        }

        @Override
        void pair(String lock) {
            byte[] key = ("fenced:" + lock).getBytes(StandardCharsets.UTF_8);
            byte[] token = grant(key, 30_000, lock);
            if (!Long.valueOf(1).equals(client.evalsha(release, List.of(key), List.of(token, owner)))) {
                throw new IllegalStateException("fenced lock " + lock + " was not ours at its release");
            }
        }

        @Override
        Object hold(String lock) {
            return grant(("fenced:" + lock).getBytes(StandardCharsets.UTF_8), 1_800_000, lock);
        }

        private byte[] grant(byte[] key, long px, String lock) {
            Object token = client.evalsha(grant, List.of(key), List.of(owner, Long.toString(px).getBytes(
                    StandardCharsets.US_ASCII)));
            if (!(token instanceof Long t) || t <= 0) {
                throw new IllegalStateException("fenced lock " + lock + " is held");
            }
            return Long.toString(t).getBytes(StandardCharsets.US_ASCII);
        }

        @Override
        public void close() {
            client.close();
        }
    }

    /** Redisson's fenced lock, with its defaults (watchdog renewal on {@link #pair}). */
    static final class Theirs extends RedisContender {
        final RedissonClient redisson;

        Theirs(int port) {
            this(port, null);
        }

        /**
         * With {@code timeout} (not null) as the reply timeout instead of Redisson's 3 s: holding a million locks on a
         * loaded 2-CPU host, single replies took longer than 3 s and the client gave up.
         */
        Theirs(int port, Duration timeout) {
            super("Redisson RFencedLock");
            Config c = new Config();
            var server = c.useSingleServer().setAddress("redis://127.0.0.1:" + port);
            if (timeout != null) {
                // holding a million locks: patient replies, more connections and retries (with Redisson's defaults
                // its pool gave out, "Unable to acquire connection", on this 2-CPU host)
                server.setTimeout((int) timeout.toMillis()).setConnectionPoolSize(128).setConnectionMinimumIdleSize(8)
                        .setRetryAttempts(3);
                // Redisson 3.52 schedules its renewal task for a fenced lock taken with a lease time too, and renews
                // every held lock in batches each third of the watchdog timeout (30 s by default): at 50k held locks
                // those batches failed and logged every lock's name per failure until the heap ran out. Holding
                // locks for 30 minutes, as Locker's leases here, its watchdog period is 30 minutes too
                c.setLockWatchdogTimeout(Duration.ofMinutes(30).toMillis());
            }
            redisson = Redisson.create(c);
        }

        @Override
        void pair(String lock) {
            RFencedLock l = redisson.getFencedLock("redisson:" + lock);
            Long token = l.lockAndGetToken();
            if (token == null) {
                throw new IllegalStateException("no token");
            }
            l.unlock();
        }

        @Override
        Object hold(String lock) {
            RFencedLock l = redisson.getFencedLock("redisson:" + lock);
            l.lockAndGetToken(30, TimeUnit.MINUTES); // a lease time: no watchdog renewing a million locks
            return l;
        }

        @Override
        public void close() {
            redisson.shutdown();
        }
    }
}
