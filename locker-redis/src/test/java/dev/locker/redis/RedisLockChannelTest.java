package dev.locker.redis;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import redis.clients.jedis.BinaryJedisPubSub;
import redis.clients.jedis.Connection;
import redis.clients.jedis.Protocol;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static dev.locker.redis.RedisWaitingFixture.awaitTrue;
import static dev.locker.redis.RedisWaitingFixture.configured;
import static dev.locker.redis.RedisWaitingFixture.lock;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A release wakes only the lockers waiting on that lock, through the lock's own channel, and builds that publish on
 * the prefix's channel still wake and are woken. Counts are read on a real server and a raw subscriber.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class RedisLockChannelTest {

    private static final Duration EXPIRY = Duration.ofMillis(1500);

    // a server of its own: one test kills every pub/sub client of the server
    @RegisterExtension
    static final RedisWaitingFixture fixture = RedisWaitingFixture.onFreshTarget("rlc");

    private RedisLocker locker(String name, Duration linger) {
        return fixture.open(configured(fixture.onTarget(), name, EXPIRY, linger));
    }

    private RedisLocker locker(String name) {
        return locker(name, Duration.ofMinutes(1));
    }

    private static byte[] channelOf(RedisLocker l, KeyColumn lock) {
        return RedisKeys.lockChannel(l.redisKey(lock));
    }

    private byte[] prefixChannel() {
        return (fixture.prefix() + "released").getBytes(StandardCharsets.US_ASCII);
    }

    /** How many connections the server counts on {@code channel}. */
    private long numsub(byte[] channel) {
        List<?> r = (List<?>) fixture.admin().sendCommand(Protocol.Command.PUBSUB, "NUMSUB".getBytes(), channel);
        return (Long) r.get(1);
    }

    /** Waits until {@code l} is queued for {@code lock} and listens on its channel. */
    private void awaitListening(RedisLocker l, KeyColumn lock) throws InterruptedException {
        awaitTrue(() -> l.wakeupListening(lock), "never listened on the lock's channel");
    }

    /**
     * Four lockers each wait on a lock of their own, all held by one process. Releasing one lock sends one message,
     * on its channel, to its one waiter. The other waiters receive nothing: a message published after the release on
     * their channels is the first they get.
     */
    @Test
    void aReleaseWakesOnlyTheLockersWaitingOnThatLock() throws Exception {
        RedisLocker holder = locker("holder");
        int n = 4;
        List<RedisLocker> waiters = new ArrayList<>();
        List<KeyColumn> locks = new ArrayList<>();
        List<Lease> held = new ArrayList<>();
        List<Future<Optional<Lease>>> waits = new ArrayList<>();
        try (RawSubscriber raw = RawSubscriber.onPattern(fixture, fixture.prefix() + "*")) {
            for (int i = 0; i < n; i++) {
                RedisLocker w = locker("w" + i);
                KeyColumn lock = lock("own-" + i);
                waiters.add(w);
                locks.add(lock);
                held.add(holder.acquire(lock, "holding"));
                waits.add(fixture.submit(() -> w.tryAcquire(lock, "waiting", Duration.ofSeconds(60))));
            }
            for (int i = 0; i < n; i++) {
                fixture.awaitQueued(holder, locks.get(i), 1);
                awaitListening(waiters.get(i), locks.get(i));
                assertEquals(1, numsub(channelOf(holder, locks.get(i))), "only its waiter listens on a lock's channel");
            }
            held.get(0).close();
            waits.get(0).get(30, TimeUnit.SECONDS).orElseThrow().close();
            byte[] released = channelOf(holder, locks.get(0));
            awaitTrue(() -> raw.count(released) >= 1, "the release was not published on the lock's channel");
            for (int i = 1; i < n; i++) {
                byte[] ch = channelOf(holder, locks.get(i));
                fixture.admin().publish(ch, "marker".getBytes(StandardCharsets.US_ASCII));
                RedisLocker w = waiters.get(i);
                awaitTrue(() -> w.wakeupMessagesReceived() >= 1, "the marker never came");
                assertEquals(1, w.wakeupMessagesReceived(), "a locker waiting on another lock was told of the release");
            }
            assertEquals(1, raw.count(released), "one message for one release");
            assertEquals(0, raw.count(prefixChannel()), "no waiter of an older build: nothing on the prefix's channel");
            for (int i = 1; i < n; i++) {
                held.get(i).close();
                waits.get(i).get(30, TimeUnit.SECONDS).orElseThrow().close();
            }
        }
    }

    /**
     * A lock's channel ends one linger after its last waiter left, while the connection stays subscribed for a lock
     * still waited on. A new waiter on the first lock subscribes to its channel again, and its release wakes it.
     */
    @Test
    void aLockChannelEndsOneLingerAfterItsLastWaiterWhileTheConnectionServesOtherLocks() throws Exception {
        RedisLocker a = locker("a");
        RedisLocker b = locker("b", Duration.ofMillis(200));
        KeyColumn first = lock("first");
        KeyColumn second = lock("second");
        fixture.handOver(a, b, first, Duration.ofSeconds(60), Duration.ofSeconds(60));
        Lease held = a.acquire(second, "holding");
        Future<Optional<Lease>> waits = fixture.submit(() -> b.tryAcquire(second, "waiting", Duration.ofSeconds(60)));
        fixture.awaitQueued(a, second, 1);
        awaitListening(b, second);
        awaitTrue(() -> numsub(channelOf(a, first)) == 0, "the first lock's channel outlived its linger");
        assertFalse(b.wakeupListening(first));
        assertEquals(1, numsub(channelOf(a, second)), "the lock still waited on keeps its channel");
        assertEquals(1, b.wakeupSubscriptions(), "one connection throughout");
        Lease again = a.acquire(first, "holding again");
        Future<Optional<Lease>> waitsAgain = fixture.submit(() -> b.tryAcquire(first, "waiting again",
                Duration.ofSeconds(60)));
        fixture.awaitQueued(a, first, 1);
        awaitListening(b, first);
        assertEquals(1, numsub(channelOf(a, first)), "subscribed again");
        long told = b.wakeupMessages();
        again.close();
        waitsAgain.get(30, TimeUnit.SECONDS).orElseThrow().close();
        awaitTrue(() -> b.wakeupMessages() > told, "the release of the first lock did not reach its new waiter");
        held.close();
        waits.get(30, TimeUnit.SECONDS).orElseThrow().close();
    }

    /**
     * Waits come and go on one lock while its channel's linger (1 ms) ends again and again, from three threads, on
     * one connection kept by a lock watched throughout.
     * Whenever the locker says it listens on the channel, a message published then reaches the waiter: an
     * unsubscribe racing with a new waiter's subscribe never leaves the locker deaf while it believes it listens.
     */
    @Test
    void aChannelSaidToListenAlwaysDeliversWhileItsLingerEndsUnderNewWaiters() throws Exception {
        ScheduledExecutorService later = Executors.newSingleThreadScheduledExecutor();
        fixture.closeAfterTest(later::shutdownNow);
        RedisLockerBuilder on = fixture.onTarget();
        AtomicLong made = new AtomicLong();
        RedisWakeups wakeups = new RedisWakeups(() -> on.newConnection(made.getAndIncrement()), prefixChannel(),
                "race", (task, delay) -> later.schedule(task, delay.toNanos(), TimeUnit.NANOSECONDS),
                Duration.ofMillis(1), Duration.ofSeconds(30));
        fixture.closeAfterTest(wakeups);
        byte[] key = (fixture.prefix() + "{race}").getBytes(StandardCharsets.US_ASCII);
        byte[] channel = RedisKeys.lockChannel(key);
        // another lock watched throughout keeps the connection: the race is the channel's, on one connection
        byte[] keeper = (fixture.prefix() + "{keeper}").getBytes(StandardCharsets.US_ASCII);
        wakeups.watch(keeper);
        wakeups.listen(keeper);
        int threads = 3;
        int rounds = 100;
        List<Future<Long>> done = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            done.add(fixture.submit(() -> {
                long delivered = 0;
                for (int r = 0; r < rounds; r++) {
                    RedisWakeups.Watch w = wakeups.watch(key);
                    try {
                        wakeups.listen(key);
                        awaitTrue(() -> wakeups.listening(key), "never listened");
                        long told = w.messages(); // messages only: the confirmation's own wake-up is not counted
                        fixture.admin().publish(channel, key);
                        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                        while (w.messages() == told && System.nanoTime() < until) {
                            w.await(w.releases(), TimeUnit.MILLISECONDS.toNanos(100));
                        }
                        assertTrue(w.messages() > told, "a message published while listening never arrived");
                        delivered++;
                    } finally {
                        wakeups.unwatch(key);
                    }
                    Thread.sleep(ThreadLocalRandom.current().nextInt(5)); // lets the 1 ms linger end, or not
                }
                return delivered;
            }));
        }
        for (Future<Long> f : done) {
            assertEquals(rounds, f.get(120, TimeUnit.SECONDS));
        }
        // every message was published while the locker said it listened: the connection received each one
        awaitTrue(() -> wakeups.received() >= threads * rounds, () -> "received " + wakeups.received() + " of "
                + threads * rounds + " messages published while listening");
        assertEquals(threads * rounds, wakeups.received());
        assertTrue(wakeups.channelSubscriptions() > 2, "the linger never ended: the race was not run");
        assertEquals(1, wakeups.subscriptions(), "one connection throughout");
        System.out.printf("channel subscribed %d times over %d waits; %d connection(s)%n",
                wakeups.channelSubscriptions(), threads * rounds, wakeups.subscriptions());
    }

    /**
     * The wake-up connection is killed while a waiter waits: the new connection subscribes to the lock's channel
     * again, and the release that follows reaches the waiter through it.
     */
    @Test
    void aKilledConnectionSubscribesAgainToTheChannelsStillWaitedOn() throws Exception {
        RedisLocker a = locker("a");
        RedisLocker b = locker("b");
        KeyColumn lock = lock("killed");
        Lease held = a.acquire(lock, "holding");
        Future<Optional<Lease>> waits = fixture.submit(() -> b.tryAcquire(lock, "waiting", Duration.ofSeconds(60)));
        fixture.awaitQueued(a, lock, 1);
        awaitListening(b, lock);
        fixture.admin().sendCommand(Protocol.Command.CLIENT, "KILL", "TYPE", "pubsub");
        awaitTrue(() -> b.wakeupSubscriptions() >= 2 && b.wakeupListening(lock), "never listened again");
        assertEquals(1, numsub(channelOf(a, lock)));
        long told = b.wakeupMessages();
        held.close();
        waits.get(30, TimeUnit.SECONDS).orElseThrow().close();
        awaitTrue(() -> b.wakeupMessages() > told, "the release did not come through the new connection");
    }

    /**
     * A waiter of an older build (a 32-character id, listening on the prefix's channel) is queued with one of this
     * build. The release publishes once on each channel, and each is told; with this build's waiter alone, the
     * prefix's channel gets nothing.
     */
    @Test
    void aReleaseAlsoTellsThePrefixChannelWhileAnOlderBuildsWaiterIsQueued() throws Exception {
        RedisLocker a = locker("a");
        RedisLocker b = locker("b");
        KeyColumn lock = lock("mixed");
        byte[] key = a.redisKey(lock);
        try (RawSubscriber raw = RawSubscriber.onPattern(fixture, fixture.prefix() + "*")) {
            Lease held = a.acquire(lock, "holding");
            Future<Optional<Lease>> waits = fixture.submit(() -> b.tryAcquire(lock, "waiting", Duration.ofSeconds(60)));
            fixture.awaitQueued(a, lock, 1);
            String older = "00000000000000aa" + "00000000000000bb"; // an older build's waiter id: no trailing "w"
            queueAsOlderBuild(key, older);
            held.close();
            Lease got = waits.get(30, TimeUnit.SECONDS).orElseThrow();
            awaitTrue(() -> raw.count(RedisKeys.lockChannel(key)) == 1 && raw.count(prefixChannel()) == 1,
                    () -> "one message on each channel, got " + raw.counts());
            assertEquals(List.of(new String(key, StandardCharsets.US_ASCII)), raw.messages(prefixChannel()),
                    "the older build's message is the lock's key");
            // the older waiter gives up (held by b: nobody to wake); b's release then finds this build's waiters only
            RedisScript.DEQUEUE.run(fixture.admin(), key, List.of(older.getBytes(StandardCharsets.US_ASCII),
                    prefixChannel()));
            got.close();
            awaitTrue(() -> fixture.queued(a, lock).isEmpty(), "still queued");
            raw.reset();
            fixture.handOver(a, b, lock, Duration.ofSeconds(60), Duration.ofSeconds(60));
            awaitTrue(() -> raw.count(RedisKeys.lockChannel(key)) == 1, "the release was not published");
            assertEquals(0, raw.count(prefixChannel()), "no older waiter: nothing on the prefix's channel");
        }
    }

    /**
     * A release by an older build publishes the lock's key on the prefix's channel only. This build's waiter hears
     * it there (its connection subscribes to that channel first) and is granted the freed lock.
     */
    @Test
    void anOlderBuildsReleaseWakesAWaiterOfThisBuild() throws Exception {
        RedisLocker a = locker("a");
        RedisLocker b = locker("b");
        KeyColumn lock = lock("older-release");
        byte[] key = a.redisKey(lock);
        Lease held = a.acquire(lock, "holding");
        Future<Optional<Lease>> waits = fixture.submit(() -> b.tryAcquire(lock, "waiting", Duration.ofSeconds(60)));
        fixture.awaitQueued(a, lock, 1);
        awaitListening(b, lock);
        long told = b.wakeupMessages();
        // what an older build's release.lua does: the claim goes, its token kept in "t", and the prefix's channel told
        fixture.admin().eval("local v = redis.call('HGET', KEYS[1], ARGV[1]) "
                + "redis.call('HSET', KEYS[1], 't', string.match(v, '^(%d+) ')) "
                + "redis.call('HDEL', KEYS[1], ARGV[1]) "
                + "redis.call('PUBLISH', ARGV[2], KEYS[1]) return 1", 1, new String(key, StandardCharsets.US_ASCII),
                new String(a.claimField(), StandardCharsets.US_ASCII), fixture.prefix() + "released");
        Lease got = waits.get(30, TimeUnit.SECONDS).orElseThrow();
        assertTrue(got.fencingToken() > 0);
        got.close();
        awaitTrue(() -> b.wakeupMessages() > told, "the older build's release did not reach the waiter");
        held.release();
    }

    /** Queues {@code waiter} for the lock as an older build's acquire does: the same script, its 32-character id. */
    private void queueAsOlderBuild(byte[] key, String waiter) {
        Object r = RedisScript.ACQUIRE.run(fixture.admin(), key, List.of(
                "c00000000000000aa".getBytes(StandardCharsets.US_ASCII),
                "1".getBytes(StandardCharsets.US_ASCII),
                "3000".getBytes(StandardCharsets.US_ASCII), "=older".getBytes(StandardCharsets.US_ASCII),
                "0".getBytes(StandardCharsets.US_ASCII),
                "1off".getBytes(StandardCharsets.US_ASCII), "6001".getBytes(StandardCharsets.US_ASCII),
                (waiter + " 30000").getBytes(StandardCharsets.US_ASCII)));
        assertTrue(r instanceof List<?>, "refused and queued, not granted: " + r);
    }

    /** A plain pattern subscriber, counting the messages of each channel it matches. */
    static final class RawSubscriber extends BinaryJedisPubSub implements AutoCloseable {
        private final Map<String, List<String>> seen = new ConcurrentHashMap<>();
        private final Connection connection;
        private final Thread thread;

        private RawSubscriber(Connection connection, byte[] pattern) throws InterruptedException {
            this.connection = connection;
            this.thread = new Thread(() -> {
                try {
                    proceedWithPatterns(connection, pattern);
                } catch (RuntimeException closed) {
                    // closed by the test
                }
            }, "raw-subscriber");
            thread.setDaemon(true);
            thread.start();
            awaitTrue(this::isSubscribed, "the raw subscriber never subscribed");
        }

        static RawSubscriber onPattern(RedisWaitingFixture f, String pattern) throws InterruptedException {
            return new RawSubscriber(f.onTarget().newConnection(0), pattern.getBytes(StandardCharsets.US_ASCII));
        }

        @Override
        public void onPMessage(byte[] pattern, byte[] channel, byte[] message) {
            seen.computeIfAbsent(new String(channel, StandardCharsets.US_ASCII), k -> new ArrayList<>())
                    .add(new String(message, StandardCharsets.US_ASCII));
        }

        long count(byte[] channel) {
            List<String> l = seen.get(new String(channel, StandardCharsets.US_ASCII));
            return l == null ? 0 : l.size();
        }

        List<String> messages(byte[] channel) {
            return seen.getOrDefault(new String(channel, StandardCharsets.US_ASCII), List.of());
        }

        String counts() {
            return seen.toString();
        }

        void reset() {
            seen.clear();
        }

        @Override
        public void close() {
            try {
                punsubscribe();
            } catch (RuntimeException e) {
                // already gone
            }
            connection.close();
        }
    }
}
