package dev.locker.redis;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.BinaryJedisPubSub;
import redis.clients.jedis.Connection;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;

/**
 * Tells this locker's waiters that a lock they wait for may be free: one subscription per locker, on the release
 * channel, whose messages are lock keys (published by the release, withdraw, force and dequeue scripts when waiters are
 * queued). Started by the first waiter that finds its lock held, on a daemon thread of its own with a connection of its
 * own (never one of the locker's pool, which renewals and releases need), resubscribing after a lost connection.
 * It stays subscribed while any waiter watches and for a {@code linger} after the last one left, so that a locker
 * that waits again and again (a contended lock taken in turn) is already listening when the next release comes:
 * made anew for every wait, the subscription took a connection, a thread and a round trip each time, and releases
 * published meanwhile were seen only once it was made. A locker idle for the linger holds no extra connection or
 * thread; close ends both at once. The subscription wakes every waiter once it is made, so a release published before
 * it is looked for at once.
 *
 * <p>A subscription's connection that goes silent (half-open: a NAT or firewall dropped its state, a partition, a hung
 * proxy; no reset, no FIN) would block its reader forever, as a subscription waits for messages with no read timeout.
 * So while it listens, every {@code healthCheck} the locker's background thread asks the server to confirm the
 * subscription again (SUBSCRIBE to the same channel: the server answers, and nothing changes); a connection that
 * answered nothing, not even a message, a whole {@code healthCheck} after the question (or the first confirmation) is
 * taken as broken: it is closed, and the subscription made anew, waking every waiter, as after any lost connection.
 *
 * <p>Pub/sub delivers at most once: a message lost with a connection, or sent before the subscription was made, is not
 * seen. No waiter relies on it for more than speed: each also wakes when the holder's claim expires and to refresh its
 * queue entry. In Redis Cluster a {@code PUBLISH} reaches the subscribers of every node, so the subscription may live on
 * any of them. A server that refuses the subscription (an ACL without {@code +subscribe} or the channel) turns the
 * wake-ups off for good, said once at INFO: waiters then poll as on the other backends.
 */
final class RedisWakeups implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(RedisWakeups.class);

    private final java.util.function.Supplier<Connection> connect;
    private final byte[] channel;
    private final String name;
    private final BiConsumer<Runnable, Duration> later;
    private final long lingerNanos;
    private final long healthNanos;
    private final ConcurrentHashMap<ByteBuffer, Watch> watches = new ConcurrentHashMap<>();
    private volatile boolean closed;
    private volatile Subscriber subscriber;
    private volatile boolean refused;
    /** When the last waiter left (System.nanoTime), for the linger. */
    private volatile long idleSince = System.nanoTime();
    /** True while a check for the linger's end is scheduled (at most one is). */
    private final AtomicBoolean lingerArmed = new AtomicBoolean();
    /** True while a health check of the subscription is scheduled (at most one is). */
    private final AtomicBoolean healthArmed = new AtomicBoolean();
    private Thread thread; // guarded by this
    /** Subscriptions made, and release messages about a watched lock received (for tests). */
    private final AtomicLong subscriptions = new AtomicLong();
    private final AtomicLong messages = new AtomicLong();
    /** The pause before the last attempt to subscribe again after a broken connection, in ms (for tests). */
    private volatile long lastPauseMillis;

    /**
     * @param connect makes the subscription's own connection (connected), closed when the subscription ends
     * @param later runs a task once after a delay (the locker's background thread): the linger's and health checks
     * @param linger how long the subscription outlives the last waiter
     * @param healthCheck how often a subscription is asked to answer, and how long it has to
     */
    RedisWakeups(java.util.function.Supplier<Connection> connect, byte[] channel, String name,
                 BiConsumer<Runnable, Duration> later, Duration linger, Duration healthCheck) {
        this.connect = connect;
        this.channel = channel.clone();
        this.name = name;
        this.later = later;
        this.lingerNanos = linger.toNanos();
        this.healthNanos = healthCheck.toNanos();
    }

    /** Starts listening unless it is already; call it after {@link #watch}. */
    void start() {
        synchronized (this) {
            if (thread != null || closed || refused) {
                return;
            }
            thread = new Thread(this::listen, "locker-redis-wakeups-" + name);
            thread.setDaemon(true);
            thread.start();
        }
        armLinger(lingerNanos);
    }

    /** Registers interest in the releases of {@code key}; pair with {@link #unwatch}. */
    Watch watch(byte[] key) {
        return watches.compute(ByteBuffer.wrap(key.clone()), (k, w) -> {
            Watch out = w != null ? w : new Watch();
            out.users++;
            return out;
        });
    }

    void unwatch(byte[] key) {
        watches.computeIfPresent(ByteBuffer.wrap(key), (k, w) -> --w.users == 0 ? null : w);
        if (watches.isEmpty()) {
            idleSince = System.nanoTime(); // the subscription ends one linger from now, unless a waiter comes
        }
    }

    /** How many times the subscription was made (for tests). */
    long subscriptions() {
        return subscriptions.get();
    }

    /** The pause before the last attempt to subscribe again after a broken connection, in ms (for tests). */
    long lastPauseMillis() {
        return lastPauseMillis;
    }

    /** How many release messages about a lock some waiter watched were received (for tests). */
    long messages() {
        return messages.get();
    }

    /**
     * True while the listening thread is subscribed: the server confirmed the subscription and its connection has not
     * broken since. False while a subscription is being made, or made again after its connection broke (a waiter then
     * polls with a back-off, as a release published meanwhile would go unseen).
     */
    boolean subscribed() {
        Subscriber s = subscriber;
        return s != null && s.confirmed && !s.dead && s.isSubscribed();
    }

    /** Checks for the linger's end after {@code delayNanos}, unless a check is pending already. */
    private void armLinger(long delayNanos) {
        if (closed || !lingerArmed.compareAndSet(false, true)) {
            return;
        }
        try {
            later.accept(this::lingerCheck, Duration.ofNanos(Math.max(delayNanos, 1_000_000)));
        } catch (RuntimeException e) { // the locker is closing: close() ends the subscription
            lingerArmed.set(false);
        }
    }

    /** Ends the subscription once nobody has waited for a linger; else looks again when it could end. */
    private void lingerCheck() {
        lingerArmed.set(false);
        long again;
        synchronized (this) {
            if (closed || thread == null) {
                return; // a thread started later arms its own check
            }
            long idle = System.nanoTime() - idleSince;
            boolean idleLongEnough = watches.isEmpty() && idle >= lingerNanos;
            if (idleLongEnough && subscribed()) {
                again = -1;
            } else {
                again = watches.isEmpty() && !idleLongEnough ? lingerNanos - idle : lingerNanos;
            }
        }
        if (again >= 0) {
            armLinger(again);
            return;
        }
        // the thread then ends; should a waiter have come meanwhile, it subscribes again at once (and wakes it)
        stopListening();
    }

    /** Checks the subscription's health after {@code healthCheck}, unless a check is pending already. */
    private void armHealth() {
        if (closed || !healthArmed.compareAndSet(false, true)) {
            return;
        }
        try {
            later.accept(this::healthCheck, Duration.ofNanos(Math.max(healthNanos, 1_000_000)));
        } catch (RuntimeException e) { // the locker is closing: close() ends the subscription
            healthArmed.set(false);
        }
    }

    /** Closes a subscription's connection that did not answer in time (see the class doc); asks it again else. */
    private void healthCheck() {
        healthArmed.set(false);
        synchronized (this) {
            if (closed || thread == null) {
                return; // a thread started later arms its own check
            }
        }
        Subscriber s = subscriber;
        if (s != null && !s.answers(System.nanoTime())) {
            log.debug("Release notifications from Redis: the subscription's connection answered nothing for {} ms; "
                    + "closing it and subscribing again", TimeUnit.NANOSECONDS.toMillis(healthNanos));
            s.kill();
        }
        armHealth();
    }

    private void listen() {
        long pauseMillis = 100;
        while (true) {
            synchronized (this) {
                if (closed || refused || watches.isEmpty() && System.nanoTime() - idleSince >= lingerNanos) {
                    thread = null;
                    return;
                }
            }
            armLinger(lingerNanos);
            armHealth();
            Subscriber s = new Subscriber();
            subscriber = s;
            boolean broke = false;
            try {
                Connection c = connect.get(); // bounded by the connect and socket timeouts
                s.connection = c;
                if (closed || s.dead) { // close() or a kill may have missed the connection: it ends here
                    continue;
                }
                s.sentAt = System.nanoTime();
                s.proceed(c, channel); // blocks until unsubscribed or the connection breaks (or is closed)
                pauseMillis = 100;
            } catch (RuntimeException e) {
                subscriber = null; // no longer listening: Jedis leaves the channel count as it was when the read failed
                if (closed) {
                    continue;
                }
                if (String.valueOf(e.getMessage()).contains("NOPERM")) {
                    refused = true;
                    log.info("Redis refuses this locker's subscription to its release channel ({}): waiters poll "
                            + "instead of being woken by releases (grant +subscribe and the channel to change that)",
                            e.getMessage());
                    wakeAll();
                    continue;
                }
                if (s.confirmed) {
                    pauseMillis = 100; // this one worked: its break is a new incident, not a server that stays down
                }
                // waiters fall back to waking when the holder's claim expires; no WARN flood while the server is down
                log.debug("Release notifications from Redis interrupted ({}); resubscribing in {} ms", e.toString(),
                        pauseMillis);
                broke = true;
            } finally {
                subscriber = null;
                s.close();
            }
            wakeAll(); // whatever was published meanwhile is lost: let every waiter look again
            if (!broke) {
                continue; // unsubscribed at the linger's end: the loop ends, or subscribes again at once for a waiter
            }
            try {
                lastPauseMillis = pauseMillis;
                Thread.sleep(pauseMillis);
            } catch (InterruptedException ie) {
                synchronized (this) {
                    thread = null;
                }
                return;
            }
            pauseMillis = Math.min(pauseMillis * 2, 2_000);
        }
    }

    private void wakeAll() {
        for (Watch w : watches.values()) {
            w.wake();
        }
    }

    @Override
    public void close() {
        closed = true;
        stopListening();
        Subscriber s = subscriber;
        if (s != null) {
            s.kill(); // also ends a subscription blocked on a half-open socket
        }
        Thread t;
        synchronized (this) {
            t = thread;
        }
        if (t != null) {
            t.interrupt();
        }
        wakeAll();
    }

    private void stopListening() {
        Subscriber s = subscriber;
        if (s != null) {
            s.end();
        }
    }

    /** One subscription, on one connection of its own. Commands sent to it are sent under its monitor. */
    private final class Subscriber extends BinaryJedisPubSub {
        /** Its connection, once made. */
        volatile Connection connection;
        /** When SUBSCRIBE was sent (System.nanoTime), 0 before. */
        volatile long sentAt;
        /** The server confirmed this subscription. */
        volatile boolean confirmed;
        /** Its connection was closed by a failed health check or close(). */
        volatile boolean dead;
        /** Something came from the server since the last question (guarded by this). */
        private boolean heard;
        /** When the last question was sent (System.nanoTime), 0 while none is pending (guarded by this). */
        private long askedAt;

        /**
         * False when the connection answered nothing for {@code healthCheck}: not confirmed in time, or no answer
         * (nor message) to the last question; else asks again (a SUBSCRIBE to the same channel, answered like the
         * first one) and returns true.
         */
        synchronized boolean answers(long now) {
            if (dead || sentAt == 0) {
                return true; // ended, or still connecting (bounded by the connect and socket timeouts)
            }
            if (!confirmed) {
                return now - sentAt < healthNanos;
            }
            if (askedAt != 0 && !heard) {
                return now - askedAt < healthNanos;
            }
            heard = false;
            askedAt = now;
            try {
                if (isSubscribed()) {
                    subscribe(channel);
                }
            } catch (RuntimeException e) {
                return false; // the write failed: the connection is broken
            }
            return true;
        }

        private synchronized void heard() {
            heard = true;
        }

        /** Unsubscribes (the subscription then ends normally); best effort. */
        synchronized void end() {
            try {
                if (!dead && connection != null && isSubscribed()) {
                    unsubscribe();
                }
            } catch (RuntimeException e) {
                log.debug("Unsubscribing from release notifications failed: {}", e.toString());
            }
        }

        /** Closes the connection's socket at once, which ends a read blocked on it (the subscription then breaks). */
        void kill() {
            dead = true;
            Connection c = connection;
            if (c != null) {
                try {
                    c.forceDisconnect();
                } catch (IOException | RuntimeException e) {
                    log.debug("Closing the release notifications' connection failed: {}", e.toString());
                }
            }
        }

        /** Closes the connection once the subscription ended. */
        void close() {
            Connection c = connection;
            if (c != null) {
                try {
                    c.close();
                } catch (RuntimeException e) {
                    log.debug("Closing the release notifications' connection failed: {}", e.toString());
                }
            }
        }

        @Override
        public void onSubscribe(byte[] ch, int subscribedChannels) {
            heard();
            if (closed) {
                end();
                return;
            }
            if (confirmed) {
                return; // the answer to a health check's question
            }
            confirmed = true;
            subscriptions.incrementAndGet();
            wakeAll(); // a release may have been published before this subscription: let waiters look again
        }

        @Override
        public void onMessage(byte[] ch, byte[] message) {
            heard();
            Watch w = watches.get(ByteBuffer.wrap(message));
            if (w != null) {
                messages.incrementAndGet();
                w.wake();
            }
        }
    }

    /** The releases of one lock key seen so far, and the waiters of this locker watching it. */
    static final class Watch {
        private int users; // guarded by the map's compute
        private long releases; // guarded by this

        synchronized long releases() {
            return releases;
        }

        synchronized void wake() {
            releases++;
            notifyAll();
        }

        /** Waits up to {@code nanos} for a release after {@code seen} (a value of {@link #releases()}). */
        synchronized void await(long seen, long nanos) throws InterruptedException {
            long end = System.nanoTime() + nanos;
            while (releases == seen) {
                long left = end - System.nanoTime();
                if (left <= 0) {
                    return;
                }
                TimeUnit.NANOSECONDS.timedWait(this, left);
            }
        }
    }
}
