package dev.locker.redis;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.testkit.FaultProxy;
import dev.locker.testkit.RedisServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.UnifiedJedis;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import static dev.locker.redis.RedisWaitingFixture.awaitTrue;
import static dev.locker.redis.RedisWaitingFixture.configured;
import static dev.locker.redis.RedisWaitingFixture.listeners;
import static dev.locker.redis.RedisWaitingFixture.lock;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** A released lock is handed to its waiters through a wake-up subscription that survives silence, kills and close. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class RedisHandoffTest {

    private static final Duration EXPIRY = Duration.ofMillis(1500);

    @RegisterExtension
    static final RedisWaitingFixture fixture = RedisWaitingFixture.ownServer("handoff");

    private RedisLocker locker(String name, Duration linger) {
        return locker(name, linger, fixture.server().port());
    }

    /** A locker on 127.0.0.1:{@code port} (the server, or a proxy in front of it). */
    private RedisLocker locker(String name, Duration linger, int port) {
        return locker(name, linger, port, EXPIRY, null);
    }

    /** Also with this expiry (the queue entries live min(expiry, 3 s)) and health check (null: the default). */
    private RedisLocker locker(String name, Duration linger, int port, Duration expiry, Duration healthCheck) {
        RedisLockerBuilder builder = configured(fixture.on(port), name, expiry, linger);
        if (healthCheck != null) {
            builder.wakeupHealthCheck(healthCheck);
        }
        return fixture.open(builder);
    }

    /** {@code holder} takes the lock, {@code waiter} queues for it, the holder releases: the waiter is granted. */
    private void handOver(RedisLocker holder, RedisLocker waiter, KeyColumn lock) throws Exception {
        fixture.handOver(holder, waiter, lock, Duration.ofSeconds(20), Duration.ofSeconds(30));
    }

    /**
     * A subscription connection that goes silent (half-open TCP: no RST, no FIN) is noticed and replaced. The health
     * check asks it to answer every 250 ms here and closes a connection that stays mute as long. A new connection makes
     * new state, so the proxy freezes only the connections that had sent SUBSCRIBE, as a NAT that lost their state
     * would.
     */
    @Test
    void aSilentSubscriptionConnectionIsReplaced() throws Exception {
        FaultProxy proxy = new FaultProxy("127.0.0.1", fixture.server().port(), "SUBSCRIBE");
        fixture.closeAfterTest(proxy);
        RedisLocker a = locker("a", Duration.ofMillis(300));
        RedisLocker b = locker("b", Duration.ofMillis(300), proxy.port(), EXPIRY, Duration.ofMillis(250));
        KeyColumn lock = lock("silent");
        handOver(a, b, lock); // b subscribes (through the proxy)
        awaitTrue(() -> b.wakeupListening(lock), "never subscribed"); // to the lock's channel too
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
        System.out.printf("silent subscription: %d handoffs after the silence: told of %d releases, %d subscriptions in all, "
                + "slowest handoff %d ms, server counts %d subscriber(s)%n", rounds, told, b.wakeupSubscriptions(),
                TimeUnit.NANOSECONDS.toMillis(slowest), fixture.subscribersOnServer());
        // nobody waits now; well past the 300 ms linger, the thread and its connection should be gone
        Thread.sleep(3_000);
        System.out.printf("silent subscription: 3 s after the last wait (linger 300 ms): %d listening thread(s), subscribed()=%s%n",
                listeners(b), b.wakeupsSubscribed());
        assertTrue(told > 0 || b.wakeupSubscriptions() > 1,
                "after its subscription went silent, b was never told of a release again nor subscribed anew");
        assertEquals(0, listeners(b), "the listening thread (and its connection) outlived the linger");
        long toldNow = b.wakeupMessages();
        Lease held = a.acquire(lock, "holding");
        Future<Lease> granted = fixture.submit(() -> b.tryAcquire(lock, "waiting", Duration.ofSeconds(20))
                .orElseThrow());
        fixture.awaitQueued(a, lock, 1);
        awaitTrue(() -> b.wakeupListening(lock), "b did not subscribe anew"); // on a connection that works
        held.close();
        granted.get(30, TimeUnit.SECONDS).close();
        assertTrue(b.wakeupMessages() > toldNow, "b's new subscription was not told of the release");
    }

    /**
     * While the subscription is made again after it broke (CLIENT KILL six times), subscribed() does not say true. It
     * is true only from the server's confirmation until the subscription ends, and the reconnect pause is back at 100
     * ms after a subscription that worked. A sample taken before the client reads the end of its connection may still
     * say subscribed: no client can know sooner.
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
        System.out.printf("broken subscription: resubscribed after each kill in %s ms (pauses %s ms); %d of %d samples in the "
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
     * close() racing a wait leaves no queue entry behind: it wakes the waiters and waits, at most queueTtl, until each
     * left its queues. Only then does it close the client, so a graceful shutdown does not hold a free lock like a dead
     * process.
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
        System.out.printf("close racing waits: %d of %d closed waiters left their queue entry; the live waiter took the free "
                + "lock up to %d ms after its release (queueTtl %d ms)%n", left, rounds, slowestMs, EXPIRY.toMillis());
        assertEquals(0, left, "a waiter whose locker was closed left its queue entry behind");
    }

    /**
     * A live multi-lock waiter (tryAcquireAll) refused on L1 stops refreshing its entry on L2, queued earlier. That
     * stale entry keeps C, the only other waiter, off the free L2 until it lapses: never before, and at most queueTtl
     * after the release. C is then granted at one of its refreshes, a third of queueTtl apart, while B still waits.
     * Times are the server's, read from the entry and from C's token (the server's microseconds at its grant).
     */
    @Test
    void aStaleQueueEntryOfALiveMultiLockWaiterHoldsAFreeLockAtMostQueueTtl() throws Exception {
        Duration expiry = Duration.ofSeconds(6);
        long queueTtlMicros = TimeUnit.SECONDS.toMicros(3); // min(expiry, 3 s): the documented life of an entry
        RedisLocker x = locker("x", Duration.ofSeconds(5), fixture.server().port(), expiry, null);
        RedisLocker y = locker("y", Duration.ofSeconds(5), fixture.server().port(), expiry, null);
        RedisLocker b = locker("b", Duration.ofSeconds(5), fixture.server().port(), expiry, null);
        RedisLocker c = locker("c", Duration.ofSeconds(5), fixture.server().port(), expiry, null);
        KeyColumn l1 = lock("multi-1");
        KeyColumn l2 = lock("multi-2");
        Lease yHolds = y.acquire(l2, "holding l2");
        Future<Optional<Lease>> bWaits = fixture.submit(() -> b.tryAcquireAll(List.of(l1, l2), "both",
                Duration.ofSeconds(60)));
        fixture.awaitQueued(y, l2, 1); // B took L1, was refused L2, queued on L2 and let L1 go
        String bEntry = fixture.queued(y, l2).get(0);
        Lease xHolds = x.tryAcquire(l1, "holding l1", Duration.ofSeconds(30)).orElseThrow();
        Future<Optional<Lease>> cWaits = fixture.submit(() -> c.tryAcquire(l2, "only l2", Duration.ofSeconds(60)));
        fixture.awaitQueued(y, l2, 2);
        fixture.awaitQueued(x, l1, 1); // B is refused L1 now, at every attempt: it refreshes its L2 entry no more
        long bEntryEnds = entryEnd(y, l2, bEntry);
        long released = fixture.serverMicros();
        yHolds.close(); // L2 free; only B's stale entry stands before C's
        assumeTrue(bEntryEnds > released, "B's entry on L2 lapsed before the release (a busy machine)");
        Lease cGot = cWaits.get(60, TimeUnit.SECONDS).orElseThrow(() -> new AssertionError("C never took the free L2"));
        long cGranted = cGot.fencingToken();
        boolean bStillWaits = !bWaits.isDone();
        cGot.close();
        xHolds.close();
        bWaits.get(60, TimeUnit.SECONDS).ifPresent(Lease::close);
        System.out.printf("multi-lock waiter: its stale entry held the free L2 %d ms after the release; C took it %d ms "
                + "after the release (queueTtl %d ms)%n", (bEntryEnds - released) / 1000,
                (cGranted - released) / 1000, queueTtlMicros / 1000);
        assertTrue(bEntryEnds - released <= queueTtlMicros, "B's stale entry outlived the release by "
                + (bEntryEnds - released) + " µs, more than queueTtl");
        assertTrue(cGranted >= bEntryEnds, "C was granted the free lock " + (bEntryEnds - cGranted) + " µs before B's "
                + "stale entry lapsed");
        assertTrue(cGranted - released <= 2 * queueTtlMicros, "C took the free L2 " + (cGranted - released)
                + " µs after its release: more than queueTtl for the stale entry and one more for C's refreshes");
        assertTrue(bStillWaits, "B was no longer waiting when C was granted: its entry was not a live waiter's");
    }

    /** The end of queue entry {@code field} of {@code lock}, in the server's microseconds ("seq until\nowner"). */
    private long entryEnd(RedisLocker l, KeyColumn lock, String field) {
        byte[] v = fixture.admin().hget(l.redisKey(lock), field.getBytes(StandardCharsets.US_ASCII));
        assertTrue(v != null, "no queue entry " + field + " on " + lock);
        String head = new String(v, StandardCharsets.US_ASCII).split("\n", 2)[0];
        return Long.parseLong(head.split(" ")[1]);
    }

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
        RedisServer own = RedisServer.start();
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

    private RedisLockerBuilder builder(String name, int port, Duration expiry) {
        return configured(fixture.on(port), name, expiry, Duration.ofSeconds(5));
    }

    /** A locker on the server with this expiry, whose wake-up subscription lingers 5 s. */
    private RedisLocker lingering(String name, Duration expiry) {
        return fixture.open(builder(name, fixture.server().port(), expiry));
    }

    /** A locker that takes {@code lock} again and again (a short hold each time), queueing for it, until stopped. */
    private Future<Long> stream(RedisLocker l, KeyColumn lock, AtomicBoolean stop) {
        return fixture.submit(() -> {
            long holds = 0;
            while (!stop.get()) {
                Optional<Lease> got = l.tryAcquire(lock, "stream", Duration.ofSeconds(20));
                if (got.isPresent()) {
                    holds++;
                    Thread.sleep(20);
                    got.get().close();
                }
            }
            return holds;
        });
    }

    /**
     * A multi-lock waiter gets both locks while single-lock waiters contend for each of them. It keeps its place on
     * every lock while it waits for any of them. Here two lockers take turns on each lock with 20 ms holds, and B asks
     * for both with 10 s.
     */
    @Test
    void aMultiLockWaiterIsNotStarvedByContentionOnEachOfItsLocks() throws Exception {
        Duration expiry = Duration.ofSeconds(6); // queue entries live 3 s
        KeyColumn l1 = lock("starve-1");
        KeyColumn l2 = lock("starve-2");
        AtomicBoolean stop = new AtomicBoolean();
        List<Future<Long>> streams = new ArrayList<>();
        for (KeyColumn l : List.of(l1, l2)) {
            for (int i = 0; i < 2; i++) {
                streams.add(stream(lingering("s" + i, expiry), l, stop));
            }
        }
        RedisLocker b = lingering("b", expiry);
        Thread.sleep(300); // the streams are under way: each lock is held, with a waiter queued
        long t0 = System.nanoTime();
        Optional<Lease> both = b.tryAcquireAll(List.of(l1, l2), "both", Duration.ofSeconds(10));
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        stop.set(true);
        List<Long> holds = new ArrayList<>();
        for (Future<Long> f : streams) {
            holds.add(f.get(60, TimeUnit.SECONDS));
        }
        both.ifPresent(Lease::close);
        System.out.printf("silent subscription: multi-lock waiter %s after %d ms; the single-lock streams held %s times%n",
                both.isPresent() ? "granted" : "refused", ms, holds);
        assertTrue(both.isPresent(), "the multi-lock waiter was starved for its whole 10 s wait");
    }

    /**
     * close() from an interrupted thread still waits for its waiters to leave their queues, bounded by queueTtl, and
     * restores the interrupt flag afterwards. Shutdown paths often close lockers from interrupted threads (shutdownNow,
     * then close in a finally).
     */
    @Test
    void closingFromAnInterruptedThreadLeavesNoQueueEntry() throws Exception {
        RedisLocker a = lingering("a", EXPIRY);
        RedisLocker b = lingering("b", EXPIRY);
        KeyColumn lock = lock("closing-interrupted");
        Lease held = a.acquire(lock, "holding");
        Future<Optional<Lease>> bWaits = fixture.submit(() -> b.tryAcquire(lock, "first", Duration.ofSeconds(20)));
        awaitTrue(() -> fixture.queued(a, lock).size() == 1, "b never queued");
        String bEntry = fixture.queued(a, lock).get(0);
        fixture.submit(() -> {
            Thread.currentThread().interrupt(); // a shutdown that interrupted this thread first
            b.close();
            return null;
        }).get(30, TimeUnit.SECONDS);
        assertFalse(bWaits.get(30, TimeUnit.SECONDS).isPresent());
        boolean left = fixture.queued(a, lock).contains(bEntry);
        held.close();
        System.out.printf("closed from an interrupted thread, the waiter %s its queue entry%n",
                left ? "left" : "removed");
        assertFalse(left, "the closed waiter's queue entry stayed (it lapses only after queueTtl)");
    }

    /**
     * The Rawable path with a replica (replicas=1: script and WAIT pipelined, runAndWait) after SCRIPT FLUSH, on every
     * call of the lock path: acquire, renew and release each fall back to EVAL, the claim is on the master and the
     * replica, the renewal is acknowledged, the release frees the lock (a second locker takes it at once).
     */
    @Test
    void everyLockPathCallRunsAfterAScriptFlushWithAReplica() throws Exception {
        RedisServer replica = RedisServer.start("--replicaof", "127.0.0.1",
                Integer.toString(fixture.server().port()));
        fixture.closeAfterTest(replica);
        try (UnifiedJedis r = RedisLocker.builder().uri(replica.address()).newClient(1)) {
            awaitTrue(() -> String.valueOf(r.info("replication")).contains("master_link_status:up"),
                    "the replica never linked");
        }
        RedisLocker a = fixture.open(builder("a", fixture.server().port(), Duration.ofSeconds(5)).replicas(1)
                .replicaTimeout(Duration.ofSeconds(2)));
        RedisLocker b = lingering("b", Duration.ofSeconds(5));
        KeyColumn lock = lock("flushed");
        fixture.admin().scriptFlush();
        Lease lease = a.acquire(lock, "after a flush");
        assertTrue(fixture.admin().exists(a.redisKey(lock)), "no claim on the master");
        fixture.admin().scriptFlush();
        lease.renew();
        assertTrue(lease.isValid());
        fixture.admin().scriptFlush();
        lease.close();
        Optional<Lease> next = b.tryAcquire(lock, "next", Duration.ZERO);
        assertTrue(next.isPresent(), "the release after a flush did not free the lock");
        next.get().close();
        // and the Rawable path without replicas, flushed before each call
        fixture.admin().scriptFlush();
        Lease plain = b.acquire(lock, "plain");
        fixture.admin().scriptFlush();
        plain.renew();
        fixture.admin().scriptFlush();
        plain.close();
        assertTrue(a.tryAcquire(lock, "again", Duration.ZERO).map(l -> {
            l.close();
            return true;
        }).orElse(false));
    }

    /**
     * A busy, healthy subscription is not closed by its health check: 200 ms checks while releases are handed over
     * and the channel carries a flood of other messages (published from another connection): one subscription for
     * the whole run. Meanwhile a lease of the same locker, renewed by the same background thread, is never lost.
     */
    @Test
    void aBusyHealthySubscriptionIsKeptAndRenewalsGoOn() throws Exception {
        RedisLocker a = lingering("a", EXPIRY);
        RedisLocker b = fixture.open(builder("b", fixture.server().port(), EXPIRY)
                .wakeupHealthCheck(Duration.ofMillis(200)));
        KeyColumn lock = lock("busy");
        KeyColumn kept = lock("kept");
        AtomicLong lost = new AtomicLong();
        Lease keptLease = b.acquire(kept, "kept alive");
        keptLease.onLost(x -> lost.incrementAndGet());
        AtomicBoolean stop = new AtomicBoolean();
        byte[] channel = (fixture.prefix() + "released").getBytes(StandardCharsets.US_ASCII);
        Future<Long> flood = fixture.submit(() -> {
            long n = 0;
            try (UnifiedJedis p = RedisLocker.builder().uri(fixture.server().address()).newClient(1)) {
                while (!stop.get()) {
                    p.publish(channel, ("noise-" + n++).getBytes(StandardCharsets.US_ASCII));
                }
            }
            return n;
        });
        long t0 = System.nanoTime();
        int rounds = 0;
        while (System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(4)) {
            fixture.handOver(a, b, lock, Duration.ofSeconds(20), Duration.ofSeconds(30));
            rounds++;
        }
        stop.set(true);
        long published = flood.get(30, TimeUnit.SECONDS);
        System.out.printf("health check under load: %d handoffs, %d noise messages, %d subscription(s)%n", rounds,
                published, b.wakeupSubscriptions());
        assertEquals(1, b.wakeupSubscriptions(), "a healthy subscription was closed and made anew");
        assertTrue(keptLease.isValid());
        assertEquals(0, lost.get(), "a lease was lost while the health check ran");
        keptLease.close();
    }

    /**
     * A silent subscription is replaced by the health check while a lease of the same locker, renewed on the same
     * background thread, stays valid (the check's write and the socket's close do not block that thread), and close()
     * afterwards ends it all.
     */
    @Test
    void replacingASilentSubscriptionLosesNoLease() throws Exception {
        FaultProxy proxy = new FaultProxy("127.0.0.1", fixture.server().port(), "SUBSCRIBE");
        fixture.closeAfterTest(proxy);
        RedisLocker a = lingering("a", EXPIRY);
        RedisLocker b = fixture.open(builder("b", proxy.port(), EXPIRY).wakeupHealthCheck(Duration.ofMillis(250)));
        KeyColumn lock = lock("silent");
        AtomicLong lost = new AtomicLong();
        Lease keptLease = b.acquire(lock("kept"), "kept alive");
        keptLease.onLost(x -> lost.incrementAndGet());
        Lease held = a.acquire(lock, "holding");
        Future<Optional<Lease>> waits = fixture.submit(() -> b.tryAcquire(lock, "waiting", Duration.ofSeconds(30)));
        awaitTrue(b::wakeupsSubscribed, "never subscribed");
        for (int i = 0; i < 4; i++) {
            long subs = b.wakeupSubscriptions();
            proxy.freezeMarked();
            awaitTrue(() -> b.wakeupSubscriptions() > subs, "the silent subscription was never replaced");
        }
        held.close();
        waits.get(30, TimeUnit.SECONDS).orElseThrow().close();
        assertTrue(keptLease.isValid());
        assertEquals(0, lost.get(), "a lease was lost while the subscription was replaced");
        keptLease.close();
        long t0 = System.nanoTime();
        b.close();
        System.out.printf("silent subscription replaced 4 times; close() took %d ms%n",
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
        awaitTrue(() -> listeners(b) == 0, "the listening thread outlived close()");
    }

    /**
     * The subscription's own Connection (outside the pool) is made with the locker's options: on a server with a
     * password it authenticates (else it could not subscribe), carries the client name, and is the one connection
     * the server counts on the prefix's channel and on the lock's.
     */
    @Test
    void theSubscriptionConnectionAuthenticatesAndIsNamed() throws Exception {
        RedisServer secured = RedisServer.start("--requirepass", "s3cret-pw");
        fixture.closeAfterTest(secured);
        RedisLocker a = fixture.open(builder("a", secured.port(), EXPIRY).password("s3cret-pw"));
        RedisLocker b = fixture.open(builder("b", secured.port(), EXPIRY).password("s3cret-pw")
                .clientName("handoff-b"));
        KeyColumn lock = lock("auth");
        Lease held = a.acquire(lock, "holding");
        Future<Optional<Lease>> waits = fixture.submit(() -> b.tryAcquire(lock, "waiting", Duration.ofSeconds(20)));
        awaitTrue(() -> b.wakeupListening(lock), "never subscribed on a server with a password");
        try (UnifiedJedis on = RedisLocker.builder().node("127.0.0.1", secured.port()).password("s3cret-pw")
                .newClient(1)) {
            String clients = new String((byte[]) on.sendCommand(Protocol.Command.CLIENT, "LIST"),
                    StandardCharsets.UTF_8);
            // two channels: the prefix's (older builds publish there) and the lock's own
            assertTrue(clients.lines().anyMatch(c -> c.contains("name=handoff-b") && c.contains("sub=2")), clients);
            assertEquals(1L, fixture.subscribers(on));
            List<?> lockSubs = (List<?>) on.sendCommand(Protocol.Command.PUBSUB, "NUMSUB".getBytes(),
                    RedisKeys.lockChannel(b.redisKey(lock)));
            assertEquals(1L, lockSubs.get(1), "the lock's channel has this one subscriber");
        }
        held.close();
        assertTrue(waits.get(30, TimeUnit.SECONDS).isPresent());
        assertTrue(b.wakeupMessages() > 0, "the authenticated subscription was not told of the release");
    }
}
