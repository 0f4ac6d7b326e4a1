package dev.locker.redis;

import dev.locker.api.Acquisition;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.TemporaryLockingException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static dev.locker.redis.RedisWaitingFixture.awaitTrue;
import static dev.locker.redis.RedisWaitingFixture.configured;
import static dev.locker.redis.RedisWaitingFixture.listeners;
import static dev.locker.redis.RedisWaitingFixture.lock;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Waiting without polling on Redis: a queue per lock in the lock's hash, served in arrival order, and a release that
 * wakes the queued waiters through pub/sub. Each case is decided by the order of events, never by a timing.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RedisWaitingTest {

    private static final Duration EXPIRY = Duration.ofMillis(1500);

    // a server of its own: it kills every pub/sub client of the server, which other classes' lockers listen on
    @RegisterExtension
    static final RedisWaitingFixture fixture = RedisWaitingFixture.onFreshTarget("rwt");

    private RedisLocker locker(String name) {
        return locker(name, Duration.ofSeconds(5));
    }

    /** A locker whose release subscription outlives its last waiter by {@code linger}. */
    private RedisLocker locker(String name, Duration linger) {
        return fixture.open(configured(fixture.onTarget(), name, EXPIRY, linger));
    }

    /** True while a thread listens for {@code l}'s releases. */
    private static boolean listening(RedisLocker l) {
        return listeners(l) > 0;
    }

    /**
     * The releaser asks again at once, while another process waits: the waiter gets the lock, the releaser is refused
     * (it would have won a polling race nearly every time: it needs no wake-up).
     */
    @Test
    void aReleaserAskingAgainQueuesBehindTheWaiter() throws Exception {
        RedisLocker a = locker("a");
        RedisLocker b = locker("b");
        KeyColumn lock = lock("fifo");
        Lease held = a.acquire(lock, "first");
        Future<Optional<Lease>> waiting = fixture.submit(() -> b.tryAcquire(lock, "patient", Duration.ofSeconds(60)));
        fixture.awaitQueued(a, lock, 1);
        held.close();
        TemporaryLockingException refused = assertThrows(TemporaryLockingException.class,
                () -> a.acquire(lock, "again").close());
        assertEquals(b.rid(), refused.holder().rid(), "names the waiter it is promised to or the new holder: " + refused);
        Lease got = waiting.get(30, TimeUnit.SECONDS).orElseThrow();
        assertTrue(got.fencingToken() > 0);
        assertEquals(List.of(), fixture.queued(a, lock), "served: the waiter left the queue");
        got.close();
    }

    /** Three waiters queued one after the other are served in that order, each woken by the release before it. */
    @Test
    void waitersAreServedInArrivalOrder() throws Exception {
        RedisLocker holder = locker("holder");
        KeyColumn lock = lock("order");
        Lease held = holder.acquire(lock, "first");
        List<String> served = java.util.Collections.synchronizedList(new ArrayList<>());
        List<Future<?>> waiters = new ArrayList<>();
        for (int i = 1; i <= 3; i++) {
            RedisLocker w = locker("w" + i);
            String name = "w" + i;
            waiters.add(fixture.submit(() -> {
                Lease l = w.tryAcquire(lock, name, Duration.ofSeconds(60)).orElseThrow();
                served.add(name);
                l.close();
                return null;
            }));
            fixture.awaitQueued(holder, lock, i);
        }
        held.close();
        for (Future<?> f : waiters) {
            f.get(60, TimeUnit.SECONDS);
        }
        assertEquals(List.of("w1", "w2", "w3"), served);
    }

    /**
     * A waiter that died while queued (its entry left behind, never refreshed) holds up a free lock only until its
     * entry lapses; meanwhile a one-shot acquire names it.
     */
    @Test
    void aDeadWaitersEntryLapses() throws Exception {
        RedisLocker a = locker("a");
        KeyColumn lock = lock("dead-waiter");
        a.acquire(lock, "create the hash").close();
        byte[] key = a.redisKey(lock);
        long nowMicros = (Long) fixture.admin().eval("local t = redis.call('TIME') return t[1] * 1000000 + t[2]");
        dev.locker.api.LockOwner ghost = new dev.locker.api.LockOwner("ghost-1", "h", 1, "t", "crashed", null);
        byte[] owner = ghost.toBytes();
        // a queue entry: "<seq> <until>\n<owner part>", the owner part here in full ("=" and its bytes; see common.lua)
        byte[] head = ("0 " + (nowMicros + 1_000_000) + "\n=").getBytes(StandardCharsets.US_ASCII);
        byte[] value = Arrays.copyOf(head, head.length + owner.length);
        System.arraycopy(owner, 0, value, head.length, owner.length);
        fixture.admin().hset(key, "qdeadbeefdeadbeef0000000000000001".getBytes(StandardCharsets.US_ASCII), value);
        TemporaryLockingException promised = assertThrows(TemporaryLockingException.class,
                () -> a.acquire(lock, "one shot").close());
        assertEquals("ghost-1", promised.holder().rid(), promised.toString());
        Acquisition got = a.acquireWithin(lock, "patient", Duration.ofSeconds(30));
        assertTrue(got.acquired(), got.toString());
        got.lease().orElseThrow().close();
    }

    /** A waiter that gives up leaves the queue at once: the lock is not held up for the ones behind it. */
    @Test
    void aWaiterThatGivesUpLeavesTheQueue() throws Exception {
        RedisLocker a = locker("a");
        RedisLocker b = locker("b");
        KeyColumn lock = lock("give-up");
        Lease held = a.acquire(lock, "first");
        Acquisition busy = b.acquireWithin(lock, "short wait", Duration.ofMillis(300));
        assertEquals(Acquisition.Outcome.BUSY, busy.outcome(), busy.toString());
        assertEquals(List.of(), fixture.queued(a, lock), "left the queue when its wait ended");
        held.close();
        a.acquire(lock, "no one queued: granted at once").close();
    }

    /** The release wake-ups hold a connection and a thread only while someone waits, and for a linger after. */
    @Test
    void theWakeUpSubscriptionEndsWhenNobodyWaits() throws Exception {
        RedisLocker a = locker("a");
        RedisLocker b = locker("b", Duration.ofMillis(200));
        KeyColumn lock = lock("idle");
        Lease held = a.acquire(lock, "first");
        Future<Optional<Lease>> waiting = fixture.submit(() -> b.tryAcquire(lock, "patient", Duration.ofSeconds(60)));
        fixture.awaitQueued(a, lock, 1);
        held.close();
        waiting.get(30, TimeUnit.SECONDS).orElseThrow().close();
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while ((b.wakeupsSubscribed() || listening(b)) && System.nanoTime() < until) {
            Thread.sleep(10);
        }
        assertFalse(b.wakeupsSubscribed(), "unsubscribed once nobody waited for the linger");
        assertFalse(listening(b), "the listening thread ended");
    }

    /**
     * Two processes take one lock in turn, each waiting for the other's release, as in a contended handoff: each
     * subscribes once, at its first wait, and stays subscribed between its waits. Made anew for every wait (ended at
     * every grant), the subscription missed the releases published before it was made (the waiter then saw them only
     * when the next subscription woke it, up to 100 ms and a new connection later, or at its queue refresh).
     */
    @Test
    void aLockerThatWaitsAgainAndAgainSubscribesOnce() throws Exception {
        RedisLocker a = locker("a", Duration.ofMinutes(1));
        RedisLocker b = locker("b", Duration.ofMinutes(1));
        KeyColumn lock = lock("in-turn");
        handOver(a, b, lock); // each waits once: its subscription is made then
        handOver(b, a, lock);
        awaitTrue(() -> a.wakeupListening(lock) && b.wakeupListening(lock), "never subscribed");
        long told = a.wakeupMessages() + b.wakeupMessages();
        int rounds = 20;
        for (int i = 0; i < rounds; i++) {
            handOver(i % 2 == 0 ? a : b, i % 2 == 0 ? b : a, lock);
        }
        assertEquals(1, a.wakeupSubscriptions(), "a subscribed once for all its waits");
        assertEquals(1, b.wakeupSubscriptions(), "b subscribed once for all its waits");
        assertEquals(1, a.wakeupChannelSubscriptions(), "a subscribed to the lock's channel once for all its waits");
        assertEquals(1, b.wakeupChannelSubscriptions(), "b subscribed to the lock's channel once for all its waits");
        assertTrue(a.wakeupsSubscribed() && b.wakeupsSubscribed(), "still subscribed within the linger");
        // each waiter was subscribed before the release it waited for, so each release told it (one may have been
        // granted on a queue refresh before its subscriber looked at the message)
        long toldNow = a.wakeupMessages() + b.wakeupMessages() - told;
        assertTrue(toldNow >= rounds - 1, "told of " + toldNow + " of " + rounds + " releases");
    }

    /** {@code holder} takes the lock, {@code waiter} queues for it, the holder releases: the waiter is granted. */
    private void handOver(RedisLocker holder, RedisLocker waiter, KeyColumn lock) throws Exception {
        fixture.handOver(holder, waiter, lock, Duration.ofSeconds(60), Duration.ofSeconds(60));
    }

    /** Closing a locker ends its lingering subscription and thread at once, not at the linger's end. */
    @Test
    void closeEndsALingeringSubscription() throws Exception {
        RedisLocker a = locker("a");
        RedisLocker b = locker("b", Duration.ofHours(1));
        KeyColumn lock = lock("close");
        Lease held = a.acquire(lock, "first");
        Future<Optional<Lease>> waiting = fixture.submit(() -> b.tryAcquire(lock, "patient", Duration.ofSeconds(60)));
        fixture.awaitQueued(a, lock, 1);
        held.close();
        waiting.get(30, TimeUnit.SECONDS).orElseThrow().close();
        assertTrue(listening(b), "lingers after its wait");
        b.close();
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (listening(b) && System.nanoTime() < until) {
            Thread.sleep(10);
        }
        assertFalse(listening(b), "close ended the listening thread");
        assertFalse(b.wakeupsSubscribed());
    }

    /**
     * The subscription's connection is killed while a waiter waits (a lost message): the waiter is still granted the
     * lock once it is released, and the locker subscribes again.
     */
    @Test
    void aWaiterWhoseSubscriptionIsKilledIsStillGranted() throws Exception {
        RedisLocker a = locker("a");
        RedisLocker b = locker("b", Duration.ofMinutes(1));
        KeyColumn lock = lock("killed");
        Lease held = a.acquire(lock, "first");
        Future<Optional<Lease>> waiting = fixture.submit(() -> b.tryAcquire(lock, "patient", Duration.ofSeconds(60)));
        fixture.awaitQueued(a, lock, 1);
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!b.wakeupsSubscribed()) {
            assertTrue(System.nanoTime() < until, "never subscribed");
            Thread.sleep(5);
        }
        fixture.admin().sendCommand(redis.clients.jedis.Protocol.Command.CLIENT, "KILL", "TYPE", "pubsub");
        held.close();
        Lease got = waiting.get(30, TimeUnit.SECONDS).orElseThrow();
        assertTrue(got.fencingToken() > 0);
        got.close();
        while (b.wakeupSubscriptions() < 2) {
            assertTrue(System.nanoTime() < until, "never subscribed again");
            Thread.sleep(5);
        }
    }

    /**
     * Measures (and prints; asserts only that each handoff went to the waiter) the time from a release to the queued
     * waiter's grant, over 200 handoffs, against the round trip of a PING on the same server measured in the same run.
     */
    @Test
    void handoffToAQueuedWaiterIsMeasured() throws Exception {
        RedisLocker a = locker("a");
        RedisLocker b = locker("b");
        KeyColumn lock = lock("handoff");
        int rounds = 200;
        long[] handoff = new long[rounds];
        long[] rtt = new long[rounds];
        for (int i = 0; i < rounds; i++) {
            RedisLocker holder = i % 2 == 0 ? a : b;
            RedisLocker waiter = i % 2 == 0 ? b : a;
            Lease held = holder.acquire(lock, "holding");
            Future<Long> granted = fixture.submit(() -> {
                Lease l = waiter.tryAcquire(lock, "waiting", Duration.ofSeconds(30)).orElseThrow();
                long at = System.nanoTime();
                l.close();
                return at;
            });
            fixture.awaitQueued(holder, lock, 1);
            long released = System.nanoTime();
            held.close();
            handoff[i] = granted.get(30, TimeUnit.SECONDS) - released;
            long p = System.nanoTime();
            fixture.admin().ping();
            rtt[i] = System.nanoTime() - p;
        }
        Arrays.sort(handoff);
        Arrays.sort(rtt);
        double medianHandoff = handoff[rounds / 2] / 1e6;
        double medianRtt = rtt[rounds / 2] / 1e6;
        System.out.printf("[measure] Redis handoff release -> queued waiter's grant over %d handoffs: median %.3f ms, "
                        + "p90 %.3f ms; PING round trip median %.3f ms; handoff = %.1f round trips%n", rounds,
                medianHandoff, handoff[rounds * 9 / 10] / 1e6, medianRtt, medianHandoff / medianRtt);
    }
}
