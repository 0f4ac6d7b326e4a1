package dev.locker.redis;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockOwner;
import dev.locker.api.LockerConfig;
import dev.locker.api.TemporaryLockingException;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import redis.clients.jedis.UnifiedJedis;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static dev.locker.redis.RedisWaitingFixture.lock;
import static dev.locker.redis.RedisWaitingFixture.withRid;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Adversarial review of the compact claim layout (issue 14: field {@code "c" + instance}, value
 * {@code "<written> <expms> <tokdelta> <counter> <owner part>"}, owner records {@code <prefix>{}o<instance>}, field
 * {@code t} deleted on a grant and written again when a claim leaves). Each test is a finding: it fails on the code as
 * reviewed, and is disabled so that the build stays green. Real redis-server processes only.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RedisCompactReviewTest {

    @RegisterExtension
    static final RedisWaitingFixture fixture = RedisWaitingFixture.onTarget("crv");

    private final String prefix = fixture.prefix();

    private static UnifiedJedis admin() {
        return fixture.admin();
    }

    private RedisLocker open(RedisLocker.Builder b, String rid) {
        return fixture.open(withRid(b, rid, Duration.ofSeconds(30)));
    }

    private RedisLocker locker(String rid) {
        return open(fixture.onTarget(), rid);
    }

    private long serverMicros() {
        Object t = admin().eval("local t = redis.call('TIME') return tonumber(t[1]) * 1000000 + tonumber(t[2])");
        return (Long) t;
    }

    // ---- finding 1 ------------------------------------------------------------------------------------------------

    /*
     * Finding 1 (fencing token goes backwards): withdraw.lua (and acquire.lua's two "never leave our claim behind"
     * paths, lines 29 and 37) call keep_token(s, tok) with the token of the claim they are about to HDEL. But scan()
     * already counts every claim's token, that one included, into s.last; keep_token writes field "t" only when
     * tok > s.last, which is never true for the claim being removed. So the claim leaves the hash and its token with
     * it. And because the grant of that very claim had deleted field "t" (which held the PREVIOUS holder's token),
     * after the withdrawal nothing in the hash remembers any token issued so far: the next grant takes max(0 + 1, TIME),
     * i.e. the server's clock alone. The old layout wrote "t" on every grant and never removed it, so tokens stayed
     * last + 1 whatever the clock did.
     *
     * It matters whenever the last token issued is ahead of the server's clock, which is exactly what the "t" field
     * is there for: the server's clock stepped back (NTP correction, VM snapshot restore), or a failover promoted a
     * replica whose clock is behind the old master's (tokens are microseconds, so a few ms of skew suffice). Then a
     * holder that was fenced with token P is followed by a holder with a token < P: a fenced storage accepts the old,
     * possibly still-running holder's writes and refuses the new holder's, the very thing fencing tokens exist to
     * prevent. The withdrawal is an everyday event (acquire timed out, connection lost after sending, too few replica
     * acknowledgements), so only the clock condition is rare.
     *
     * libfaketime cannot be preloaded into this redis-server build (it clashes with jemalloc's clock_gettime at
     * start), so the test writes the state a clock step back leaves: field "t" an hour ahead of TIME (every token the
     * lock issued before the step is ahead of the clock). Withdrawals are provoked as in RedisLockerTest: replicas=1
     * on a server without replicas, so WAIT answers 0 and the granted claim is withdrawn.
     */
    @Test
    void aWithdrawnGrantForgetsTheLastTokenAndTokensGoBackwardsAfterAClockStepBack() {
        RedisLocker a = locker("holder");
        RedisLocker unacknowledged = open(fixture.onTarget().replicas(1).replicaTimeout(Duration.ofMillis(10)),
                "unacknowledged");
        KeyColumn lock = lock("withdrawn");
        byte[] key = a.redisKey(lock);
        // the lock's hash as the server's clock stepping back an hour leaves it: its last token is ahead of TIME
        admin().hset(key, "t".getBytes(StandardCharsets.US_ASCII),
                Long.toString(serverMicros() + 3_600_000_000L).getBytes(StandardCharsets.US_ASCII));
        admin().pexpire(key, 600_000);
        long previous;
        try (Lease l = a.acquire(lock, "fenced writer")) {
            previous = l.fencingToken(); // last + 1, as it must be
        }
        assertThrows(TemporaryLockingException.class, () -> unacknowledged.acquire(lock, "granted, then withdrawn"));
        byte[] t = admin().hget(key, "t".getBytes(StandardCharsets.US_ASCII));
        try (Lease l = a.acquire(lock, "next writer")) {
            assertTrue(l.fencingToken() > previous, "the token went backwards: " + l.fencingToken() + " after "
                    + previous + " (field t after the withdrawal: "
                    + (t == null ? "absent" : new String(t, StandardCharsets.US_ASCII)) + ")");
        }
    }

    // ---- finding 2 ------------------------------------------------------------------------------------------------

    /*
     * Finding 2 (availability, Cluster mode): the owner record <prefix>{}o<instance> has an empty hash tag, so it lives
     * in a slot of its own, on whichever master that is. RedisOwners.claimPart writes to it synchronously, inside
     * writeLock and before the acquire script, whenever the (thread, reason) pair is new or a quarter of the record's
     * TTL has passed, and a failed write fails the acquire. So an acquire of a lock whose master is perfectly healthy
     * fails because ANOTHER master (the owner record's) is unreachable, failing over, or paused. Before, an acquire
     * touched only its lock's slot. In practice: while one master of a cluster is down, every freshly started process
     * (and every thread pool's new thread, every new reason) whose owner record hashes to that master cannot take any
     * lock at all, on any master. Owner metadata is documented as display-only ("no decision of the protocol reads
     * it"), so its write should never be able to fail an acquire (write it best-effort, or asynchronously, or inline
     * the owner when the record cannot be written).
     *
     * The owner record's master is made unavailable with CLIENT PAUSE WRITE (scripts are paused too): the cluster stays
     * "ok", the lock's own master answers normally.
     */
    @Test
    void inAClusterAnAcquireFailsWhenTheOwnerRecordsMasterIsUnavailable() {
        Assumptions.assumeFalse(RedisTarget.isExternal(), "runs its own cluster");
        try (RedisClusterProcess cluster = RedisClusterProcess.start()) {
            RedisLocker a = open(RedisLocker.builder().uri(cluster.uri()).keyPrefix(prefix)
                    .timeout(Duration.ofMillis(500)), "clustered");
            KeyColumn warm = lock("warm");
            a.acquire(warm, "first").close(); // writes the owner record
            String instance = new String(a.claimField(), 1, 16, StandardCharsets.US_ASCII);
            String ownerKey = prefix + "{}o" + instance;
            RedisServerProcess ownerNode = null;
            for (RedisServerProcess n : cluster.nodes()) {
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
    }

    /*
     * Finding 2b (the same coupling on the read side, Cluster mode): the answers that name a holder (holder(), the
     * "lock is held" TemporaryLockingException of an acquire, listings) now read the holder's owner record,
     * synchronously, from the master of ITS slot, and a failed read fails the whole call (RedisOwners.owner -> read ->
     * retries.run(hgetAll) throws). So while the master with A's owner record is unavailable, holder() of a lock A
     * holds on a healthy master throws instead of answering, and a contender's acquire fails with a connection error
     * instead of "lock is held" (which its wait loop understands). RedisOwners' javadoc promises the opposite: "a record
     * that is gone ... leaves the holder named by its instance id only". A failed read should fall back to that.
     */
    @Test
    void inAClusterHolderFailsWhenTheHoldersOwnerRecordIsUnreachable() {
        Assumptions.assumeFalse(RedisTarget.isExternal(), "runs its own cluster");
        try (RedisClusterProcess cluster = RedisClusterProcess.start()) {
            RedisLocker a = open(RedisLocker.builder().uri(cluster.uri()).keyPrefix(prefix)
                    .timeout(Duration.ofMillis(500)), "holder");
            RedisLocker b = open(RedisLocker.builder().uri(cluster.uri()).keyPrefix(prefix)
                    .timeout(Duration.ofMillis(500)), "asker");
            a.acquire(lock("warm"), "held").close(); // writes a's owner record
            b.acquire(lock("warm"), "contender").close(); // and b's: b writes nothing below
            String ownerKey = prefix + "{}o" + new String(a.claimField(), 1, 16, StandardCharsets.US_ASCII);
            RedisServerProcess ownerNode = null;
            for (RedisServerProcess n : cluster.nodes()) {
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
    }

    /*
     * Finding 2c (the worst of the coupling: a held lease is lost): a renewal calls RedisOwners.touch() synchronously,
     * after the renew script answered and before renewSingleLock returns. Once a quarter of the owner record's TTL has
     * passed since its last writing (6 hours at the least: TTL = max(4 x expiry, 1 day)), touch() rewrites the whole
     * record; in Cluster mode that write goes to the owner record's master. If that master is unavailable, the write
     * blocks for the cluster client's whole retry budget (socketTimeout x retries: 2 s x 3 = 6 s by default), and the
     * renewal answers that late: with an expiry shorter than that, AbstractLocker finds "the renewal's validity ended
     * before its answer reached us", loses the hold and withdraws the claim; the server-side claim has expired meanwhile
     * anyway. Worse, rewrite() leaves the record stale after a failure, so EVERY later renewal (of any lock) of that
     * locker blocks the same way until the owner master is back: a service that renews short leases loses all of them
     * because one unrelated master is down, although each lock's own master is healthy. The old layout's renewal touched
     * only the lock's slot.
     *
     * The locker's clock is real time plus an offset the test moves forward (a fake clock, not a fake backend): the
     * lease (expiry 3 s) is renewed every 2 s of locker time for a little over 6 hours of locker time (about 11,000 real
     * renewals), so the owner record becomes due while the lease is held, as in a long-running service. The owner
     * record's master is paused (CLIENT PAUSE WRITE) just before.
     */
    @Test
    void inAClusterARenewalLosesItsLeaseWhenTheOwnerRecordsMasterIsUnavailable() throws Exception {
        Assumptions.assumeFalse(RedisTarget.isExternal(), "runs its own cluster");
        OffsetClock clock = new OffsetClock();
        try (RedisClusterProcess cluster = RedisClusterProcess.start()) {
            RedisLocker a = RedisLocker.builder().uri(cluster.uri()).keyPrefix(prefix)
                    .config(LockerConfig.builder().rid("renewer").expiry(Duration.ofSeconds(3)).timeSource(clock)
                            .build())
                    .restartGuard(Duration.ZERO).build();
            fixture.adopt(a);
            a.acquire(lock("warm"), "job").close(); // writes the owner record: due again 6 h (locker time) from now
            String ownerKey = prefix + "{}o" + new String(a.claimField(), 1, 16, StandardCharsets.US_ASCII);
            RedisServerProcess ownerNode = null;
            for (RedisServerProcess n : cluster.nodes()) {
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

    // ---- finding 3 ------------------------------------------------------------------------------------------------

    /*
     * Finding 3 (an owner record that points to the wrong pair): RedisOwners.slowPart adds a new (thread, reason) pair
     * as number n and writes field n; when that write fails (here: it times out), it forgets n locally
     * (entries.remove(n)) and gives the number to the next new pair. But a timed-out write may still have been
     * executed by the server (the request was sent; a busy or paused server runs it later). The server's record then
     * holds n = the first pair until the next pair's write overwrites it, and a reader that read the record in
     * between caches n = the first pair forever: RedisOwners.owner re-reads a record only for a number it does not
     * know ("entries are only ever added, so a reader may cache a record"). From then on every holder(), listing and
     * "lock is held" exception of that reader names the wrong thread/reason for the claims that reference n. A failed
     * write must never free its number (keep it reserved, or number pairs so that a reuse cannot collide).
     *
     * The server is kept busy by a Lua loop on another connection for 2 s; the locker's socket timeout is 300 ms.
     */
    @Test
    void aTimedOutOwnerWriteLetsANumberNameTwoPairs() throws Exception {
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

    // ---- finding 4 ------------------------------------------------------------------------------------------------

    /*
     * Finding 4 (an owner record that is stale after a restart): the acquire script reports the owner record missing
     * only when the whole record (its field "r") is gone. A server that restarts from an older snapshot (RDB, or an
     * AOF that is not fsynced always) or a replica promoted before it received the latest owner write has the record,
     * but without the pairs added since. The locker keeps referencing them (fast path: writtenAt is recent, stale is
     * false), the script says "not missing", so nothing rewrites the record for a quarter of its TTL (at least 6 hours,
     * the TTL being max(4 x expiry, 1 day)). Meanwhile every other reader names the holder with an empty thread and an
     * empty reason (RedisOwners.owner: p == null -> "", ""), i.e. shows a wrong owner rather than "unknown". The old
     * layout carried the owner in the claim, so a claim always named its owner exactly.
     */
    @Test
    void aRecordRestoredWithoutItsNewerPairsIsNotRewritten() throws Exception {
        Assumptions.assumeFalse(RedisTarget.isExternal(), "restarts its own server");
        RedisServerProcess server = RedisServerProcess.start();
        try {
            RedisLocker.Builder on = RedisLocker.builder().uri(server.uri()).keyPrefix(prefix);
            RedisLocker a = open(on, "restarted");
            a.acquire(lock("first"), "the first reason").close(); // record: 0
            server.cli("SAVE"); // the snapshot the server will restart from
            a.acquire(lock("second"), "the second reason").close(); // record: 1, not in the snapshot
            server.restart(); // kill -9, then loads dump.rdb: the record without pair 1
            RedisLocker reader = open(RedisLocker.builder().uri(server.uri()).keyPrefix(prefix), "reader");
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

    // ---- finding 5 ------------------------------------------------------------------------------------------------

    /*
     * Finding 5 (a thread name or reason with any characters): an owner-record entry is utf8(len + ":" + thread + why)
     * with len = the UTF-8 length of the thread ENCODED ALONE. A thread name ending in a high surrogate followed by a
     * reason starting with a low surrogate encode alone as "?" each (1 byte), but concatenated they form one valid
     * code point (4 bytes), so len cuts into the middle of that code point: every other reader shows a different
     * thread and reason (replacement characters, the reason's first character lost) than the claim's owner, and than
     * the old layout (LockOwner.toBytes encodes each string on its own) showed. Java allows any String as a thread
     * name or reason. Display only, but holder()/listing then disagree with the locker's own view.
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

    // ---- finding 7 ------------------------------------------------------------------------------------------------

    /*
     * Finding 7 (the compact listpack does not survive one waiter): a queue entry still carries the waiter's owner in
     * full ("<seq> <until>\n<LockOwner.toBytes()>", well over hash-max-listpack-value = 64 bytes), so the first waiter
     * converts the lock's hash to a hashtable, and Redis never converts a hash back to a listpack. The key lives on
     * (field t, refreshed TTL) as long as the lock keeps being used, so every lock that was ever contended costs a
     * hashtable for good, not the ~190 bytes the README promises for a held lock. Memory only; the same goes for an
     * owner stored in full in a claim (more than MAX_REFS pairs, or an owner that is not the locker's own). Queue entries
     * could reference the owner record as claims do.
     */
    @Test
    void aLockThatHadAWaiterIsACompactListpackAgainWhenHeld() throws Exception {
        RedisLocker a = locker("first");
        RedisLocker b = locker("waiter");
        KeyColumn lock = lock("contended");
        byte[] key = a.redisKey(lock);
        // each pair's first claim (and queue entry) carries its owner in full while the record is written: warm both
        a.acquire(lock("warm-a"), "first").close();
        Thread warm = new Thread(() -> b.acquire(lock("warm-b"), "patient").close(), "waiter");
        warm.start();
        warm.join();
        a.awaitOwnerRecord();
        b.awaitOwnerRecord();
        Lease held = a.acquire(lock, "first");
        AtomicReference<Lease> got = new AtomicReference<>();
        Thread waiter = new Thread(() -> got.set(b.tryAcquire(lock, "patient", Duration.ofSeconds(60)).orElseThrow()),
                "waiter");
        waiter.start();
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (admin().hkeys(key).stream().noneMatch(f -> f.length > 0 && f[0] == 'q')) {
            assertTrue(System.nanoTime() < until, "the waiter never queued");
            Thread.sleep(5);
        }
        held.close();
        waiter.join();
        got.get().close();
        try (Lease again = a.acquire(lock, "first")) {
            assertEquals(1, admin().hlen(key), "one field again: the claim");
            String encoding = new String((byte[]) admin().sendCommand(redis.clients.jedis.Protocol.Command.OBJECT,
                    "ENCODING".getBytes(StandardCharsets.US_ASCII), key), StandardCharsets.US_ASCII);
            assertEquals("listpack", encoding, "a held lock's hash is the compact listpack");
        }
    }

    // ---- finding 6 ------------------------------------------------------------------------------------------------

    /*
     * Finding 6 (mixed versions: two holders): a claim in the previous layout ("<written> <expiry> <token> <32-hex
     * nonce>\n<owner>") does not match the new parse pattern, and scan() treats any claim it cannot parse as dead: it
     * scrubs it and grants the lock. So during a rolling upgrade (or with one stray old-build process) a new locker
     * silently takes a lock an old locker holds: two holders. The old build does the same to the new claims (no "\n"
     * in a referenced claim). The README says not to share a prefix between builds, but nothing enforces it; an
     * unreadable claim in field c... is better treated as a live holder (refuse, name it "unreadable claim") than as
     * dead, or the layout change should move the keys (another key name / field letter) so the builds cannot meet.
     */
    @Test
    void aLiveClaimOfThePreviousLayoutIsNotTakenOver() {
        RedisLocker a = locker("new-build");
        KeyColumn lock = lock("mixed");
        byte[] key = a.redisKey(lock);
        long now = serverMicros();
        byte[] owner = new LockOwner("old-build", "old-host", 1, "main", "old work", null).toBytes();
        byte[] head = (now + " " + (now + 60_000_000L) + " " + now + " " + "0123456789abcdef0000000000000001" + "\n")
                .getBytes(StandardCharsets.US_ASCII);
        byte[] value = new byte[head.length + owner.length];
        System.arraycopy(head, 0, value, 0, head.length);
        System.arraycopy(owner, 0, value, head.length, owner.length);
        admin().hset(key, "cold-build".getBytes(StandardCharsets.US_ASCII), value); // as the old build writes it
        admin().hset(key, "t".getBytes(StandardCharsets.US_ASCII),
                Long.toString(now).getBytes(StandardCharsets.US_ASCII));
        admin().pexpire(key, 120_000);
        assertThrows(TemporaryLockingException.class, () -> a.acquire(lock, "new work").close(),
                "the old build's live claim holds the lock");
    }
}
