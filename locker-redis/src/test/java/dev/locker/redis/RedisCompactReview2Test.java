package dev.locker.redis;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockOwner;
import dev.locker.api.LockerConfig;
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
import java.util.function.Supplier;

import static dev.locker.redis.RedisWaitingFixture.lock;
import static dev.locker.redis.RedisWaitingFixture.withRid;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Second adversarial review of the compact claim layout (issue 14), after commit 2b7834f fixed the first review's
 * findings (RedisCompactReviewTest) and 1fab3af cut server calls (one HGETALL per release, field t dropped only when
 * present, the owner record checked at most once a second). Each test is a finding: it fails on the code as reviewed
 * and is disabled so that the build stays green. Real redis-server processes only.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RedisCompactReview2Test {

    @RegisterExtension
    static final RedisWaitingFixture fixture = RedisWaitingFixture.onTarget("crv2");

    private final String prefix = fixture.prefix();

    private static UnifiedJedis admin() {
        return fixture.admin();
    }

    private RedisLocker locker(String rid) {
        return fixture.open(withRid(fixture.onTarget(), rid, Duration.ofSeconds(30)));
    }

    private String encoding(byte[] key) {
        return new String((byte[]) admin().sendCommand(Protocol.Command.OBJECT,
                "ENCODING".getBytes(StandardCharsets.US_ASCII), key), StandardCharsets.US_ASCII);
    }

    private static String ascii(byte[] b) {
        return b == null ? "(none)" : new String(b, StandardCharsets.ISO_8859_1).replace("\n", "\\n");
    }

    // ---- finding 1 ------------------------------------------------------------------------------------------------

    /*
     * Finding 1 (memory, steady state: a held lock's hash is a hashtable, not the ~190-byte listpack): RedisOwners.
     * claimPart numbers a new (thread, reason) pair and starts writing the owner record in the background, and until
     * that write has succeeded it returns the owner IN FULL ("=" + LockOwner.toBytes(), well over
     * hash-max-listpack-value = 64 bytes). Every locker starts with an empty record, so the FIRST acquire of every
     * locker (every process start, every new thread name or reason) writes an inline claim, and that one value converts
     * the lock's hash to a hashtable; Redis never converts a hash back. renew.lua then rewrites the claim with the same
     * owner part (claim_value(..., owner)), so a lease taken at start-up and kept alive for days (the leader lock of a
     * service, the typical long-held lock) is a hashtable for all of its life although the record has long been
     * written; and since the key outlives the release (field t, the TTL of the last grant), the next holder's claim
     * lands in the same hashtable. Finding 7 of the first review was fixed for queue entries only ("the same goes for
     * an owner stored in full in a claim" was left). Memory only, but it is the figure the compact layout exists for,
     * and it is hit by exactly the locks that are held longest. Fixes: write the record synchronously before the first
     * claim that references it (once per locker and pair), or let a renewal swap an inline owner for the reference
     * once it is published (it would still not undo the conversion), or keep inline owners out of the lock's hash.
     */
    @Test
    void aLockTakenByAFreshLockerAndKeptAliveIsACompactListpack() throws Exception {
        RedisLocker a = locker("service-leader");
        KeyColumn leader = lock("leader");
        byte[] key = a.redisKey(leader);
        String held;
        String heldEncoding;
        try (Lease l = a.acquire(leader, "leading")) { // the locker's first acquire: its record is not written yet
            a.awaitOwnerRecord(); // the record is on the server now
            l.renew(); // a keep-alive renewal, long after the record was written
            held = ascii(admin().hget(key, a.claimField()));
            heldEncoding = encoding(key);
        }
        // the next holder (same locker and pair: its reference is published) in the same key
        try (Lease again = a.acquire(leader, "leading")) {
            assertEquals(1, admin().hlen(key), "one field: the claim");
            String encoding = encoding(key);
            assertTrue(heldEncoding.equals("listpack") && encoding.equals("listpack"),
                    "a held lock's hash is the compact listpack (while held and renewed: " + heldEncoding
                            + ", claim " + held + "; held again: " + encoding + ", claim "
                            + ascii(admin().hget(key, a.claimField())) + ")");
        }
    }

    // ---- finding 2 ------------------------------------------------------------------------------------------------

    /*
     * Finding 2 (close() racing the owner-record writer: a record that outlives its locker by a day, written after
     * close): RedisOwners.close() sets closed and shortens the record's life with one PEXPIRE, but it neither waits for
     * nor cancels a write already handed to the WRITER pool. writeAll() then runs owner.lua, which HSETs the record
     * (creating it if the PEXPIRE came first: a PEXPIRE on a missing key does nothing) and PEXPIREs it to the full TTL
     * (max(4 x expiry, 1 day)). So the record of a closed locker lives a day instead of 2 x expiry + 1 s, and the
     * write happens after close() returned. The window is the common case of a short-lived process (a CLI run, a batch
     * job, a test): its first acquire starts the write, it does a short job, releases and closes; the writer thread of
     * the cached pool is created on demand and its write travels on another pooled connection than the close's PEXPIRE.
     * With a client the caller manages (Builder.client) the pool stays open after close, so the late write always
     * lands. One small hash per locker instance for a day: with lockers opened per request or per job, unbounded growth
     * of dead records (memory, and the listing's SCAN walks them). The gate below only holds the writer thread back
     * between taking the job and sending it, as a busy machine or a slow thread start does; the server is real.
     * Measured without the gate (a fresh RedisLocker: acquire, release, close, on loopback, 40 runs each): the record
     * was left with its 1-day TTL in 2 of 40 runs with the locker's own client and 1 of 40 with a caller-managed one.
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

    // ---- finding 3 ------------------------------------------------------------------------------------------------

    /*
     * Finding 3 (the first review's finding 4 comes back with any client that is not a RedisClient): RedisLocker
     * decides "standalone" by client instanceof RedisClient, and only then passes the owner record to the acquire
     * script (KEYS[3]) to learn whether its newest pair is still on the server. A locker built with a client the caller
     * manages that is another UnifiedJedis, above all Jedis 8's RedisSentinelClient (extends UnifiedJedis, not
     * RedisClient: the usual highly-available single-master deployment) or a plain pooled UnifiedJedis, never looks.
     * So after a restart from an older snapshot, or a Sentinel failover to a replica that had not yet received the
     * latest owner write (replication is asynchronous: the claim, acknowledged later on the same master, may well have
     * reached it), claims keep referencing pairs the server lacks, nothing rewrites the record for a quarter of its TTL
     * (6 hours at least), and every other reader names the holder "(unknown)". Sentinel is exactly the topology where
     * this happens at every failover, and its client has one master (one slot problem does not exist there), so the
     * check could run as on a RedisClient; the restart guard's marker key is skipped for it too (INFO on every grant).
     * The test is RedisCompactReviewTest's finding 4 with a plain pooled UnifiedJedis (new UnifiedJedis(new PooledConnectionProvider(...), ...)); it passes with the locker's own client.
     */
    @Test
    void aRecordRestoredWithoutItsNewerPairsIsWrittenAgainWithACallerManagedClient() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeFalse(RedisTarget.isExternal(), "restarts its own server");
        RedisServerProcess server = RedisServerProcess.start();
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
            RedisLocker reader = RedisLocker.builder().uri(server.uri()).keyPrefix(prefix)
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

    // ---- finding 4 ------------------------------------------------------------------------------------------------

    /*
     * Finding 4 (server load: the whole owner record is rewritten for every acquire with an unseen pair, forever once
     * it is full): RedisOwners.claimPart sets due = true whenever the pair has no number yet, and writeAll always sends
     * the WHOLE record (every entry, up to MAX_REFS = 1024, plus r, h, p). Two consequences for a locker that claims with
     * a reason per acquire ("order 4711", "run 2026-11-22", the first review's example of more than MAX_REFS pairs):
     * (a) reaching 1024 pairs costs ~525,000 field writes (1 + 2 + ... + 1024) instead of 1024; (b) once the record is
     * full, number() gives no number, yet due stays true, so EVERY further acquire with a new pair starts a rewrite of all
     * 1027 fields (tens of KB per acquire at 30-60 bytes an entry) that cannot add anything: the pair goes inline anyway.
     * The writer runs back to back as long as such acquires come, one full-record HSET after another on the master of
     * the record, for the locker's lifetime. Before 2b7834f a new pair wrote only its own field. A write is needed only
     * when a number was just given, the record is stale, or a quarter of its TTL has passed; and writing only the
     * entries the server is not known to have (published..n) would keep it linear. The server is real; the Retries
     * hook only counts the writes and the fields they carry.
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
