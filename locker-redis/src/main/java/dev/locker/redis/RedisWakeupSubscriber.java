package dev.locker.redis;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.BinaryJedisPubSub;
import redis.clients.jedis.Connection;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;

/**
 * One connection's subscription for {@link RedisWakeups}: the prefix's channel, and the lock channels waiters want.
 *
 * <p>Every command sent on it, and every answer, is handled under one monitor: the owning RedisWakeups, passed in.
 * The server answers commands in order, so counting the unanswered ones per channel tells when a channel listens.
 *
 * <h2>Locking</h2>
 * <ul>
 * <li>{@code sentAt}, {@code heard}, {@code askedAt}, {@code channels}: read and written only under the monitor.
 * <li>{@code ending}, {@code over}: written under the monitor; {@link #usable()} also reads them without it, for tests.
 * <li>{@code ready}, {@code dead}: written under the monitor; volatile, as the reading thread also reads them without.
 * <li>{@code connection}: written under the monitor; {@link #close()} reads it without, on the thread that attached it.
 * <li>The owner's watches: a concurrent map whose entries change under the monitor; replies look them up without it.
 * </ul>
 */
final class RedisWakeupSubscriber extends BinaryJedisPubSub {

    /** Logs under RedisWakeups' name: one logger setting covers the whole wake-up path. */
    private static final Logger log = LoggerFactory.getLogger(RedisWakeups.class);

    private final Object monitor;
    private final byte[] prefixChannel;
    private final long healthNanos;
    private final ConcurrentMap<ByteBuffer, RedisWakeups.Watch> watches;
    private final BooleanSupplier closed;
    private final Counts counts;

    /** Its connection, once made. */
    private Connection connection;
    /** When SUBSCRIBE was sent (System.nanoTime), 0 before. */
    private long sentAt;
    /** The server confirmed the prefix's channel: commands for lock channels may be sent. */
    private volatile boolean ready;
    /** Its connection was closed by a failed health check or close(). */
    private volatile boolean dead;
    /** It unsubscribed from every channel (the linger's end, close): no channel is subscribed on it again. */
    private boolean ending;
    /** The thread left it: nothing is sent on it any more. */
    private boolean over;
    /** Something came from the server since the last question. */
    private boolean heard;
    /** When the last question was sent (System.nanoTime), 0 while none is pending. */
    private long askedAt;
    /** The lock channels this connection sent commands for, by lock key. */
    private final Map<ByteBuffer, Channel> channels = new HashMap<>();

    /**
     * @param monitor guards every command and answer: the owning RedisWakeups
     * @param prefixChannel the prefix's release channel, which keeps the connection subscribed
     * @param healthNanos how long the connection has to answer a question
     * @param watches the owner's watched locks by key; entries change under {@code monitor}
     * @param closed whether the owner was closed; read under {@code monitor}
     * @param counts where it counts subscriptions and messages, across the owner's connections
     */
    RedisWakeupSubscriber(Object monitor, byte[] prefixChannel, long healthNanos,
                          ConcurrentMap<ByteBuffer, RedisWakeups.Watch> watches, BooleanSupplier closed,
                          Counts counts) {
        this.monitor = monitor;
        this.prefixChannel = prefixChannel;
        this.healthNanos = healthNanos;
        this.watches = watches;
        this.closed = closed;
        this.counts = counts;
    }

    /** Attaches its connection, once made; under the monitor. */
    void attach(Connection c) {
        connection = c;
    }

    /** Notes when SUBSCRIBE to the prefix's channel is sent (System.nanoTime); under the monitor. */
    void subscribing(long now) {
        sentAt = now;
    }

    /** The thread left it: nothing is sent on it any more; under the monitor. */
    void leave() {
        over = true;
    }

    /** True once the server confirmed the prefix's channel. */
    boolean ready() {
        return ready;
    }

    /** True once a failed health check or close() closed its connection. */
    boolean dead() {
        return dead;
    }

    boolean usable() {
        return ready && !dead && !ending && !over;
    }

    /** True when the last command for {@code key}'s channel was SUBSCRIBE, and the server answered it. */
    boolean confirmed(ByteBuffer key) {
        Channel c = channels.get(key);
        return c != null && c.on && c.unanswered == 0;
    }

    /** Subscribes to {@code key}'s channel unless its last command did already. */
    void want(byte[] key) {
        if (!usable()) {
            return;
        }
        Channel c = channels.computeIfAbsent(ByteBuffer.wrap(key.clone()), k -> new Channel());
        if (c.on) {
            return;
        }
        c.on = true;
        c.unanswered++;
        counts.channelSubscriptions.incrementAndGet();
        send(() -> subscribe(RedisKeys.lockChannel(key)));
    }

    /** Unsubscribes from {@code key}'s channel if its last command subscribed. */
    void drop(ByteBuffer key) {
        Channel c = channels.get(key);
        if (c == null || !c.on || !usable()) {
            return;
        }
        c.on = false;
        c.unanswered++;
        byte[] k = new byte[key.remaining()];
        key.duplicate().get(k);
        send(() -> unsubscribe(RedisKeys.lockChannel(k)));
    }

    private void send(Runnable command) {
        try {
            command.run();
        } catch (RuntimeException e) { // the write failed: the connection is broken, and made anew
            log.debug("Release notifications from Redis: a command failed ({}); subscribing again", e.toString());
            kill();
        }
    }

    /**
     * False when the connection answered nothing for {@code healthCheck}: not confirmed in time, or no answer
     * (nor message) to the last question; else asks again and returns true. The question subscribes to the
     * prefix's channel again: the server answers, and nothing changes.
     */
    boolean answers(long now) {
        if (dead || over || sentAt == 0) {
            return true; // ended, or still connecting (bounded by the connect and socket timeouts)
        }
        if (!ready) {
            return now - sentAt < healthNanos;
        }
        if (askedAt != 0 && !heard) {
            return now - askedAt < healthNanos;
        }
        heard = false;
        askedAt = now;
        try {
            // not PING: Jedis may read its RESP3 reply before it expects one, and break the subscription
            subscribe(prefixChannel);
        } catch (RuntimeException e) {
            return false; // the write failed: the connection is broken
        }
        return true;
    }

    /** Unsubscribes from every channel (the subscription then ends normally); best effort. */
    void end() {
        if (ending || over || dead || connection == null || !ready) {
            return;
        }
        ending = true;
        try {
            unsubscribe();
        } catch (RuntimeException e) {
            log.debug("Unsubscribing from release notifications failed: {}", e.toString());
            kill();
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
        answered(ch, true);
    }

    @Override
    public void onUnsubscribe(byte[] ch, int subscribedChannels) {
        answered(ch, false);
    }

    private void answered(byte[] ch, boolean subscribe) {
        synchronized (monitor) {
            heard = true;
            if (Arrays.equals(ch, prefixChannel)) {
                if (subscribe && !ready) {
                    ready = true;
                    counts.subscriptions.incrementAndGet();
                    if (closed.getAsBoolean()) {
                        end();
                        return;
                    }
                    watches.forEach((key, w) -> {
                        if (w.wanted()) {
                            want(key.array());
                        }
                    });
                }
                return;
            }
            ByteBuffer key = ByteBuffer.wrap(ch, 0, ch.length - 1).slice();
            Channel c = channels.get(key);
            if (c == null || c.unanswered == 0) {
                return;
            }
            if (--c.unanswered > 0) {
                return;
            }
            if (!c.on) {
                channels.remove(key);
                return;
            }
        }
        // a release may have been published before this subscription: let the lock's waiters look again
        RedisWakeups.Watch w = watches.get(ByteBuffer.wrap(ch, 0, ch.length - 1).slice());
        if (w != null) {
            w.wake();
        }
    }

    @Override
    public void onMessage(byte[] ch, byte[] message) {
        synchronized (monitor) {
            heard = true;
        }
        counts.received.incrementAndGet();
        RedisWakeups.Watch w = watches.get(ByteBuffer.wrap(message));
        if (w != null) {
            counts.messages.incrementAndGet();
            w.told();
        }
    }

    /** What this connection sent for one lock's channel that the server has not answered yet, and what it asked. */
    private static final class Channel {
        /** SUBSCRIBE and UNSUBSCRIBE commands sent and not yet answered. */
        int unanswered;
        /** True when the last of them was SUBSCRIBE. */
        boolean on;
    }

    /** What the subscriptions of one RedisWakeups counted, across its connections (for tests). */
    static final class Counts {
        /** Connections made whose prefix channel the server confirmed. */
        final AtomicLong subscriptions = new AtomicLong();
        /** SUBSCRIBE commands sent for a lock's channel. */
        final AtomicLong channelSubscriptions = new AtomicLong();
        /** Messages received on any channel, watched lock or not. */
        final AtomicLong received = new AtomicLong();
        /** Release messages received about a lock some waiter watched. */
        final AtomicLong messages = new AtomicLong();
    }
}
