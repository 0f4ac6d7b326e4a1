package dev.locker.redis;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockOwner;
import dev.locker.api.LockerConfig;
import dev.locker.api.TemporaryLockingException;
import dev.locker.testkit.RedisServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.UnifiedJedis;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

import static dev.locker.redis.RedisWaitingFixture.lock;
import static dev.locker.redis.RedisWaitingFixture.withRid;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Owner records of the compact layout are written, read, restored and expired without failing or misnaming a lock. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RedisOwnerRecordTest {

    @RegisterExtension
    static final RedisWaitingFixture fixture = RedisWaitingFixture.onTarget("crv");

    private final String prefix = fixture.prefix();

    private RedisServer.Cluster cluster;

    /** The class's Cluster, started on first use: each test pauses a master only within its own try-finally. */
    private synchronized RedisServer.Cluster cluster() {
        if (cluster == null) {
            cluster = RedisServer.startCluster();
        }
        return cluster;
    }

    @AfterAll
    void stopCluster() {
        if (cluster != null) {
            cluster.close();
        }
    }

    private static UnifiedJedis admin() {
        return fixture.admin();
    }

    private RedisLocker open(RedisLockerBuilder b, String rid) {
        return fixture.open(withRid(b, rid, Duration.ofSeconds(30)));
    }

    private RedisLocker locker(String rid) {
        return open(fixture.onTarget(), rid);
    }




    /**
     * The owner record {@code <prefix>{}o<instance>} has an empty hash tag, so it lives on a master of its own.
     * Owner metadata is display-only, so an acquire on a healthy master succeeds while the record's master is
     * unavailable.
     *
     * <p>The record's master is made unavailable with CLIENT PAUSE WRITE (scripts pause too): the cluster stays
     * "ok", and the lock's own master answers normally.
     */
    @Test
    void inAClusterAnAcquireSucceedsWhileTheOwnerRecordsMasterIsUnavailable() {
        Assumptions.assumeFalse(RedisTarget.isExternal(), "runs its own cluster");
        RedisServer.Cluster cluster = cluster();
        RedisLocker a = open(RedisLocker.builder().uri(cluster.uri()).keyPrefix(prefix)
                .timeout(Duration.ofMillis(500)), "clustered");
        KeyColumn warm = lock("warm");
        a.acquire(warm, "first").close(); // writes the owner record
        String instance = new String(a.claimField(), 1, 16, StandardCharsets.US_ASCII);
        String ownerKey = prefix + "{}o" + instance;
        RedisServer ownerNode = null;
        for (RedisServer n : cluster.nodes()) {
            if (n.cli("EXISTS", ownerKey).trim().equals("1")) {
                ownerNode = n;
            }
        }
        assertNotNull(ownerNode, "the owner record " + ownerKey + " is on one master");
        // a lock whose slot is on another master
        KeyColumn lock = null;
        for (int i = 0; lock == null; i++) {
            KeyColumn candidate = lock("elsewhere" + i);
            a.acquire(candidate, "first").close(); // a known pair: no owner write
            String k = new String(a.redisKey(candidate), StandardCharsets.UTF_8);
            if (!ownerNode.cli("EXISTS", k).trim().equals("1")) {
                lock = candidate;
            }
        }
        ownerNode.cli("CLIENT", "PAUSE", "10000", "WRITE"); // the owner record's master: failing over, say
        try {
            KeyColumn healthy = lock;
            a.acquire(healthy, "first").close(); // control: a known pair, no owner write: the lock's master is fine
            try (Lease l = a.acquire(healthy, "a reason this locker has not used yet")) {
                assertTrue(l.fencingToken() > 0);
            }
        } finally {
            ownerNode.cli("CLIENT", "UNPAUSE");
        }
    }

    /**
     * The answers that name a holder (holder(), a contender's "lock is held") read the holder's owner record from
     * another master. While that master is unavailable they still answer, naming the holder by its instance id
     * only.
     */
    @Test
    void inAClusterHolderAnswersWhileTheHoldersOwnerRecordIsUnreachable() {
        Assumptions.assumeFalse(RedisTarget.isExternal(), "runs its own cluster");
        RedisServer.Cluster cluster = cluster();
        RedisLocker a = open(RedisLocker.builder().uri(cluster.uri()).keyPrefix(prefix)
                .timeout(Duration.ofMillis(500)), "holder");
        RedisLocker b = open(RedisLocker.builder().uri(cluster.uri()).keyPrefix(prefix)
                .timeout(Duration.ofMillis(500)), "asker");
        a.acquire(lock("warm"), "held").close(); // writes a's owner record
        b.acquire(lock("warm"), "contender").close(); // and b's: b writes nothing below
        String ownerKey = prefix + "{}o" + new String(a.claimField(), 1, 16, StandardCharsets.US_ASCII);
        RedisServer ownerNode = null;
        for (RedisServer n : cluster.nodes()) {
            if (n.cli("EXISTS", ownerKey).trim().equals("1")) {
                ownerNode = n;
            }
        }
        assertNotNull(ownerNode);
        KeyColumn lock = null;
        for (int i = 0; lock == null; i++) {
            KeyColumn candidate = lock("elsewhere" + i);
            a.acquire(candidate, "held").close();
            if (!ownerNode.cli("EXISTS", new String(a.redisKey(candidate), StandardCharsets.UTF_8)).trim()
                    .equals("1")) {
                lock = candidate;
            }
        }
        try (Lease l = a.acquire(lock, "held")) {
            ownerNode.cli("CLIENT", "PAUSE", "10000", "ALL"); // the owner record's master: failing over, say
            try {
                KeyColumn held = lock;
                String holderAnswer;
                try {
                    holderAnswer = "present: " + b.holder(held).isPresent();
                } catch (RuntimeException e) {
                    holderAnswer = "failed: " + e;
                }
                String contention;
                try {
                    b.acquire(held, "contender").close();
                    contention = "granted (two holders!)";
                } catch (TemporaryLockingException e) {
                    contention = e.holder() != null ? "held by " + e.holder().rid() : "no holder named: " + e;
                } catch (RuntimeException e) {
                    contention = "failed: " + e;
                }
                assertEquals("present: true", holderAnswer, "holder(): the lock's master answers: it is held (contention: "
                        + contention + ")");
                assertTrue(contention.startsWith("held by "), "contention names a holder (its instance at "
                        + "least): " + contention);
            } finally {
                ownerNode.cli("CLIENT", "UNPAUSE");
            }
        }
    }

    /**
     * A renewal also refreshes the owner record once a quarter of its TTL has passed, on the record's own master
     * in Cluster mode. While that master is unavailable, renewals go on and the lease is kept. Six hours of
     * holding pass on a shifted clock.
     */
    @Test
    void inAClusterARenewalKeepsItsLeaseWhileTheOwnerRecordsMasterIsUnavailable() throws Exception {
        Assumptions.assumeFalse(RedisTarget.isExternal(), "runs its own cluster");
        OffsetClock clock = new OffsetClock();
        RedisServer.Cluster cluster = cluster();
        RedisLocker a = RedisLocker.builder().uri(cluster.uri()).keyPrefix(prefix)
                .config(LockerConfig.builder().rid("renewer").expiry(Duration.ofSeconds(3)).timeSource(clock)
                        .build())
                .restartGuard(Duration.ZERO).build();
        fixture.adopt(a);
        a.acquire(lock("warm"), "job").close(); // writes the owner record: due again 6 h (locker time) from now
        String ownerKey = prefix + "{}o" + new String(a.claimField(), 1, 16, StandardCharsets.US_ASCII);
        RedisServer ownerNode = null;
        for (RedisServer n : cluster.nodes()) {
            if (n.cli("EXISTS", ownerKey).trim().equals("1")) {
                ownerNode = n;
            }
        }
        assertNotNull(ownerNode);
        KeyColumn lock = null;
        for (int i = 0; lock == null; i++) {
            KeyColumn candidate = lock("elsewhere" + i);
            a.acquire(candidate, "job").close();
            if (!ownerNode.cli("EXISTS", new String(a.redisKey(candidate), StandardCharsets.UTF_8)).trim()
                    .equals("1")) {
                lock = candidate;
            }
        }
        dev.locker.api.LockTransaction tx = new dev.locker.api.LockTransaction("job");
        a.writeLock(lock, tx);
        a.checkLocks(tx);
        long step = Duration.ofSeconds(2).toNanos();
        long almostDue = Duration.ofHours(6).minusMinutes(1).toNanos();
        while (clock.offset.get() < almostDue) { // a service holding its lease for six hours
            clock.offset.addAndGet(step);
            a.renewLocks(tx);
        }
        ownerNode.cli("CLIENT", "PAUSE", "30000", "WRITE"); // another master: failing over, say
        try {
            for (int i = 0; i < 60; i++) { // two more minutes of locker time: the record becomes due
                clock.offset.addAndGet(step);
                a.renewLocks(tx);
            }
            a.checkLocks(tx);
            a.deleteLocks(tx);
        } finally {
            ownerNode.cli("CLIENT", "UNPAUSE");
        }
    }

    /** Real time plus an offset the test moves forward: a clock that lets real time pass while the test skips hours. */
    private static final class OffsetClock implements dev.locker.api.TimeSource {
        final java.util.concurrent.atomic.AtomicLong offset = new java.util.concurrent.atomic.AtomicLong();

        @Override
        public java.time.Instant now() {
            return java.time.Instant.now().plusNanos(offset.get());
        }

        @Override
        public long nanoTime() {
            return System.nanoTime() + offset.get();
        }

        @Override
        public void sleep(Duration d) throws InterruptedException {
            if (!d.isNegative() && !d.isZero()) {
                Thread.sleep(Math.max(1, d.toMillis()));
            }
        }
    }


    /**
     * A (thread, reason) pair gets a number in the owner record, and its write may time out yet still run on the
     * server later. The number is never given to another pair, so a reader that cached the record names the real
     * pair.
     */
    @Test
    void aTimedOutOwnerWriteNeverLetsANumberNameTwoPairs() throws Exception {
        Assumptions.assumeFalse(RedisTarget.isExternal(), "keeps the server busy");
        RedisLocker a = open(fixture.onTarget().socketTimeout(Duration.ofMillis(300)), "writer");
        RedisLocker reader = locker("reader");
        KeyColumn held = lock("held");
        try (Lease l = a.acquire(held, "pair zero")) { // record: 0 = pair zero
            AtomicReference<Throwable> busyFailed = new AtomicReference<>();
            Thread busy = new Thread(() -> {
                try (UnifiedJedis c = fixture.target().admin()) {
                    c.eval("local function us() local t = redis.call('TIME') return t[1] * 1000000 + t[2] end "
                            + "local s = us() while us() < s + 1200000 do end return 1"); // 1.2 s
                } catch (Throwable e) {
                    busyFailed.set(e);
                }
            }, "busy-server");
            busy.start();
            Thread.sleep(200); // the loop runs
            assertThrows(RuntimeException.class, () -> a.acquire(lock("other"), "the lost pair"),
                    "the owner write of the new pair times out");
            busy.join();
            assertEquals(null, busyFailed.get());
            // the server ran the timed-out write after the loop: number 1 is "the lost pair" there
            assertTrue(reader.holder(held).isPresent()); // the reader reads (and caches) the whole record
            KeyColumn next = lock("next");
            try (Lease n = a.acquire(next, "the real pair")) { // a new pair: gets number 1 again
                assertEquals("the real pair", reader.holder(next).orElseThrow().why(),
                        "the reader names the holder's reason");
            }
        }
    }


    /**
     * A server restored from an older snapshot has the owner record without the pairs added since. The acquire
     * script notices the missing pair and the record is written again, so readers name the holder's reason.
     */
    @Test
    void aRecordRestoredWithoutItsNewerPairsIsWrittenAgain() throws Exception {
        Assumptions.assumeFalse(RedisTarget.isExternal(), "restarts its own server");
        RedisServer server = RedisServer.start();
        try {
            RedisLockerBuilder on = RedisLocker.builder().uri(server.address()).keyPrefix(prefix);
            RedisLocker a = open(on, "restarted");
            a.acquire(lock("first"), "the first reason").close(); // record: 0
            server.cli("SAVE"); // the snapshot the server will restart from
            a.acquire(lock("second"), "the second reason").close(); // record: 1, not in the snapshot
            server.restart(); // kill -9, then loads dump.rdb: the record without pair 1
            RedisLocker reader = open(RedisLocker.builder().uri(server.address()).keyPrefix(prefix), "reader");
            KeyColumn lock = lock("third");
            Thread.sleep(1_100); // an acquire looks for its record's newest pair at most once a second
            try (Lease l = a.acquire(lock, "the second reason")) {
                a.awaitOwnerRecord(); // the acquire found pair 1 missing: the record is written again
                LockOwner seen = reader.holder(lock).orElseThrow();
                assertEquals("the second reason", seen.why(), "the holder's reason (seen: " + seen + ")");
            }
        } finally {
            server.close();
        }
    }


    /**
     * A thread name ending in a high surrogate and a reason starting with a low surrogate join into one code
     * point. Other readers still show the thread and reason as they were claimed: Java allows any String for
     * either.
     */
    @Test
    void aThreadNameAndReasonThatJoinIntoOneCodePointAreShownAsTheyWereClaimed() throws Exception {
        RedisLocker a = locker("surrogates");
        RedisLocker reader = locker("reader");
        KeyColumn lock = lock("surrogates");
        String thread = "worker-\uD83D";
        String why = "\uDE00 nightly";
        AtomicReference<Throwable> failed = new AtomicReference<>();
        Thread t = new Thread(() -> {
            try (Lease l = a.acquire(lock, why)) {
                LockOwner seen = reader.holder(lock).orElseThrow();
                LockOwner asClaimed = LockOwner.fromBytes(new LockOwner(a.rid(), "", 0, thread, why, null).toBytes());
                assertEquals(asClaimed.thread(), seen.thread(), "thread");
                assertEquals(asClaimed.why(), seen.why(), "reason");
            } catch (Throwable e) {
                failed.set(e);
            }
        }, thread);
        t.start();
        t.join();
        if (failed.get() != null) {
            throw new AssertionError(failed.get());
        }
    }

    private String encoding(byte[] key) {
        return new String((byte[]) admin().sendCommand(Protocol.Command.OBJECT,
                "ENCODING".getBytes(StandardCharsets.US_ASCII), key), StandardCharsets.US_ASCII);
    }

    private static String ascii(byte[] b) {
        return b == null ? "(none)" : new String(b, StandardCharsets.ISO_8859_1).replace("\n", "\\n");
    }


    /**
     * close() racing the owner-record writer leaves no record that outlives the closed locker by a day. A write
     * handed to the writer before close lives no longer than 2 x expiry + 1 s, as the close allows.
     */
    @Test
    void anOwnerRecordWrittenWhileItsLockerClosesLivesNoLongerThanTheCloseAllows() throws Exception {
        CountDownLatch taken = new CountDownLatch(1);
        CountDownLatch go = new CountDownLatch(1);
        RedisListing.Retries gated = new RedisListing.Retries() {
            @Override
            public <T> T run(Supplier<T> op) {
                taken.countDown();
                try {
                    go.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return op.get();
            }
        };
        String instance = "00c1053d00000001";
        RedisKeys keys = new RedisKeys(prefix);
        Duration expiry = Duration.ofSeconds(30);
        RedisOwners owners = new RedisOwners(admin(), keys, gated, System::nanoTime, instance, "short-lived", "host", 7,
                expiry);
        owners.claimPart(new LockOwner("short-lived", "host", 7, "main", "a short job", null)); // the first acquire
        assertTrue(taken.await(30, TimeUnit.SECONDS), "the writer took the job");
        owners.close(); // the job is done: the record should live at most 2 x expiry + 1 s more
        go.countDown();
        owners.awaitWrites();
        long pttl = admin().pttl(keys.ownerKey(instance));
        long allowed = expiry.multipliedBy(2).plusSeconds(1).toMillis();
        assertTrue(pttl <= allowed, "the closed locker's owner record lives " + pttl + " ms more (allowed: " + allowed
                + " ms)");
    }

    /**
     * A claim with a lease's longer expiry makes the owner record live four such expiries. A shorter claim after it
     * never cuts that back, and a close leaves the record twice the longest expiry and a second.
     */
    @Test
    void anOwnerRecordLivesFourTimesTheLongestExpiryItsClaimsUsed() throws Exception {
        RedisListing.Retries direct = new RedisListing.Retries() {
            @Override
            public <T> T run(Supplier<T> op) {
                return op.get();
            }
        };
        String instance = "00c1053d00000002";
        RedisKeys keys = new RedisKeys(prefix);
        RedisOwners owners = new RedisOwners(admin(), keys, direct, System::nanoTime, instance, "long-lived", "host", 7,
                Duration.ofSeconds(30));
        Duration longest = Duration.ofDays(2);
        owners.covers(longest); // a lease of two days
        owners.covers(Duration.ofHours(1)); // then a shorter one
        owners.claimPart(new LockOwner("long-lived", "host", 7, "main", "a long job", null)); // writes the record
        owners.awaitWrites();
        long pttl = admin().pttl(keys.ownerKey(instance));
        long four = longest.multipliedBy(4).toMillis();
        assertTrue(pttl > four - 60_000 && pttl <= four, "the owner record lives " + pttl + " ms (four expiries: "
                + four + " ms)");
        owners.close();
        long afterClose = admin().pttl(keys.ownerKey(instance));
        long twice = longest.multipliedBy(2).plusSeconds(1).toMillis();
        assertTrue(afterClose > twice - 60_000 && afterClose <= twice, "the closed locker's owner record lives "
                + afterClose + " ms (twice the longest expiry and a second: " + twice + " ms)");
    }


    /**
     * A locker on a client the caller manages (a plain pooled UnifiedJedis, or a Sentinel client) also notices a
     * record restored without its newer pairs. It writes the record again, as the locker's own client does.
     */
    @Test
    void aRecordRestoredWithoutItsNewerPairsIsWrittenAgainWithACallerManagedClient() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeFalse(RedisTarget.isExternal(), "restarts its own server");
        RedisServer server = RedisServer.start();
        try (UnifiedJedis shared = new UnifiedJedis(
                new redis.clients.jedis.providers.PooledConnectionProvider(
                        new redis.clients.jedis.HostAndPort("127.0.0.1", server.port())), 3, Duration.ofSeconds(10))) {
            RedisLocker a = RedisLocker.builder().client(shared).keyPrefix(prefix)
                    .config(LockerConfig.builder().rid("restarted").expiry(Duration.ofSeconds(30)).build())
                    .restartGuard(Duration.ZERO).build();
            fixture.adopt(a);
            a.acquire(lock("first"), "the first reason").close(); // record: 0
            a.awaitOwnerRecord();
            server.cli("SAVE"); // the snapshot the server will restart from
            a.acquire(lock("second"), "the second reason").close(); // record: 1, not in the snapshot
            a.awaitOwnerRecord();
            server.restart(); // kill -9, then loads dump.rdb: the record without pair 1
            for (int i = 0; i < 3; i++) { // the shared pool's idle connections died with the server
                try {
                    shared.ping();
                    break;
                } catch (RuntimeException e) {
                    // next connection
                }
            }
            RedisLocker reader = RedisLocker.builder().uri(server.address()).keyPrefix(prefix)
                    .config(LockerConfig.builder().rid("reader").expiry(Duration.ofSeconds(30)).build())
                    .restartGuard(Duration.ZERO).build();
            fixture.adopt(reader);
            KeyColumn lock = lock("third");
            Thread.sleep(1_100); // an acquire looks for its record's newest pair at most once a second
            try (Lease l = a.acquire(lock, "the second reason")) {
                a.awaitOwnerRecord();
                try (Lease m = a.acquire(lock("fourth"), "the second reason")) { // and once more
                    a.awaitOwnerRecord();
                }
                LockOwner seen = reader.holder(lock).orElseThrow();
                assertEquals("the second reason", seen.why(), "the holder's reason (seen: " + seen + ")");
            }
        } finally {
            fixture.closeLockers();
            server.close();
        }
    }


    /**
     * A new pair does not rewrite the whole owner record when the record is full: a pair past MAX_REFS goes inline
     * in the claim. A locker that claims with a new reason on every acquire thus causes a bounded number of
     * whole-record writes.
     */
    @Test
    void aFullOwnerRecordIsNotRewrittenForPairsItCannotHold() throws Exception {
        java.util.concurrent.atomic.AtomicInteger writes = new java.util.concurrent.atomic.AtomicInteger();
        RedisListing.Retries counting = new RedisListing.Retries() {
            @Override
            public <T> T run(Supplier<T> op) {
                writes.incrementAndGet();
                return op.get();
            }
        };
        String instance = "00f0110000000002";
        RedisKeys keys = new RedisKeys(prefix);
        RedisOwners owners = new RedisOwners(admin(), keys, counting, System::nanoTime, instance, "reasons", "host", 7,
                Duration.ofSeconds(30));
        for (int i = 0; i < RedisOwners.MAX_REFS; i++) { // a reason per acquire
            owners.claimPart(new LockOwner("reasons", "host", 7, "worker", "order " + i, null));
            owners.awaitWrites();
        }
        assertEquals(RedisOwners.MAX_REFS + 3, admin().hlen(keys.ownerKey(instance)), "the record is full");
        int before = writes.get();
        for (int i = 0; i < 100; i++) { // the next 100 acquires, each with a reason of its own
            byte[] part = owners.claimPart(new LockOwner("reasons", "host", 7, "worker", "order " + (5000 + i), null));
            assertEquals('=', part[0], "a pair past MAX_REFS goes inline");
            owners.awaitWrites();
        }
        int useless = writes.get() - before;
        owners.close();
        admin().del(keys.ownerKey(instance));
        assertEquals(0, useless, "whole-record writes (" + (RedisOwners.MAX_REFS + 3) + " fields each) started by "
                + "100 acquires whose pairs the full record cannot take");
    }
}
