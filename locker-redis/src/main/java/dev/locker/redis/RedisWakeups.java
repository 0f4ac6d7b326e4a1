package dev.locker.redis;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.Connection;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BiConsumer;

/**
 * Tells this locker's waiters that a lock they wait for may be free, through a channel per lock.
 *
 * <h2>Channels</h2>
 * A release with waiters queued publishes the lock's key on the lock's own channel: the lock's key and {@code w}
 * (see {@code wake} in {@code common.lua}). So a release reaches only the lockers that wait on that lock. A locker
 * subscribes to a lock's channel when a waiter first finds that lock held. It unsubscribes one {@code linger} after
 * the lock's last waiter left. A lock taken in turn keeps its channel between waits, at no command per wait.
 * A lock whose waits never found it held is forgotten when its last waiter leaves: no channel was subscribed for it.
 * The channel carries the lock's hash tag, so it lies in the lock's Cluster slot, as a sharded channel must.
 *
 * <h2>One connection</h2>
 * Every channel of the locker shares one connection and one daemon thread, never one of the locker's pool. The
 * connection first subscribes to the prefix's channel, {@code <prefix>released}: older builds publish there. That
 * channel keeps the connection subscribed while lock channels come and go. Jedis ends a subscription whose count
 * of channels drops to zero, and a lock channel subscribed just then would go unread. The connection ends one
 * linger after the last lock channel went; close ends it at once.
 *
 * <h2>Never asleep past a release</h2>
 * A lock's channel counts as listening only once the server confirmed the last SUBSCRIBE sent for it. The confirmation
 * wakes the lock's waiters, so each attempts again after it: a release from then on reaches them. Until then a
 * waiter polls with a short back-off. Commands to the server and the replies that confirm them are handled under
 * one monitor. Each channel counts its unanswered SUBSCRIBE and UNSUBSCRIBE commands, which the server answers in
 * order. So an unsubscribe at a linger's end, and a new waiter's subscribe just after, cannot leave it deaf.
 *
 * <h2>A lost or silent connection</h2>
 * A broken connection wakes every waiter, and a new one subscribes to every channel still wanted. A half-open
 * connection (a NAT dropped its state; no reset, no FIN) would block its reader forever. So every {@code healthCheck}
 * the locker's background thread asks it to answer: it subscribes to the prefix's channel again, which changes nothing.
 * A connection that answered nothing within a whole {@code healthCheck} is closed and made anew, as after any loss.
 *
 * <p>Pub/sub delivers at most once. No waiter relies on it for more than speed: each also wakes when the holder's claim
 * expires and to refresh its queue entry. A server that refuses a subscription (an ACL without {@code +subscribe} or
 * the channels) turns the wake-ups off for good, said once at INFO: waiters then poll.
 *
 * <h2>Locking</h2>
 * <ul>
 * <li>{@code thread}, and each watch's users, idle time and wanted flag: read and written under this.
 * <li>{@code closed}, {@code subscriber}: written under this; volatile, as lock-free paths read them too.
 * <li>{@code refused}: volatile; the connection's thread sets it once, without this, and it stays set.
 * <li>{@code watches}: a concurrent map; entries change under this, and wake-ups read it without it.
 * <li>Each watch's release count: under the watch's own monitor, which waiters wait on.
 * <li>{@code lingerArmed}, {@code healthArmed}, the counts, {@code lastPauseMillis}: atomic or volatile, no monitor.
 * <li>The subscriber's own fields: see {@link RedisWakeupSubscriber}, which takes this as its monitor.
 * </ul>
 */
final class RedisWakeups implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(RedisWakeups.class);

    private final java.util.function.Supplier<Connection> connect;
    /** The prefix's channel: older builds publish on it, and it keeps the connection subscribed. */
    private final byte[] prefixChannel;
    private final String name;
    private final BiConsumer<Runnable, Duration> later;
    private final long lingerNanos;
    private final long healthNanos;
    /** The locks some waiter of this locker watches, or watched within a linger, by key. Changed under this. */
    private final ConcurrentHashMap<ByteBuffer, Watch> watches = new ConcurrentHashMap<>();
    private volatile boolean closed;
    private volatile RedisWakeupSubscriber subscriber;
    private volatile boolean refused;
    /** True while a check for lingers' ends is scheduled (at most one is). */
    private final AtomicBoolean lingerArmed = new AtomicBoolean();
    /** True while a health check of the subscription is scheduled (at most one is). */
    private final AtomicBoolean healthArmed = new AtomicBoolean();
    private Thread thread; // guarded by this
    /** Connections subscribed, lock channels subscribed, messages received: for tests. */
    private final RedisWakeupSubscriber.Counts counts = new RedisWakeupSubscriber.Counts();
    /** The pause before the last attempt to subscribe again after a broken connection, in ms (for tests). */
    private volatile long lastPauseMillis;

    /**
     * @param connect makes the subscription's own connection (connected), closed when the subscription ends
     * @param prefixChannel the prefix's release channel, on which older builds publish
     * @param later runs a task once after a delay (the locker's background thread): the linger's and health checks
     * @param linger how long a lock's channel, then the connection, outlives the last waiter
     * @param healthCheck how often a subscription is asked to answer, and how long it has to
     */
    RedisWakeups(java.util.function.Supplier<Connection> connect, byte[] prefixChannel, String name,
                 BiConsumer<Runnable, Duration> later, Duration linger, Duration healthCheck) {
        this.connect = connect;
        this.prefixChannel = prefixChannel.clone();
        this.name = name;
        this.later = later;
        this.lingerNanos = linger.toNanos();
        this.healthNanos = healthCheck.toNanos();
    }

    /** Registers interest in the releases of {@code key}; pair with {@link #unwatch}. */
    synchronized Watch watch(byte[] key) {
        Watch w = watches.computeIfAbsent(ByteBuffer.wrap(key.clone()), k -> new Watch());
        w.users++;
        return w;
    }

    /**
     * Ends one waiter's interest in {@code key}. The lock's entry goes at once when no linger will end it: nothing
     * was subscribed for it, or no connection runs. Else its channel ends one linger from now, unless a waiter comes.
     */
    synchronized void unwatch(byte[] key) {
        ByteBuffer k = ByteBuffer.wrap(key);
        Watch w = watches.get(k);
        if (w == null || --w.users > 0) {
            return;
        }
        if (!w.wanted || thread == null || closed || refused) {
            // no command for its channel was sent from this entry, or the connection that sent one is gone
            watches.remove(k);
            return;
        }
        w.idleSince = System.nanoTime();
    }

    /** Forgets the entries no waiter uses; called when the connection's thread ends, as no linger runs after it. */
    private void forgetIdle() {
        watches.values().removeIf(w -> w.users == 0);
    }

    /**
     * Listens for the releases of {@code key} (watched): subscribes to its channel unless it is already, and
     * starts the connection unless it runs. Its confirmation wakes the lock's waiters.
     */
    void listen(byte[] key) {
        synchronized (this) {
            Watch w = watches.get(ByteBuffer.wrap(key));
            if (w == null || closed || refused) {
                return;
            }
            w.wanted = true;
            RedisWakeupSubscriber s = subscriber;
            if (s != null && s.ready()) {
                s.want(key);
            }
            if (thread != null) {
                return; // a subscriber being made subscribes to every wanted channel once its connection is ready
            }
            thread = new Thread(this::run, "locker-redis-wakeups-" + name);
            thread.setDaemon(true);
            thread.start();
        }
        armLinger(lingerNanos);
    }

    /**
     * True while the server confirmed this locker's subscription to {@code key}'s channel, and its connection has
     * not broken since. False while it is being made: a waiter then polls, as a release meanwhile would go unseen.
     */
    synchronized boolean listening(byte[] key) {
        RedisWakeupSubscriber s = subscriber;
        return s != null && s.usable() && s.confirmed(ByteBuffer.wrap(key));
    }

    /** True while the connection is subscribed (to the prefix's channel at least); for tests. */
    boolean subscribed() {
        RedisWakeupSubscriber s = subscriber;
        return s != null && s.usable();
    }

    /** How many times the connection was made and subscribed (for tests). */
    long subscriptions() {
        return counts.subscriptions.get();
    }

    /** How many SUBSCRIBE commands for a lock's channel were sent (for tests). */
    long channelSubscriptions() {
        return counts.channelSubscriptions.get();
    }

    /** The pause before the last attempt to subscribe again after a broken connection, in ms (for tests). */
    long lastPauseMillis() {
        return lastPauseMillis;
    }

    /** How many release messages about a lock some waiter watched were received (for tests). */
    long messages() {
        return counts.messages.get();
    }

    /** How many messages were received on any channel, watched lock or not (for tests). */
    long received() {
        return counts.received.get();
    }

    /** Checks for lingers' ends after {@code delayNanos}, unless a check is pending already. */
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

    /**
     * Unsubscribes from the channels nobody waited on for a linger, and ends the connection once none is left.
     * Else looks again when the next one could end.
     */
    private void lingerCheck() {
        lingerArmed.set(false);
        long again = lingerNanos;
        synchronized (this) {
            if (closed || thread == null) {
                return; // a thread started later arms its own check
            }
            long now = System.nanoTime();
            RedisWakeupSubscriber s = subscriber;
            for (Iterator<Map.Entry<ByteBuffer, Watch>> it = watches.entrySet().iterator(); it.hasNext(); ) {
                Map.Entry<ByteBuffer, Watch> e = it.next();
                Watch w = e.getValue();
                if (w.users > 0) {
                    continue;
                }
                long idle = now - w.idleSince;
                if (idle < lingerNanos) {
                    again = Math.min(again, lingerNanos - idle);
                    continue;
                }
                it.remove();
                if (s != null && s.ready()) {
                    s.drop(e.getKey());
                }
            }
            if (watches.isEmpty() && s != null && s.ready()) {
                // the thread then ends; a waiter that comes meanwhile has it subscribe again at once (and wakes it)
                s.end();
                return;
            }
        }
        armLinger(again);
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
        RedisWakeupSubscriber s;
        synchronized (this) {
            if (closed || thread == null) {
                return; // a thread started later arms its own check
            }
            s = subscriber;
            if (s != null && !s.answers(System.nanoTime())) {
                log.debug("Release notifications from Redis: the subscription's connection answered nothing for {} "
                        + "ms; closing it and subscribing again", TimeUnit.NANOSECONDS.toMillis(healthNanos));
                s.kill();
            }
        }
        armHealth();
    }

    private void run() {
        long pauseMillis = 100;
        while (true) {
            RedisWakeupSubscriber s = new RedisWakeupSubscriber(this, prefixChannel, healthNanos, watches,
                    () -> closed, counts);
            synchronized (this) {
                if (closed || refused || watches.isEmpty()) {
                    thread = null;
                    forgetIdle();
                    return;
                }
                subscriber = s;
            }
            armLinger(lingerNanos);
            armHealth();
            boolean broke = false;
            try {
                Connection c = connect.get(); // bounded by the connect and socket timeouts
                synchronized (this) {
                    s.attach(c);
                    if (closed || s.dead()) { // close() or a kill may have missed the connection: it ends here
                        continue;
                    }
                    s.subscribing(System.nanoTime());
                }
                s.proceed(c, prefixChannel); // blocks until unsubscribed or the connection breaks (or is closed)
                pauseMillis = 100;
            } catch (RuntimeException e) {
                if (closed) {
                    continue;
                }
                if (String.valueOf(e.getMessage()).contains("NOPERM")) {
                    refused = true;
                    log.info("Redis refuses this locker's subscription to its release channels ({}): waiters poll "
                            + "instead of being woken by releases (grant +subscribe and the prefix's channels to "
                            + "change that)", e.getMessage());
                    continue;
                }
                if (s.ready()) {
                    pauseMillis = 100; // this one worked: its break is a new incident, not a server that stays down
                }
                // waiters fall back to waking when the holder's claim expires; no WARN flood while the server is down
                log.debug("Release notifications from Redis interrupted ({}); resubscribing in {} ms", e.toString(),
                        pauseMillis);
                broke = true;
            } finally {
                synchronized (this) {
                    s.leave();
                    if (subscriber == s) {
                        subscriber = null;
                    }
                }
                s.close();
                wakeAll(); // whatever was published meanwhile is lost: let every waiter look again
            }
            if (!broke) {
                continue; // unsubscribed at the linger's end: the loop ends, or subscribes again at once for a waiter
            }
            try {
                lastPauseMillis = pauseMillis;
                Thread.sleep(pauseMillis);
            } catch (InterruptedException ie) {
                synchronized (this) {
                    thread = null;
                    forgetIdle();
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
        Thread t;
        synchronized (this) {
            closed = true;
            RedisWakeupSubscriber s = subscriber;
            if (s != null) {
                s.end();
                s.kill(); // also ends a subscription blocked on a half-open socket
            }
            t = thread;
        }
        if (t != null) {
            t.interrupt();
        }
        wakeAll();
    }

    /** The releases of one lock key seen so far, and the waiters of this locker watching it. */
    static final class Watch {
        private int users; // guarded by the RedisWakeups
        /** When the last waiter left (System.nanoTime), for the linger; guarded by the RedisWakeups. */
        private long idleSince;
        /** Some waiter found the lock held: its channel is subscribed to; guarded by the RedisWakeups. */
        private boolean wanted;
        private long releases; // guarded by this
        private long told; // guarded by this

        /** True once some waiter found the lock held; the caller holds the RedisWakeups' monitor. */
        boolean wanted() {
            return wanted;
        }

        synchronized long releases() {
            return releases;
        }

        /** How many release messages about this lock were received while it was watched (for tests). */
        synchronized long messages() {
            return told;
        }

        /** A release message about this lock came: wakes its waiters. */
        synchronized void told() {
            told++;
            wake();
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
