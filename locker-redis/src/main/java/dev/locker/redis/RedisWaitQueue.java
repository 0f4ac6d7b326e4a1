package dev.locker.redis;

import dev.locker.api.KeyColumn;
import dev.locker.api.TemporaryLockingException;
import dev.locker.api.TimeSource;
import dev.locker.spi.WaitQueue;
import dev.locker.spi.Waiting;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.args.Rawable;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * The Redis driver's wait queue: a queue per lock on the server (see acquire.lua), and waiters woken by the releases
 * the scripts publish on each lock's channel ({@link RedisWakeups}). A waiter that is not listening polls with a short back-off instead.
 * Every wait ends by leaving the queues it entered; an entry nobody refreshes lapses within {@code queueTtl}.
 */
final class RedisWaitQueue implements WaitQueue {

    private static final Logger log = LoggerFactory.getLogger(RedisWaitQueue.class);

    private final UnifiedJedis client;
    private final RedisKeys keys;
    private final String server;
    private final byte[] channel;
    /** How long a waiter's queue entry lives unless the waiter refreshes it (see acquire.lua). */
    private final Duration queueTtl;
    /** The first half of every waiter id: the driver's instance, even among lockers sharing a rid. */
    private final String instance;
    private final TimeSource time;
    private final RedisDriver.Engine engine;
    /** Null with a client the caller manages: there are no options to make a subscription with. */
    private final RedisWakeups wakeups;
    /**
     * The waits in progress (from startWaiting to the end of stopWaiting), each with what this backend keeps for it;
     * close() lets them leave their queues.
     */
    private final ConcurrentHashMap<Waiting, WaitState> waitsInProgress = new ConcurrentHashMap<>();

    RedisWaitQueue(UnifiedJedis client, RedisKeys keys, String server, byte[] channel, Duration queueTtl,
                   String instance, TimeSource time, RedisDriver.Engine engine, RedisWakeups wakeups) {
        this.client = client;
        this.keys = keys;
        this.server = server;
        this.channel = channel;
        this.queueTtl = queueTtl;
        this.instance = instance;
        this.time = time;
        this.engine = engine;
        this.wakeups = wakeups;
    }

    /** What is kept for {@code waiting} while it is in progress, or null (an attempt that does not wait). */
    WaitState stateOf(Waiting waiting) {
        return waitsInProgress.get(waiting);
    }

    /** Stops the wake-ups, which wakes every waiter: each sees the locker closed and leaves its queues. */
    void closeWakeups() {
        if (wakeups != null) {
            wakeups.close();
        }
    }

    @Override
    public boolean toldOfReleases() {
        return wakeups != null && time == TimeSource.system(); // the wake-ups wait on the real clock
    }

    @Override
    public void startWaiting(Waiting waiting) {
        WaitState wait = new WaitState(waiting);
        waitsInProgress.put(waiting, wait);
        if (!toldOfReleases()) {
            return;
        }
        for (KeyColumn lock : waiting.locks()) {
            wait.watches.put(lock, wakeups.watch(keys.lockKey(lock)));
        }
    }

    @Override
    public void awaitRelease(Waiting waiting, TemporaryLockingException refusal, long maxNanos)
            throws InterruptedException {
        if (engine.isClosed()) {
            return; // the waiting loop ends; close() waits for the wait to leave its queues
        }
        WaitState wait = waitsInProgress.get(waiting);
        RedisWakeups.Watch watch = wait == null || refusal.lock() == null ? null : wait.watches.get(refusal.lock());
        if (watch == null) {
            time.sleep(Duration.ofNanos(maxNanos));
            return;
        }
        byte[] key = keys.lockKey(refusal.lock());
        if (refusal.holder() != null) {
            // held (or promised to a queued waiter): listen for this lock's releases. Only then, so that a server
            // refusing connections (maxclients) is not asked for one more when no release can come
            wakeups.listen(key);
        }
        // wake to refresh our queue entry before it lapses, should no release come
        long pause = Math.min(maxNanos, queueTtl.toNanos() / 3);
        if (!wakeups.listening(key)) {
            // not listening yet (the channel's subscription is being made, or was lost): a release now would go
            // unseen, so look again after a back-off. Once confirmed, the subscription wakes us anyway
            pause = Math.min(pause, wait.nextPollNanos());
        }
        long seen = wait.seen(refusal.lock());
        watch.await(seen, pause);
    }

    @Override
    public void stopWaiting(Waiting waiting, boolean acquired) {
        WaitState wait = waitsInProgress.get(waiting);
        if (wait == null) {
            return;
        }
        try {
            leaveQueues(waiting, wait, acquired);
        } finally {
            synchronized (waitsInProgress) {
                waitsInProgress.remove(waiting);
                waitsInProgress.notifyAll();
            }
        }
    }

    private void leaveQueues(Waiting waiting, WaitState wait, boolean acquired) {
        for (KeyColumn lock : wait.watches.keySet()) {
            wakeups.unwatch(keys.lockKey(lock)); // watches exist only when wakeups does
        }
        if (acquired) {
            return; // each grant removed our entry from its lock's queue
        }
        for (KeyColumn lock : waiting.locks()) {
            if (!wait.attempted.containsKey(lock)) {
                continue;
            }
            try { // one attempt, no retries: an entry we fail to remove lapses within queueTtl
                RedisScript.DEQUEUE.run(client, keys.lockKey(lock), List.of(wait.waiterId, channel));
            } catch (RuntimeException e) {
                log.debug("Could not leave the queue of {} at {} (it lapses within {}): {}", lock, server, queueTtl,
                        e.toString());
            }
        }
    }

    /** True while this locker's wake-up connection is subscribed (while it waits, and for a linger after); for tests. */
    boolean wakeupsSubscribed() {
        return wakeups != null && wakeups.subscribed();
    }

    /** How many times this locker made its wake-up connection and subscribed on it; for tests. */
    long wakeupSubscriptions() {
        return wakeups == null ? 0 : wakeups.subscriptions();
    }

    /** How many SUBSCRIBE commands for a lock's channel this locker sent; for tests. */
    long wakeupChannelSubscriptions() {
        return wakeups == null ? 0 : wakeups.channelSubscriptions();
    }

    /** How many messages this locker's wake-up connection received, about any lock; for tests. */
    long wakeupMessagesReceived() {
        return wakeups == null ? 0 : wakeups.received();
    }

    /** True while this locker listens for the releases of {@code lock}; for tests. */
    boolean wakeupListening(KeyColumn lock) {
        return wakeups != null && wakeups.listening(keys.lockKey(lock));
    }

    /** The pause before the wake-ups' last attempt to subscribe again after a broken connection, in ms; for tests. */
    long wakeupReconnectPauseMillis() {
        return wakeups == null ? 0 : wakeups.lastPauseMillis();
    }

    /** How many release messages about a lock one of its transactions waited for this locker received; for tests. */
    long wakeupMessages() {
        return wakeups == null ? 0 : wakeups.messages();
    }

    /** The queue identity of one wait and what it last saw of each lock's releases. */
    final class WaitState {
        final byte[] waiterId;
        /** The acquire script's ARGV 8, {@code "<waiter id> <queue ms>"}: one argument for two, a cost per call. */
        final Rawable acquireArg;
        final ConcurrentHashMap<KeyColumn, RedisWakeups.Watch> watches = new ConcurrentHashMap<>();
        final ConcurrentHashMap<KeyColumn, Long> attempted = new ConcurrentHashMap<>();
        /** The pause while not listening for releases: doubles from 2 ms to 200 ms over one wait. */
        private long pollMillis = 1; // one waiting thread

        long nextPollNanos() {
            pollMillis = Math.min(pollMillis * 2, 200);
            return TimeUnit.MILLISECONDS.toNanos(pollMillis);
        }

        WaitState(Waiting waiting) {
            // the trailing "w" tells the scripts that this waiter listens on the lock's channel (see wake in common.lua)
            this.waiterId = (instance + HexFormat.of().toHexDigits(waiting.id()) + "w")
                    .getBytes(StandardCharsets.US_ASCII);
            this.acquireArg = RedisScript.arg((new String(waiterId, StandardCharsets.US_ASCII) + " "
                    + queueTtl.toMillis()).getBytes(StandardCharsets.US_ASCII));
        }

        void beforeAttempt(KeyColumn lock) {
            RedisWakeups.Watch w = watches.get(lock);
            attempted.put(lock, w == null ? 0L : w.releases());
        }

        long seen(KeyColumn lock) {
            return attempted.getOrDefault(lock, 0L);
        }
    }

    /**
     * Waits, for at most queueTtl, until the waits in progress left their queues (DEQUEUE, which tells the waiters
     * behind them when the lock is free): on a closed client they could not, and their entries would hold the next
     * waiter off a free lock until they lapse (queueTtl), as a dead process's do. Woken by close, a waiter leaves after
     * its current attempt, if any; one that takes longer leaves its entries to lapse.
     */
    void awaitWaitsEnded() {
        long end = System.nanoTime() + queueTtl.toNanos();
        boolean interrupted = false; // shutdown code often runs interrupted: the wait is bounded, so it is kept
        try {
            synchronized (waitsInProgress) {
                while (!waitsInProgress.isEmpty()) {
                    long left = end - System.nanoTime();
                    if (left <= 0) {
                        log.debug("Closing with {} wait(s) still under way: their queue entries lapse within {}",
                                waitsInProgress.size(), queueTtl);
                        return;
                    }
                    try {
                        TimeUnit.NANOSECONDS.timedWait(waitsInProgress, left);
                    } catch (InterruptedException e) {
                        interrupted = true;
                    }
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
