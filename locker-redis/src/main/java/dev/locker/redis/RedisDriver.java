package dev.locker.redis;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.LockInfo;
import dev.locker.api.LockOwner;
import dev.locker.api.LockPage;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockingException;
import dev.locker.api.PermanentLockingException;
import dev.locker.api.TemporaryLockingException;
import dev.locker.api.TimeSource;
import dev.locker.engine.ClaimStatus;
import dev.locker.spi.Deadlines;
import dev.locker.spi.LockDriver;
import dev.locker.spi.LockRecords;
import dev.locker.spi.WaitQueue;
import dev.locker.spi.Waiting;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.args.Rawable;
import redis.clients.jedis.exceptions.JedisClusterOperationException;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisException;

import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The Redis driver: the scripts, withdrawal by tombstone, compact claims, the restart guard, the wait queues
 * ({@link RedisWaitQueue}), and the routing to a single server or a Cluster. {@link RedisLocker} is the engine over
 * it and states the protocol and its safety argument.
 *
 * <p>A claim's expiry is the one the engine passes to {@link #write} and {@link #renew}. It sets the claim's server
 * expiry and its key's safety-net {@code PEXPIRE}, and the holder's validity is that expiry less
 * {@code serverClockSkew}. An expiry longer than the restart guard is refused before any I/O. A release inside the
 * hold-at-least calls {@link #leave} instead: the claim then lives exactly the time left, and is renewed no more.
 */
final class RedisDriver implements LockDriver<ClaimStatus> {

    private static final Logger log = LoggerFactory.getLogger(RedisDriver.class);
    private static final byte[] ONE = {'1'};
    private static final byte[] ZERO = {'0'};

    private final LockerConfig config;
    private final TimeSource time;
    private final Engine engine;
    private final UnifiedJedis client;
    private final boolean ownsClient;
    private final RedisKeys keys;
    private final String server;
    private final int replicas;
    private final Duration replicaTimeout;
    /** The restart guard as this locker keeps it, with the topology its keys depend on. */
    private final RedisRestartGuard guard;
    /** How far another server's clock may be ahead: a holder counts on a claim's expiry less this. */
    private final Duration serverClockSkew;
    private final Duration tombstoneTtl;
    private final RedisLocker.EvictionCheck evictionCheck;
    private final Set<String> evictionWarnings = ConcurrentHashMap.newKeySet();
    private final byte[] ownField;
    /** The channel the scripts publish a lock's key on when it may be free and waiters are queued. */
    private final byte[] channel;
    /** How long a waiter's queue entry lives unless the waiter refreshes it (see acquire.lua). */
    private final Duration queueTtl;
    /** Every request, with its retries and its WAIT. */
    private final RedisCalls calls;
    /** The records kept with each lock (run once, forced release). */
    private final RedisRecords records;
    /** The waits in progress and the release wake-ups: the driver's wait queue. */
    private final RedisWaitQueue queue;
    /** The first half of every nonce: this instance, even among lockers sharing a rid. */
    private final String instance = HexFormat.of().toHexDigits(new SecureRandom().nextLong());
    /** The second half: counts this instance's acquires, so that a tombstone can cover all those up to one. */
    private final AtomicLong acquires = new AtomicLong();
    /** {@link #instance} as bytes: the shared prefix of every claim id this locker keeps (never changed). */
    private final byte[] instanceBytes = instance.getBytes(StandardCharsets.US_ASCII);
    private final RedisOwners owners;
    /**
     * The nonces of held claims whose acquire was sent again after a copy that may have reached the server: that copy
     * may still arrive late. Such a claim ends by withdrawal, whose tombstone makes the late copy grant nothing.
     */
    private final Set<String> lateCopiesPossible = ConcurrentHashMap.newKeySet();
    /** The last claim expiry passed, with its script argument: encoded once while the engine passes the same one. */
    private volatile ExpiryArg lastExpiry = new ExpiryArg(Duration.ZERO,
            RedisScript.arg(ScriptArgs.millis(Duration.ZERO)),
            RedisScript.arg(ScriptArgs.keyTtl(ScriptArgs.millis(Duration.ZERO))));
    /** The scripts' constant arguments, encoded once and passed as they are (see {@link RedisScript#arg}). */
    private final Rawable fieldArg;
    private final Rawable scrubArg;
    /** The acquire script's ARGV 6, "<scrub><eviction check>" ("1off", "0fail"...): one argument for two. */
    private final Rawable scrubAndCheckArg;

    private final Rawable channelArg;

    /**
     * @param b          the options the locker was built with
     * @param config     the configuration the locker runs with (its rid is the locker's)
     * @param client     the Jedis client
     * @param ownsClient true when the driver made the client and closes it
     * @param engine     the engine's background thread and closed state, bound once the engine is built
     */
    RedisDriver(RedisLockerBuilder b, LockerConfig config, UnifiedJedis client, boolean ownsClient, Engine engine) {
        this.config = config;
        this.time = config.timeSource();
        this.engine = engine;
        this.client = client;
        this.ownsClient = ownsClient;
        this.keys = new RedisKeys(b.keyPrefixOption());
        this.server = b.describe();
        this.replicas = b.replicasOption();
        this.replicaTimeout = b.replicaTimeoutOption();
        this.serverClockSkew = b.serverClockSkewOption();
        this.tombstoneTtl = b.tombstoneTtlOption();
        this.evictionCheck = b.evictionCheckOption();
        this.ownField = ("c" + instance).getBytes(StandardCharsets.US_ASCII); // this instance's field
        this.calls = new RedisCalls(client, server, config.retries(), replicas, replicaTimeout);
        // the owner record's life follows the longest expiry a claim was written with (see RedisOwners.covers); a
        // wait queue entry is the waiter's own, refreshed by its wait and removed at its grant, whatever the lease
        this.owners = new RedisOwners(client, keys, calls::withRetries, time::nanoTime, instance, config.rid(),
                config.host(), config.pid(), config.expiry());
        this.channel = keys.releaseChannel();
        this.queueTtl = Duration.ofMillis(Math.max(300, Math.min(config.expiry().toMillis(), 3_000)));
        this.guard = new RedisRestartGuard(b.restartGuard(), keys, server, client, calls,
                ownsClient ? !b.clusterMode() : null);
        this.fieldArg = RedisScript.arg(ownField);
        this.records = new RedisRecords(keys, calls, fieldArg);
        this.scrubArg = RedisScript.arg(scrub());
        byte[] check = evictionCheck.arg;
        byte[] scrubAndCheck = Arrays.copyOf(scrub(), 1 + check.length);
        System.arraycopy(check, 0, scrubAndCheck, 1, check.length);
        this.scrubAndCheckArg = RedisScript.arg(scrubAndCheck);
        this.channelArg = RedisScript.arg(channel);
        // the wake-ups' subscription gets a connection of its own, made with these options; with a client the caller
        // manages there are no options to make one with, and waiters poll instead
        AtomicLong subscriptionsMade = new AtomicLong();
        RedisWakeups wakeups = ownsClient ? new RedisWakeups(() -> b.newConnection(subscriptionsMade.getAndIncrement()),
                channel, config.rid(), engine::later, b.wakeupLingerOption(), b.wakeupHealthCheck()) : null;
        this.queue = new RedisWaitQueue(client, keys, server, channel, queueTtl, instance, time, engine, wakeups);
    }

    /** The key layout of this locker's prefix. */
    RedisKeys keys() {
        return keys;
    }

    /** Who this driver talks to, as named in its error messages (never with a password). */
    String server() {
        return server;
    }

    /** The Jedis client. */
    UnifiedJedis client() {
        return client;
    }

    /** Waits until no write of this locker's owner record is under way, for tests. */
    void awaitOwnerRecord() throws InterruptedException {
        owners.awaitWrites();
    }

    /** This locker's claim field in every lock's hash ({@code "c" + instance}), for tests. */
    byte[] claimField() {
        return ownField.clone();
    }

    // ---- the driver's operations ----------------------------------------------------------------------------

    /** The acquire script; a waiter's attempt is queued when refused (see acquire.lua). */
    @Override
    public ClaimStatus write(KeyColumn lock, LockOwner owner, Duration expiry, Waiting waiting) {
        ExpiryArg expiryArgs = expiryArgs(expiry);
        owners.covers(expiry);
        Duration validity = expiry.minus(serverClockSkew);
        byte[] key = keys.lockKey(lock);
        long acquire = acquires.incrementAndGet();
        byte[] nonce = ClaimStatus.countedId(instanceBytes, acquire);
        RedisWaitQueue.WaitState wait = waiting == null ? null : queue.stateOf(waiting);
        if (wait != null) {
            wait.beforeAttempt(lock); // a release published from now on wakes the pause after this attempt
        }
        // no marker nor guard record in Cluster mode: a second key would make the script fail (TRYAGAIN) while the
        // lock's slot migrates
        Rawable[] guardKeys = guard.acquireKeys();
        int keyCount = 1 + guardKeys.length;
        Rawable[] call = new Rawable[keyCount + (wait == null ? 7 : 8)]; // the waiter's only when waiting
        call[0] = RedisScript.arg(key);
        System.arraycopy(guardKeys, 0, call, 1, guardKeys.length);
        call[keyCount] = fieldArg;
        // the counter as the claim's value carries it, so that the script's fast path matches no pattern for it
        call[keyCount + 1] = RedisScript.arg(ScriptArgs.counter(nonce));
        call[keyCount + 2] = expiryArgs.arg;
        call[keyCount + 3] = RedisScript.arg(owners.claimPart(owner));
        call[keyCount + 4] = guard.acquireArg();
        call[keyCount + 5] = scrubAndCheckArg;
        call[keyCount + 6] = expiryArgs.keyTtlArg;
        if (wait != null) {
            call[keyCount + 7] = wait.acquireArg;
        }
        long started = time.nanoTime(); // the claim lives from the script's TIME, which comes after this reading
        boolean[] sent = {false}; // did any attempt possibly reach the server (not only the last one)?
        Object reply;
        long acks = -1;
        try {
            if (replicas > 0) {
                Object[] both = calls.withRetries(() -> calls.runAndWait(RedisScript.ACQUIRE, keyCount, call), sent);
                reply = both[0];
                acks = (Long) both[1];
            } else {
                reply = calls.withRetries(() -> RedisScript.ACQUIRE.run(client, keyCount, call), sent);
            }
        } catch (JedisConnectionException | JedisClusterOperationException e) {
            // the script may have run, or may still run: withdraw it
            if (sent[0] || RedisCalls.mayHaveReachedTheServer(e)) {
                withdraw(lock, key, nonce, expiry, "the acquire's outcome is unknown (" + e.getMessage() + ")");
            }
            throw e;
        } catch (JedisException e) {
            if (replicas > 0) { // e.g. WAIT refused (no +wait in the ACL) after the script may have granted
                withdraw(lock, key, nonce, expiry, "the acquire's WAIT failed (" + e.getMessage() + ")");
            }
            throw e;
        }
        // a grant is the token alone (an integer reply); a grant with a warning, or anything else, a list
        List<?> r = reply instanceof List ? (List<?>) reply : null;
        long code = r == null ? 1 : (Long) r.get(0);
        if (code == 1) {
            if (r != null && r.size() > 3) {
                warnOfEviction(lock, new String((byte[]) r.get(3), StandardCharsets.UTF_8));
            }
            long token = r == null ? (Long) reply : (Long) r.get(1);
            // kept as (instance, acquire number): the nonce's bytes are made again when sent
            ClaimStatus status = ClaimStatus.grantedCounted(instanceBytes, acquire, token, Deadlines.of(started, validity));
            if (replicas > 0 && acks < replicas) {
                withdraw(lock, key, nonce, expiry, "only " + acks + " of " + replicas + " replicas acknowledged it");
                throw new TemporaryLockingException("only " + acks + " of " + replicas + " replicas of " + server
                        + " acknowledged the claim within " + replicaTimeout + "; the claim was withdrawn", lock);
            }
            if (sent[0]) {
                // an earlier copy of this request may reach the server after our release: see release
                lateCopiesPossible.add(new String(nonce, StandardCharsets.US_ASCII));
            }
            return status;
        }
        if (code == 0) {
            Duration left = r.size() > 2 ? Duration.ofMillis((Long) r.get(2)) : null;
            throw new TemporaryLockingException("lock is held on " + server, lock,
                    owners.owner((byte[]) r.get(3), (byte[]) r.get(1)), left, null);
        }
        if (code == -5) {
            // a waiter need not ask again before the first one's release wakes it (or that one gives up, which wakes
            // it too): only a first waiter that died, whose entry lapses within queueTtl, goes unannounced
            throw new TemporaryLockingException("lock is free on " + server + " but promised to the first of the "
                    + "processes queued for it (waiters are served in arrival order)", lock,
                    owners.queued((byte[]) r.get(2), (byte[]) r.get(1)), wait == null ? null : queueTtl, null);
        }
        if (code == -2) {
            throw guard.tooYoung(lock, (Long) r.get(1));
        }
        if (code == -4) {
            String policy = new String((byte[]) r.get(1), StandardCharsets.UTF_8);
            throw new PermanentLockingException(server + " may evict keys (maxmemory-policy " + policy + " with "
                    + "maxmemory " + r.get(2) + " bytes): an evicted lock key lets a second process acquire a lock "
                    + "that is still held. Set maxmemory-policy noeviction (or maxmemory 0) on every master, or "
                    + "evictionCheck=warn to accept the risk", lock);
        }
        if (code == -6) {
            throw guard.otherGuard(lock, (byte[]) r.get(1));
        }
        if (code == -3) { // only a late request gets it: its caller gave up on it, or is done with its claim
            throw new TemporaryLockingException("this acquire had been withdrawn on " + server + ", or its claim "
                    + "released or expired, before this copy of it arrived; nothing was granted", lock);
        }
        throw new PermanentLockingException("unexpected reply " + code + " from the acquire script on " + server, lock);
    }

    @Override
    public ClaimStatus renew(KeyColumn lock, ClaimStatus status, Duration expiry) {
        Rawable expiryArg = expiryArg(expiry);
        owners.covers(expiry);
        Duration validity = expiry.minus(serverClockSkew);
        byte[] key = keys.lockKey(lock);
        // with the guard record as a second key: keeping it alive with our claim costs no round trip
        // a single server with a guard above 0: the renewal keeps the guard record alive (see renew.lua)
        boolean renewsGuardRecord = guard.renewalsKeepTheRecord();
        int keyCount = renewsGuardRecord ? 2 : 1;
        Rawable[] call = renewsGuardRecord
                ? new Rawable[]{RedisScript.arg(key), guard.recordArg(), fieldArg,
                        RedisScript.arg(status.claimIdShared()), expiryArg, scrubArg, guard.recordLifeArg()}
                : new Rawable[]{RedisScript.arg(key), fieldArg, RedisScript.arg(status.claimIdShared()), expiryArg,
                        scrubArg};
        long started = time.nanoTime();
        List<?> r;
        long acks = -1;
        if (replicas > 0) {
            Object[] both = calls.withRetries(() -> calls.runAndWait(RedisScript.RENEW, keyCount, call));
            r = (List<?>) both[0];
            acks = (Long) both[1];
        } else {
            r = (List<?>) calls.withRetries(() -> RedisScript.RENEW.run(client, keyCount, call));
        }
        long code = (Long) r.get(0);
        if (code == 1) {
            long token = (Long) r.get(1);
            owners.touch();
            if (token != status.fencingToken()) {
                throw new ExpiredLockException("our claim on " + server + " carries token " + token + ", not ours ("
                        + status.fencingToken() + ")", lock);
            }
            if (replicas > 0 && acks < replicas) {
                // a failover now would bring back the old expiry: keep it as ours too
                throw new TemporaryLockingException("only " + acks + " of " + replicas + " replicas of " + server
                        + " acknowledged the renewal within " + replicaTimeout
                        + "; the claim keeps its former deadline",
                        lock);
            }
            return status.renewed(Deadlines.of(started, validity));
        }
        throw notOurs(lock, r);
    }

    /**
     * The leave script: our claim's expiry set to exactly {@code expiry} from now, and the claim marked left, so that
     * a late renewal of it changes nothing. Only the restart guard bounds {@code expiry}: the holder asks for this
     * short hold, and the skew bound protects the validity of new leases. Without a WAIT: a failover that lost the
     * leave keeps the claim's former, longer expiry, which holds the lock longer, never shorter.
     */
    @Override
    public ClaimStatus leave(KeyColumn lock, ClaimStatus status, Duration expiry) {
        guard.checkExpiry(expiry);
        owners.covers(expiry);
        if (!lateCopiesPossible.isEmpty()) {
            // a left claim ends without a release, so no tombstone follows it (see docs/safety.md)
            lateCopiesPossible.remove(new String(status.claimIdShared(), StandardCharsets.US_ASCII));
        }
        Rawable expiryArg = RedisScript.arg(ScriptArgs.millis(expiry));
        byte[] key = keys.lockKey(lock);
        boolean renewsGuardRecord = guard.renewalsKeepTheRecord();
        int keyCount = renewsGuardRecord ? 2 : 1;
        Rawable[] call = renewsGuardRecord
                ? new Rawable[]{RedisScript.arg(key), guard.recordArg(), fieldArg,
                        RedisScript.arg(status.claimIdShared()), expiryArg, scrubArg, guard.recordLifeArg()}
                : new Rawable[]{RedisScript.arg(key), fieldArg, RedisScript.arg(status.claimIdShared()), expiryArg,
                        scrubArg};
        long started = time.nanoTime();
        List<?> r = (List<?>) calls.withRetries(() -> RedisScript.LEAVE.run(client, keyCount, call));
        if ((Long) r.get(0) != 1) {
            throw notOurs(lock, r);
        }
        long token = (Long) r.get(1);
        owners.touch();
        if (token != status.fencingToken()) {
            throw new ExpiredLockException("our claim on " + server + " carries token " + token + ", not ours ("
                    + status.fencingToken() + ")", lock);
        }
        return status.renewed(Deadlines.of(started, expiry.minus(serverClockSkew)));
    }

    /** Asks the verify script: our claims are held from the moment they are written. */
    @Override
    public ClaimStatus verify(KeyColumn lock, ClaimStatus status) {
        byte[] key = keys.lockKey(lock);
        List<byte[]> args = List.of(ownField, status.claimId(),
                Long.toString(status.fencingToken()).getBytes(StandardCharsets.US_ASCII));
        List<?> r = (List<?>) calls.withRetries(() -> RedisScript.VERIFY.run(client, key, args));
        long code = (Long) r.get(0);
        if (code == 1) {
            return status;
        }
        throw notOurs(lock, r);
    }

    /** The renew or verify script's answer when our claim is not the holder: {0, holder value} or {-1}. */
    private ExpiredLockException notOurs(KeyColumn lock, List<?> reply) {
        if ((Long) reply.get(0) == 0) {
            return new ExpiredLockException("our claim was taken over on " + server, lock,
                    owners.owner((byte[]) reply.get(2), (byte[]) reply.get(1)), null);
        }
        return new ExpiredLockException("our claim is gone from " + server + " (expired or force-released); "
                + "release the transaction's locks and start again", lock);
    }

    /**
     * The release script; a claim whose acquire may still arrive late is withdrawn instead. The acquire script refuses
     * a copy that finds its claim ended only while our field keeps it, and a release or a scrub may remove the field.
     */
    @Override
    public void release(KeyColumn lock, ClaimStatus status) {
        byte[] key = keys.lockKey(lock);
        if (!lateCopiesPossible.isEmpty()) {
            byte[] nonce = status.claimId();
            if (lateCopiesPossible.remove(new String(nonce, StandardCharsets.US_ASCII))) {
                withdraw(lock, key, nonce, config.expiry(), "an earlier copy of its acquire may still arrive");
                return;
            }
        }
        byte[] nonce = status.claimIdShared();
        long token = status.fencingToken();
        Rawable[] call = token > 0 && nonce.length == 32
                ? new Rawable[]{RedisScript.arg(key), fieldArg, channelArg,
                        RedisScript.arg(ScriptArgs.grantedStart(token, lastExpiry.arg.getRaw(), nonce)),
                        RedisScript.arg(ScriptArgs.releasedValue(token, nonce))}
                : new Rawable[]{RedisScript.arg(key), fieldArg, RedisScript.arg(nonce), channelArg};
        calls.withRetries(() -> RedisScript.RELEASE.run(client, 1, call));
    }


    @Override
    public boolean remove(KeyColumn lock, OptionalLong expectedToken, byte[] record) {
        return expectedToken.isPresent() ? removeWithToken(lock, expectedToken.getAsLong(), record)
                : removeAll(lock);
    }

    private boolean removeAll(KeyColumn lock) {
        byte[] key = keys.lockKey(lock);
        long n = (Long) calls.withRetries(() -> RedisScript.FORCE.run(client, key, List.of(channel)));
        return n > 0;
    }

    /** The holder script: the senior live claim's owner, token and expiry in one read. */
    @Override
    public Optional<LockInfo> readHolder(KeyColumn lock) {
        byte[] key = keys.lockKey(lock);
        List<?> r = (List<?>) calls.withRetries(() -> RedisScript.HOLDER.run(client, key, List.of(scrub())));
        if ((Long) r.get(0) == 1) {
            return Optional.ofNullable(RedisListing.info(lock, List.of(r.get(2), r.get(1)), owners));
        }
        return Optional.empty();
    }

    /**
     * One force.lua call with the expected token: the check, the removal and the record are one script. A resend after
     * a failure that may have reached the server says so (a fifth argument): only then may the script take its own
     * record, already there, for the removal an earlier attempt of this very call made (its reply lost). A first
     * attempt never does: another call that happens to write the same record bytes (same locker, thread name, reason,
     * millisecond and token) must not be told it removed the claim.
     */
    private boolean removeWithToken(KeyColumn lock, long token, byte[] record) {
        List<byte[]> keyList = List.of(keys.lockKey(lock), keys.recordKey(lock));
        List<byte[]> args = List.of(channel, Long.toString(token).getBytes(StandardCharsets.US_ASCII),
                LockRecords.FORCED.getBytes(StandardCharsets.US_ASCII), record);
        List<byte[]> resent = List.of(args.get(0), args.get(1), args.get(2), args.get(3), ONE);
        boolean[] mayHaveBeenSent = new boolean[1];
        return (Long) calls.withRetries(() -> RedisScript.FORCE.run(client, keyList,
                mayHaveBeenSent[0] ? resent : args), mayHaveBeenSent) == 1L;
    }

    /** SCAN and list.lua; see {@link RedisListing} for what it costs. */
    @Override
    public LockPage list(byte[] keyPrefix, int limit, String cursor) {
        return new RedisListing(client, keys, server, calls::withRetries, owners).page(keyPrefix, limit, cursor);
    }

    @Override
    public void close() {
        owners.close();
        queue.closeWakeups(); // wakes every waiter: each sees the locker closed and leaves its queues
        if (ownsClient) {
            queue.awaitWaitsEnded();
            client.close();
        }
    }

    /** Maps a Jedis failure by what it means (see {@link RedisFailures}); the message names the server. */
    @Override
    public LockingException translate(RuntimeException e, KeyColumn lock, String action) {
        if (e instanceof LockingException || !(e instanceof JedisException)) {
            return LockDriver.super.translate(e, lock, action);
        }
        return RedisFailures.classify((JedisException) e, lock, action, server);
    }

    // ---- helpers ----------------------------------------------------------------------------------------------

    /** Logs once per locker and condition that a grant was made on a server that may evict it. */
    private void warnOfEviction(KeyColumn lock, String condition) {
        if (evictionWarnings.add(condition)) {
            log.warn("Granted {} on {}, which may evict lock keys ({}): an evicted key lets a second process acquire "
                    + "a held lock. Set maxmemory-policy noeviction on every master (evictionCheck=warn lets grants "
                    + "through; this is logged once per condition)", lock, server, condition);
        }
    }

    /**
     * Withdraws an acquire this locker gave up on: removes the claim it may have written (compare-and-delete on its
     * nonce) and leaves a tombstone for {@code tombstoneTtl}, so that the request grants nothing should it reach the
     * server only later (a request held up in the network or a proxy after the client timed out). If the withdrawal
     * fails too, a claim the request granted or grants expires on its own.
     */
    private void withdraw(KeyColumn lock, byte[] key, byte[] nonce, Duration expiry, String why) {
        List<byte[]> args = List.of(ownField, nonce, ScriptArgs.millis(tombstoneTtl), ScriptArgs.millis(expiry),
                scrub(), channel);
        try {
            Object removed = calls.withRetries(() -> RedisScript.WITHDRAW.run(client, key, args));
            log.debug("Withdrew our acquire on {} at {} (a claim was found: {}): {}", lock, server, removed, why);
        } catch (RuntimeException e) {
            log.warn("Could not withdraw our acquire on {} at {} ({}); retrying in the background for up to {} (until "
                    + "then a claim it granted blocks the lock): {}", lock, server, why, expiry, e.toString());
            withdrawLater(lock, key, args, time.nanoTime() + expiry.toNanos());
        }
    }

    /** Retries a withdrawal on the locker's background thread until it succeeds or the claim would have expired. */
    private void withdrawLater(KeyColumn lock, byte[] key, List<byte[]> args, long untilNanos) {
        if (time.nanoTime() - untilNanos >= 0 || engine.isClosed()) {
            return;
        }
        engine.later(() -> {
            try {
                RedisScript.WITHDRAW.run(client, key, args);
                log.info("Withdrew our acquire on {} at {} on a later attempt", lock, server);
            } catch (RuntimeException again) {
                withdrawLater(lock, key, args, untilNanos);
            }
        }, Duration.ofMillis(200));
    }

    /** Whether the scripts scrub the dead claims they meet, as they get it. */
    private byte[] scrub() {
        return config.scrubExpired() ? ONE : ZERO;
    }


    @Override
    public String toString() {
        return "RedisDriver[rid=" + config.rid() + ", " + server + ", prefix=" + keys.prefix() + "]";
    }

    @Override
    public Optional<WaitQueue> waitQueue() {
        return Optional.of(queue);
    }

    /** The wait queue and its wake-ups, for the locker's accessors that tests use. */
    RedisWaitQueue queue() {
        return queue;
    }

    @Override
    public Optional<LockRecords<ClaimStatus>> records() {
        return Optional.of(records);
    }

    /**
     * The script argument of a claim's expiry, checked before any I/O. A claim that outlives the restart guard
     * outlives a restart that lost it, so such an expiry is refused.
     */
    private Rawable expiryArg(Duration expiry) {
        return expiryArgs(expiry).arg;
    }

    /** {@link #expiryArg}, with the key's TTL at a grant made from it. */
    private ExpiryArg expiryArgs(Duration expiry) {
        ExpiryArg last = lastExpiry;
        if (last.expiry.equals(expiry)) {
            return last;
        }
        checkExpiry(expiry);
        byte[] ms = ScriptArgs.millis(expiry);
        ExpiryArg made = new ExpiryArg(expiry, RedisScript.arg(ms), RedisScript.arg(ScriptArgs.keyTtl(ms)));
        lastExpiry = made;
        return made;
    }


    /** A claim that outlives the restart guard outlives a restart that lost it; the skew comes off every validity. */
    @Override
    public void checkExpiry(Duration expiry) {
        guard.checkExpiry(expiry);
        if (serverClockSkew.multipliedBy(2).compareTo(expiry) >= 0) {
            throw new IllegalArgumentException("expiry " + expiry + " must be more than twice serverClockSkew "
                    + serverClockSkew + ": a holder counts on the expiry less the skew");
        }
    }

    /** A claim expiry with its script arguments (the expiry, the key's TTL), cached together so that they agree. */
    private record ExpiryArg(Duration expiry, Rawable arg, Rawable keyTtlArg) {
    }

    /** What the driver needs of the engine over it: its background thread, and whether it closed. */
    interface Engine {
        /** Runs {@code task} once after {@code delay} on the locker's background thread. */
        void later(Runnable task, Duration delay);

        /** True once the locker began to close. */
        boolean isClosed();
    }
}
