package dev.locker.redis;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.testkit.FreezingProxy;
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

/**
 * Second adversarial review of the Redis handoff (issue 14): the fixes of RedisHandoffReviewTest's four findings
 * (f36d248 subscribed() and the reconnect pause, 49619ad the subscription's health check on a Connection of its own,
 * f5c6878 close() waits until woken waits left their queues, 975c00e a multi-lock waiter refused on one lock leaves the
 * queues of its others) and e0bb533 (the lock path's scripts sent as Rawables, no argument copies). Real redis-server
 * processes only; each finding is a failing test, disabled so the build stays green; the cases checked and found sound
 * run.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class RedisHandoffReview2Test {

    private static final Duration EXPIRY = Duration.ofMillis(1500);

    @RegisterExtension
    static final RedisWaitingFixture fixture = RedisWaitingFixture.ownServer("rhr2");

    private RedisLocker.Builder builder(String name, int port, Duration expiry) {
        return configured(fixture.on(port), name, expiry, Duration.ofSeconds(5));
    }

    private RedisLocker locker(String name, Duration expiry) {
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

    // ---- findings ---------------------------------------------------------------------------------------------

    /**
     * Finding 1 (medium, liveness; made by 975c00e): a multi-lock waiter is starved as long as each of its locks is
     * contended by single-lock waiters. tryAcquireAll({L1, L2}) takes its locks in turn; 975c00e makes it leave the
     * queue of every other lock whenever it is refused one ("it queues there again, at the back"). So: B reaches the
     * front of L2's queue, L2 is released and promised to B (the others are refused -5); B, woken, asks for L1 first,
     * finds it held (L1's stream never lets it go free: each release is handed to the next in L1's queue), queues on
     * L1 and DEQUEUEs from L2, which goes to the next of L2's stream. Later B reaches the front of L1's queue, takes L1,
     * is refused L2 (held, its queue full of the stream), queues at the back of L2 and lets L1 go. B never holds both:
     * it loses its place on a lock it is still asking for each time it queues on the other, so it can only win if one
     * lock happens to be free and unpromised at the moment the other is handed to it, which a busy queue never allows.
     * Before 975c00e, B's entry on L2 stayed (until it lapsed, queueTtl), so L2 was kept for B while it waited out L1's
     * queue (finding 4 of the first review: at the others' expense), and B got both within about one turn of each
     * queue. Expected: a multi-lock waiter keeps (refreshes) its places on all its locks while it waits for any of
     * them, or takes the locks it is promised and holds them while it waits for the rest (as the mediator's ordering
     * allows without deadlock, locks being taken in one order), or some bound on how often it may lose its place.
     * Here: two lockers take turns on each lock, 20 ms holds; B asks for both with 10 s: it is refused.
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
                streams.add(stream(locker("s" + i, expiry), l, stop));
            }
        }
        RedisLocker b = locker("b", expiry);
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
        System.out.printf("finding 1: multi-lock waiter %s after %d ms; the single-lock streams held %s times%n",
                both.isPresent() ? "granted" : "refused", ms, holds);
        assertTrue(both.isPresent(), "the multi-lock waiter was starved for its whole 10 s wait");
    }

    /**
     * Finding 2 (low): close() from an interrupted thread leaves its waiters' queue entries behind, as before f5c6878.
     * awaitWaitsEnded() returns at the first InterruptedException (it restores the flag and gives up), so close()
     * closes the client at once and the woken waiters' DEQUEUE fails (logged at DEBUG): the next waiter of a free lock
     * is refused -5 and, not told, waits for the entry to lapse (queueTtl) plus its pause. A shutdown path closing
     * lockers from interrupted threads is common (ExecutorService.shutdownNow, then close in a task's finally; a
     * shutdown hook after interrupting workers). Expected: wait for the waits (bounded by queueTtl) despite the
     * interrupt, and restore the interrupt flag afterwards.
     */
    @Test
    void closingFromAnInterruptedThreadLeavesNoQueueEntry() throws Exception {
        RedisLocker a = locker("a", EXPIRY);
        RedisLocker b = locker("b", EXPIRY);
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
        System.out.printf("finding 2: closed from an interrupted thread, the waiter %s its queue entry%n",
                left ? "left" : "removed");
        assertFalse(left, "the closed waiter's queue entry stayed (it lapses only after queueTtl)");
    }

    // ---- checked and found sound ------------------------------------------------------------------------------

    /**
     * The Rawable path with a replica (replicas=1: script and WAIT pipelined, runAndWait) after SCRIPT FLUSH, on every
     * call of the lock path: acquire, renew and release each fall back to EVAL, the claim is on the master and the
     * replica, the renewal is acknowledged, the release frees the lock (a second locker takes it at once).
     */
    @Test
    void everyLockPathCallRunsAfterAScriptFlushWithAReplica() throws Exception {
        RedisServerProcess replica = RedisServerProcess.start("--replicaof", "127.0.0.1",
                Integer.toString(fixture.server().port()));
        fixture.closeAfterTest(replica);
        try (UnifiedJedis r = RedisLocker.builder().uri(replica.uri()).newClient(1)) {
            awaitTrue(() -> String.valueOf(r.info("replication")).contains("master_link_status:up"),
                    "the replica never linked");
        }
        RedisLocker a = fixture.open(builder("a", fixture.server().port(), Duration.ofSeconds(5)).replicas(1)
                .replicaTimeout(Duration.ofSeconds(2)));
        RedisLocker b = locker("b", Duration.ofSeconds(5));
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
        RedisLocker a = locker("a", EXPIRY);
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
            try (UnifiedJedis p = RedisLocker.builder().uri(fixture.server().uri()).newClient(1)) {
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
        FreezingProxy proxy = new FreezingProxy("127.0.0.1", fixture.server().port(), "SUBSCRIBE");
        fixture.closeAfterTest(proxy);
        RedisLocker a = locker("a", EXPIRY);
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
     * the server counts on the release channel.
     */
    @Test
    void theSubscriptionConnectionAuthenticatesAndIsNamed() throws Exception {
        RedisServerProcess secured = RedisServerProcess.start("--requirepass", "s3cret-pw");
        fixture.closeAfterTest(secured);
        RedisLocker a = fixture.open(builder("a", secured.port(), EXPIRY).password("s3cret-pw"));
        RedisLocker b = fixture.open(builder("b", secured.port(), EXPIRY).password("s3cret-pw")
                .clientName("review2-b"));
        KeyColumn lock = lock("auth");
        Lease held = a.acquire(lock, "holding");
        Future<Optional<Lease>> waits = fixture.submit(() -> b.tryAcquire(lock, "waiting", Duration.ofSeconds(20)));
        awaitTrue(b::wakeupsSubscribed, "never subscribed on a server with a password");
        try (UnifiedJedis on = RedisLocker.builder().node("127.0.0.1", secured.port()).password("s3cret-pw")
                .newClient(1)) {
            String clients = new String((byte[]) on.sendCommand(Protocol.Command.CLIENT, "LIST"),
                    StandardCharsets.UTF_8);
            assertTrue(clients.lines().anyMatch(c -> c.contains("name=review2-b") && c.contains("sub=1")), clients);
            assertEquals(1L, fixture.subscribers(on));
        }
        held.close();
        assertTrue(waits.get(30, TimeUnit.SECONDS).isPresent());
        assertTrue(b.wakeupMessages() > 0, "the authenticated subscription was not told of the release");
    }
}
