package dev.locker.redis;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.testkit.FreezingProxy;
import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import redis.clients.jedis.Protocol;

import java.time.Duration;
import java.util.ArrayList;
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
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Adversarial review of the Redis handoff changes (issue 14: 42b9924 the lingering wake-up subscription, b56fe2d a
 * waiter refused with -5 pauses until a wake-up, f5984be the 2-200 ms back-off while unsubscribed, 66c2426 their
 * tests). Real redis-server processes only; each finding is a failing test, disabled so the build stays green; the
 * cases checked and found sound run.
 *
 * <p>Design bound that limits every finding: a waiter never sleeps past a third of its queue entry's life
 * ({@code queueTtl / 3}, 500 ms with the 1.5 s expiry here, 1 s by default) before it asks again, so no lost wake-up
 * can make a wait run out a long timeout while the lock is free. The findings are lost wake-ups that turn a sub-ms
 * handoff into that fallback for good, leaks, and a queue entry left behind.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class RedisHandoffReviewTest {

    private static final Duration EXPIRY = Duration.ofMillis(1500);

    @RegisterExtension
    static final RedisWaitingFixture fixture = RedisWaitingFixture.ownServer("rhr");

    private RedisLocker locker(String name, Duration linger) {
        return locker(name, linger, fixture.server().port());
    }

    /** A locker on 127.0.0.1:{@code port} (the server, or a proxy in front of it). */
    private RedisLocker locker(String name, Duration linger, int port) {
        return locker(name, linger, port, EXPIRY, null);
    }

    /** Also with this expiry (the queue entries live min(expiry, 3 s)) and health check (null: the default). */
    private RedisLocker locker(String name, Duration linger, int port, Duration expiry, Duration healthCheck) {
        RedisLocker.Builder builder = configured(fixture.on(port), name, expiry, linger);
        if (healthCheck != null) {
            builder.wakeupHealthCheck(healthCheck);
        }
        return fixture.open(builder);
    }

    /** {@code holder} takes the lock, {@code waiter} queues for it, the holder releases: the waiter is granted. */
    private void handOver(RedisLocker holder, RedisLocker waiter, KeyColumn lock) throws Exception {
        fixture.handOver(holder, waiter, lock, Duration.ofSeconds(20), Duration.ofSeconds(30));
    }

    // ---- findings ---------------------------------------------------------------------------------------------

    /**
     * Finding 1: a subscription connection that goes silent (half-open TCP: a NAT or firewall drops its state, a
     * partition, a hung proxy; no RST, no FIN) is never noticed. Jedis subscribes with an infinite read timeout and
     * RedisWakeups never PINGs it, so the listening thread blocks forever, {@code subscribed()} stays true, and:
     * <ul>
     *   <li>no release ever wakes a waiter of this locker again: every handoff to it falls back to its queue
     *       refresh (queueTtl / 3: 500 ms here, 1 s by default) instead of sub-millisecond, for the locker's whole
     *       life; the f5984be back-off does not apply either, since the locker believes it is subscribed;</li>
     *   <li>the linger's end sends UNSUBSCRIBE into the void and arms no further check, so the thread and the
     *       connection outlive the linger (until close), and no new subscription is ever made.</li>
     * </ul>
     * The server still counts the subscriber and PUBLISH reports a receiver: nothing outside shows the loss either.
     * Expected: a health check on the subscription (a PING every few seconds, with a read timeout), or a read timeout
     * on the subscription socket, so a silent connection is replaced.
     *
     * <p>Fixed: RedisWakeups asks the subscription to answer every {@code wakeupHealthCheck} (250 ms here) and closes
     * a connection that answered nothing for as long; the new connection passes (the proxy freezes the connections
     * that had sent a SUBSCRIBE when told to, as a NAT that lost their state does; a new connection makes new state).
     */
    @Test
    void aSilentSubscriptionConnectionIsReplaced() throws Exception {
        FreezingProxy proxy = new FreezingProxy("127.0.0.1", fixture.server().port(), "SUBSCRIBE");
        fixture.closeAfterTest(proxy);
        RedisLocker a = locker("a", Duration.ofMillis(300));
        RedisLocker b = locker("b", Duration.ofMillis(300), proxy.port(), EXPIRY, Duration.ofMillis(250));
        KeyColumn lock = lock("silent");
        handOver(a, b, lock); // b subscribes (through the proxy)
        awaitTrue(b::wakeupsSubscribed, "never subscribed");
        assertEquals(1, b.wakeupSubscriptions());
        proxy.freezeMarked(); // the subscription's connection goes silent, both ways; nothing is closed

        long toldBefore = b.wakeupMessages();
        int rounds = 5;
        long slowest = 0;
        for (int i = 0; i < rounds; i++) {
            long t0 = System.nanoTime();
            handOver(a, b, lock); // still granted, on its queue refresh
            slowest = Math.max(slowest, System.nanoTime() - t0);
        }
        long told = b.wakeupMessages() - toldBefore;
        System.out.printf("finding 1: %d handoffs after the silence: told of %d releases, %d subscriptions in all, "
                + "slowest handoff %d ms, server counts %d subscriber(s)%n", rounds, told, b.wakeupSubscriptions(),
                TimeUnit.NANOSECONDS.toMillis(slowest), fixture.subscribersOnServer());
        // nobody waits now; well past the 300 ms linger, the thread and its connection should be gone
        Thread.sleep(3_000);
        System.out.printf("finding 1: 3 s after the last wait (linger 300 ms): %d listening thread(s), subscribed()=%s%n",
                listeners(b), b.wakeupsSubscribed());
        assertTrue(told > 0 || b.wakeupSubscriptions() > 1,
                "after its subscription went silent, b was never told of a release again nor subscribed anew");
        assertEquals(0, listeners(b), "the listening thread (and its connection) outlived the linger");
        long toldNow = b.wakeupMessages();
        Lease held = a.acquire(lock, "holding");
        Future<Lease> granted = fixture.submit(() -> b.tryAcquire(lock, "waiting", Duration.ofSeconds(20))
                .orElseThrow());
        fixture.awaitQueued(a, lock, 1);
        awaitTrue(b::wakeupsSubscribed, "b did not subscribe anew"); // on a connection that works
        held.close();
        granted.get(30, TimeUnit.SECONDS).close();
        assertTrue(b.wakeupMessages() > toldNow, "b's new subscription was not told of the release");
    }

    /**
     * Finding 2: while the subscription's connection is being made again after it broke (CLIENT KILL, a server
     * restart, a network error), {@code wakeups.subscribed()} still says true: Jedis leaves the subscriber's channel
     * count as it was when the read fails, and {@code subscriber} keeps pointing at the dead subscriber until the
     * reconnect pause is over. So f5984be's back-off ("while the locker is not subscribed ... or the connection was
     * lost and is being made again ... look again after 2-200 ms") never applies to a lost connection: a release
     * published in the pause is seen only at the queue refresh (queueTtl / 3) or the next subscription's wake-all.
     * Worse, that pause only grows: {@code pauseMillis} is reset to 100 ms only when {@code subscribe} returns
     * normally, which a broken connection never does, so each kill (however far apart, with a good subscription in
     * between) doubles it, up to 2 s. The test kills the subscription six times and shows the locker claiming to be
     * subscribed while the server has no subscriber for it.
     *
     * <p>Fixed: subscribed() is true only from the server's confirmation until the subscription ends, and the pause is
     * back at 100 ms after a subscription that worked. (A sample taken between the kill and the client reading the
     * end of its connection may still say subscribed: no client can know sooner.)
     */
    @Test
    void aLockerWhoseSubscriptionBrokeDoesNotClaimToBeSubscribed() throws Exception {
        RedisLocker a = locker("a", Duration.ofMinutes(5));
        RedisLocker b = locker("b", Duration.ofMinutes(5));
        KeyColumn lock = lock("stale");
        Lease held = a.acquire(lock, "holding"); // renewed in the background for the whole test
        Future<Optional<Lease>> waiting = fixture.submit(() -> b.tryAcquire(lock, "waiting", Duration.ofSeconds(60)));
        fixture.awaitQueued(a, lock, 1);
        awaitTrue(b::wakeupsSubscribed, "never subscribed");
        long staleSamples = 0;
        long samples = 0;
        int neverUnsubscribed = 0;
        List<Long> reconnectMillis = new ArrayList<>();
        List<Long> pauses = new ArrayList<>();
        for (int kill = 1; kill <= 6; kill++) {
            long subs = b.wakeupSubscriptions();
            boolean saidUnsubscribed = false;
            fixture.admin().sendCommand(Protocol.Command.CLIENT, "KILL", "TYPE", "pubsub");
            long t0 = System.nanoTime();
            awaitTrue(() -> fixture.subscribersOnServer() == 0, "the kill did not take");
            while (b.wakeupSubscriptions() == subs) { // until the locker subscribed again
                samples++;
                boolean said = b.wakeupsSubscribed();
                saidUnsubscribed |= !said;
                if (said && fixture.subscribersOnServer() == 0 && b.wakeupSubscriptions() == subs) {
                    staleSamples++; // the first samples may come before the client read the end of its connection
                }
                assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(30), "never subscribed again");
                Thread.sleep(5);
            }
            reconnectMillis.add(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
            pauses.add(b.wakeupReconnectPauseMillis());
            if (!saidUnsubscribed) {
                neverUnsubscribed++;
            }
        }
        System.out.printf("finding 2: resubscribed after each kill in %s ms (pauses %s ms); %d of %d samples in the "
                + "gaps said subscribed with no subscriber on the server%n", reconnectMillis, pauses, staleSamples,
                samples);
        held.close();
        assertTrue(waiting.get(30, TimeUnit.SECONDS).isPresent());
        assertEquals(0, neverUnsubscribed, "the locker said it was subscribed all the while its subscription was being "
                + "made again");
        assertEquals(List.of(100L, 100L, 100L, 100L, 100L, 100L), pauses,
                "the reconnect pause grew although each subscription before the kill had worked");
    }

    /**
     * Finding 3: close() racing a wait leaves the waiter's queue entry behind. close() ends the wake-ups (which wakes
     * the waiter) and closes the client right after; the waiter's stopWaiting then runs its DEQUEUE on a closed client,
     * which fails (logged at DEBUG only), so the entry stays until it lapses (queueTtl, 3 s by default). A process that
     * shuts down gracefully thus holds up a free lock like a dead one: the next waiter is refused with -5 ("promised to
     * the first of the processes queued") and, since b56fe2d, pauses in queueTtl / 3 steps for that whole time, as
     * nobody announces the lapse. b56fe2d's reasoning ("only a first waiter that died goes unannounced") misses this
     * case. Expected: close() withdraws its waiters' queue entries (DEQUEUE, which publishes) before closing the client.
     *
     * <p>Fixed: close() wakes the waiters and waits (at most queueTtl) until each left its queues before it closes the
     * client.
     */
    @Test
    void closingAWaitingLockerLeavesNoQueueEntry() throws Exception {
        RedisLocker a = locker("a", Duration.ofSeconds(5));
        RedisLocker c = locker("c", Duration.ofSeconds(5));
        int rounds = 5;
        int left = 0;
        long slowestMs = 0;
        for (int i = 0; i < rounds; i++) {
            RedisLocker b = locker("b" + i, Duration.ofSeconds(5));
            KeyColumn lock = lock("closing");
            Lease held = a.acquire(lock, "holding");
            Future<Optional<Lease>> bWaits = fixture.submit(() -> b.tryAcquire(lock, "first", Duration.ofSeconds(20)));
            fixture.awaitQueued(a, lock, 1);
            String bEntry = fixture.queued(a, lock).get(0);
            Future<Optional<Lease>> cWaits = fixture.submit(() -> c.tryAcquire(lock, "second", Duration.ofSeconds(20)));
            fixture.awaitQueued(a, lock, 2);
            b.close(); // b's process shuts down while b waits
            assertFalse(bWaits.get(30, TimeUnit.SECONDS).isPresent());
            if (fixture.queued(a, lock).contains(bEntry)) {
                left++;
            }
            long t0 = System.nanoTime();
            held.close(); // the lock is free now; c is the only live waiter
            cWaits.get(30, TimeUnit.SECONDS).orElseThrow().close();
            slowestMs = Math.max(slowestMs, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
        }
        System.out.printf("finding 3: %d of %d closed waiters left their queue entry; the live waiter took the free "
                + "lock up to %d ms after its release (queueTtl %d ms)%n", left, rounds, slowestMs, EXPIRY.toMillis());
        assertEquals(0, left, "a waiter whose locker was closed left its queue entry behind");
    }

    /**
     * Finding 4 (low; mostly the queue's design, made a little slower by b56fe2d): b56fe2d reasons that a waiter
     * refused with -5 need not poll because "only a first waiter that died goes unannounced". A live multi-lock waiter
     * (tryAcquireAll) goes unannounced too: B, waiting for {L1, L2}, is queued first on L2, is woken by L2's release,
     * finds L1 taken meanwhile and waits on L1 instead, leaving its L2 entry to lapse silently (queueTtl). C, the only
     * other waiter for the free L2, is refused with -5 all that time and, since b56fe2d, sleeps in queueTtl / 3 steps
     * (1 s by default) instead of polling, so it takes L2 up to queueTtl + queueTtl / 3 after it became free while B,
     * alive, never takes it. Shown by order: C is granted only after B's L2 entry is gone, although B was never granted.
     */
    @Test
    @Disabled("finding 4, accepted: a live tryAcquireAll waiter's stale queue entry holds a free lock for at most "
            + "queueTtl (3 s at most). Leaving the other queues instead (975c00e, reverted) starved multi-lock waiters "
            + "under contention on each lock (RedisHandoffReview2Test.aMultiLockWaiterIsNotStarvedByContentionOnEach"
            + "OfItsLocks): a bounded delay for others is the lesser harm")
    void aLiveMultiLockWaiterDoesNotHoldAFreeLockUnannounced() throws Exception {
        RedisLocker x = locker("x", Duration.ofSeconds(5));
        RedisLocker y = locker("y", Duration.ofSeconds(5));
        RedisLocker b = locker("b", Duration.ofSeconds(5));
        RedisLocker c = locker("c", Duration.ofSeconds(5));
        KeyColumn l1 = lock("multi-1");
        KeyColumn l2 = lock("multi-2");
        Lease yHolds = y.acquire(l2, "holding l2");
        Future<Optional<Lease>> bWaits = fixture.submit(() -> b.tryAcquireAll(List.of(l1, l2), "both",
                Duration.ofSeconds(20)));
        fixture.awaitQueued(y, l2, 1); // B took L1, was refused L2, queued on L2 and let L1 go
        String bEntry = fixture.queued(y, l2).get(0);
        Lease xHolds = x.acquire(l1, "holding l1"); // L1 is free and nobody is queued on it: granted
        Future<Optional<Lease>> cWaits = fixture.submit(() -> c.tryAcquire(l2, "only l2", Duration.ofSeconds(20)));
        fixture.awaitQueued(y, l2, 2);
        long t0 = System.nanoTime();
        yHolds.close(); // L2 free; B is woken, is refused L1 and waits there; C is refused -5
        Lease cGot = cWaits.get(30, TimeUnit.SECONDS).orElseThrow();
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        boolean bEntryGoneFirst = !fixture.queued(y, l2).contains(bEntry);
        cGot.close();
        xHolds.close();
        bWaits.get(30, TimeUnit.SECONDS).ifPresent(Lease::close);
        System.out.printf("finding 4: C took the free L2 %d ms after its release (queueTtl %d ms)%n", ms,
                EXPIRY.toMillis());
        assertFalse(bEntryGoneFirst, "C was granted the free lock only once B's stale entry had lapsed");
    }

    // ---- checked and found sound ------------------------------------------------------------------------------

    /**
     * Repeated waits with a linger far shorter than the gaps between them: at most one listening thread per locker at
     * any time, and once nobody has waited for the linger, no thread and no subscription left (no pile-up).
     */
    @Test
    void repeatedWaitsLeaveNoThreadsOrSubscriptions() throws Exception {
        RedisLocker a = locker("a", Duration.ofMillis(20));
        RedisLocker b = locker("b", Duration.ofMillis(20));
        KeyColumn lock = lock("pile");
        long most = 0;
        for (int i = 0; i < 30; i++) {
            handOver(i % 2 == 0 ? a : b, i % 2 == 0 ? b : a, lock);
            most = Math.max(most, Math.max(listeners(a), listeners(b)));
            if (i % 3 == 0) {
                Thread.sleep(60); // let the linger end sometimes, so that the next wait subscribes anew
            }
        }
        assertTrue(most <= 1, "at most one listening thread per locker, saw " + most);
        awaitTrue(() -> listeners(a) + listeners(b) == 0 && fixture.subscribersOnServer() == 0,
                "threads or subscriptions left after the linger");
        assertTrue(a.wakeupSubscriptions() + b.wakeupSubscriptions() > 2, "the linger did end between waits");
    }

    /**
     * The linger ends while waiters keep coming (1 ms linger: the check races every registration): every wait is
     * still granted, well within its timeout, and nothing is left afterwards. A waiter registering as the linger ends
     * is either seen by the listening loop (it subscribes again) or starts a new thread; one that slept on a subscriber
     * that is being unsubscribed is woken by the wake-all after it.
     */
    @Test
    void theLingerEndingWhileWaitersRegisterLosesNoWaiter() throws Exception {
        RedisLocker a = locker("a", Duration.ofMillis(1));
        RedisLocker b = locker("b", Duration.ofMillis(1));
        KeyColumn lock = lock("linger-race");
        long slowest = 0;
        for (int i = 0; i < 40; i++) {
            long t0 = System.nanoTime();
            handOver(i % 2 == 0 ? a : b, i % 2 == 0 ? b : a, lock);
            slowest = Math.max(slowest, System.nanoTime() - t0);
        }
        System.out.printf("linger race: 40 handoffs, slowest %d ms; %d + %d subscriptions%n",
                TimeUnit.NANOSECONDS.toMillis(slowest), a.wakeupSubscriptions(), b.wakeupSubscriptions());
        awaitTrue(() -> listeners(a) + listeners(b) == 0 && fixture.subscribersOnServer() == 0,
                "left after the linger");
    }

    /** close() racing a wait that is subscribing, or a lingering subscription: no thread nor subscription survives. */
    @Test
    void closeRacingWaitsLeavesNothing() throws Exception {
        RedisLocker a = locker("a", Duration.ofSeconds(5));
        KeyColumn lock = lock("close-race");
        Lease held = a.acquire(lock, "holding");
        List<RedisLocker> closed = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            RedisLocker b = locker("b" + i, Duration.ofHours(1));
            Future<Optional<Lease>> w = fixture.submit(() -> b.tryAcquire(lock, "waiting", Duration.ofSeconds(20)));
            if (i % 2 == 0) {
                fixture.awaitQueued(a, lock, 1); // else: close while the first attempt or the subscription is under way
            }
            b.close();
            try {
                assertFalse(w.get(30, TimeUnit.SECONDS).isPresent(), "a closed locker's wait ends without a lease");
            } catch (java.util.concurrent.ExecutionException e) {
                // closed before the wait began: refused at once, as it should be
                assertTrue(e.getCause() instanceof IllegalStateException, e.toString());
            }
            closed.add(b);
        }
        held.close();
        awaitTrue(() -> closed.stream().mapToLong(RedisWaitingFixture::listeners).sum() == 0
                && fixture.subscribersOnServer() == 0, "a closed locker's listening thread or subscription survived");
    }

    /**
     * A waiter whose lock is released while the server restarts (the subscription breaks, the lock's data is lost):
     * granted within its timeout, and the locker subscribes again. Own server, killed and started again.
     */
    @Test
    void aServerRestartDuringAWaitIsSurvived() throws Exception {
        RedisServerProcess own = RedisServerProcess.start();
        try {
            RedisLocker a = locker("a", Duration.ofSeconds(5), own.port());
            RedisLocker b = locker("b", Duration.ofSeconds(30), own.port());
            KeyColumn lock = lock("restart");
            Lease held = a.acquire(lock, "holding");
            Future<Optional<Lease>> w = fixture.submit(() -> b.tryAcquire(lock, "waiting", Duration.ofSeconds(20)));
            awaitTrue(b::wakeupsSubscribed, "never subscribed");
            own.restart(); // the claim and the queue are gone with the data
            Lease got = w.get(30, TimeUnit.SECONDS).orElseThrow(() -> new AssertionError("not granted after restart"));
            got.close();
            awaitTrue(() -> b.wakeupSubscriptions() >= 2, "never subscribed again after the restart");
            held.close();
        } finally {
            own.close();
        }
    }
}
