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
import dev.locker.local.AbstractLocker;
import dev.locker.local.ClaimStatus;
import dev.locker.local.LockerBuilder;
import dev.locker.spi.Waiting;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.Connection;
import redis.clients.jedis.ConnectionPoolConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.SslOptions;
import redis.clients.jedis.SslVerifyMode;
import redis.clients.jedis.Response;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.args.Rawable;
import redis.clients.jedis.exceptions.JedisClusterOperationException;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.exceptions.JedisNoScriptException;

import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocketFactory;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The atomic lock protocol on Redis (standalone or Cluster), on Jedis.
 *
 * <p>All claims on one lock live in one hash (see {@link RedisKeys} for its name and {@code common.lua} for its
 * layout). Each phase is one Lua script that reads the server's clock ({@code TIME}), scrubs dead claims, decides
 * the senior live claim and writes, atomically; no client clock orders anything. Hence:
 * <ul>
 *   <li>acquire ({@code writeLock} + {@code checkLocks}) is one round trip when uncontended: the script grants the
 *       claim and its fencing token at once, or removes it again and names the holder;</li>
 *   <li>release is one round trip (compare-and-delete on the claim's nonce), and so are renew, holder and
 *       forceRelease;</li>
 *   <li>the fencing token is {@code max(last token + 1, server time in microseconds)}, assigned in the granting
 *       script: it keeps increasing after releases and forced releases (the last token is kept), and after the
 *       key's safety-net {@code PEXPIRE} or a server restart removed the data (the server's clock has moved on),
 *       as long as the server's wall clock does not step back;</li>
 *   <li>a claim's expiry is server time + {@link LockerConfig#expiry()}; the local {@code ClaimStatus.expiry()} is
 *       taken from the config's time source before the request is sent, so it ends first (see the safety argument
 *       for the clock assumption);</li>
 *   <li>restart guard: while the server has been up for less than {@code restartGuard} (default 60 s),
 *       the acquire script grants nothing, because a server that restarted without all of its data (no persistence,
 *       an older RDB snapshot, the last second of an AOF) may have lost a claim whose holder still works. It is
 *       decided by the server's uptime rather than by a client noticing a new {@code run_id}, which a client that
 *       first connects after the restart could not do. INFO reports uptime in whole seconds, truncated from both
 *       ends, which overstates the real uptime by up to a second; the script counts only the uptime it can prove
 *       ({@code uptime_in_seconds - 1} plus the fraction of the current second), so the guard may hold up to a
 *       second longer than asked, never shorter. The uptime is read once, not per grant: the script keeps it, with
 *       the eviction check's answer, in an admission marker (see {@code admit} in {@code common.lua}) that lives a
 *       second and is trusted only while the server's {@code LASTSAVE} is unchanged, which a restart always changes.
 *       The guard is one value for every locker of a server, never one per locker: the restarted server knows
 *       nothing of the claims it lost, so a locker with a shorter guard would grant them while their holders work.
 *       Hence its default does not follow the expiry, an expiry longer than the guard is refused when built, and a
 *       single server records the guard in use and refuses a locker that asks with another one. Grants and renewals
 *       keep that record alive while any claim under it lives. A restart loses the record with those claims, so a
 *       refused locker remembers the longer guard and waits it out after every later restart;</li>
 *   <li>with {@code replicas > 0}, a granted claim counts only once that many replicas acknowledged it
 *       ({@code WAIT}, pipelined with the script on the same connection); otherwise it is removed again. A renewal
 *       likewise extends the local expiry only once the replicas acknowledged it;</li>
 *   <li>eviction check: the acquire script reads {@code INFO memory} on the master that holds the lock's key and,
 *       by default ({@link EvictionCheck#FAIL}), grants nothing there while {@code maxmemory > 0} with a policy
 *       other than {@code noeviction}: an evicted key would let a second process acquire a held lock. A server
 *       found safe is believed for a second (the admission marker), so a {@code CONFIG SET} to an evicting policy is
 *       noticed within a second; one found unsafe is asked again at every grant.</li>
 * </ul>
 *
 * <h2>Safety argument</h2>
 * <ul>
 *   <li><b>What decides the holder.</b> The acquire script, on the master that holds the lock's hash, in one atomic
 *       step: it scrubs dead claims, and grants only if no other live claim is there, writing the claim, its server
 *       expiry and its token together. So at most one live claim exists in that hash at any time, <em>provided the
 *       hash the script reads still holds every live claim written to it</em>. Each way of losing a claim has its
 *       own assumption: a restart without all the data (persistence, or the restart guard, below), a failover to a
 *       replica that never received it ({@code replicas}, below), eviction (no eviction policy, checked), and an
 *       operator deleting the key ({@code forceRelease}, {@code DEL}, {@code FLUSHALL}: on purpose).</li>
 *   <li><b>Which clock decides expiry.</b> The master's clock ({@code TIME}) alone decides when a claim is dead; no
 *       client clock orders or expires anything. The holder decides whether it may still act on its own monotonic
 *       clock, from one reading taken before the request that granted or renewed the claim, for one expiry: since
 *       the server's expiry starts later (when the script runs), the holder gives up first, as long as the server's
 *       clock neither steps forward nor runs faster than the holder's over one expiry.</li>
 *   <li><b>A paused holder</b> (GC, VM stop, a slow network) cannot extend its claim after it died: renewal and
 *       checks fail locally past its monotonic deadline, and on the server a renewal finds the claim gone or
 *       another holder ({@link ExpiredLockException}). What it cannot be stopped from is a write to the guarded
 *       resource that it issued, or delays, past its deadline: that write carries its fencing token, which is lower
 *       than every later holder's, so a resource that checks tokens refuses it. Tokens are
 *       {@code max(last + 1, server time in microseconds)}: strictly increasing while the hash keeps the last one,
 *       and after the hash was lost as long as the server's clock has not stepped back.</li>
 *   <li><b>Assumptions, per guarantee.</b> One holder at a time needs: no lost claims across restarts (AOF with
 *       {@code appendfsync always}, or one {@code restartGuard} on all lockers sharing the server, at least as long
 *       as each one's expiry: the expiry is checked when built, the one guard by a single server's record; the guard
 *       measures uptime on the server's wall clock, so it too needs a clock that does not step); across failovers,
 *       {@code replicas} acknowledgements from the replica that will be promoted (the guard does not help there: a
 *       promoted replica has been up for long), and {@code serverClockSkew} at least the clocks' difference (taken off
 *       each holder's validity); no eviction (enforced by
 *       {@link EvictionCheck#FAIL}); and a server clock that does not step forward (NTP slewing is fine).
 *       Increasing fencing tokens need a server clock that does not step back once data was lost. Everything else
 *       (lost replies, late requests, failed withdrawals, tombstones outlived by a request) costs only liveness: a
 *       claim nobody holds blocks the lock until it expires, with no second holder and no lower token.</li>
 * </ul>
 *
 * <p>Errors are classified by what they mean ({@link RedisFailures}): refused credentials, permissions or
 * certificates and requests the server cannot run are {@link PermanentLockingException}; unreachable or slow servers,
 * server-side limits and passing states (max clients, OOM, LOADING, BUSY, READONLY after a failover...) and any
 * server error this library does not know are {@link TemporaryLockingException}; both name the server. A broken
 * connection (e.g. after a server restart) is retried at most {@link LockerConfig#retries()} times on fresh
 * connections; on a single server a timeout is not retried, while the cluster client retries it up to its attempt
 * limit (safe: a retry carries the same nonce).
 * An acquire whose outcome stays unknown (timed out, or the connection broke after sending) is withdrawn: its claim
 * is removed by compare-and-delete on its nonce, and a tombstone for the locker instance, covering its acquires up to
 * this one, stays in the lock's hash for {@code tombstoneTtl}, so that neither a grant the client never heard of nor
 * a request that reaches the server only after the withdrawal blocks anyone until it expires.
 *
 * <p>Claims live in one field per locker instance ({@code "c" + instance}, 16 random hex digits, so lockers sharing
 * a rid differ), told apart by a nonce per claim: the instance and a counter of its acquires. A live claim in that
 * field with another nonce belongs to another transaction and is never overwritten, renewed or deleted by this one.
 * A claim is compact (about 190 bytes of server memory per held lock): the owner's rid, host, pid, thread and reason
 * are stored once per locker in its owner record ({@link RedisOwners}), and a claim refers to them.
 */
public final class RedisLocker extends AbstractLocker<ClaimStatus> {

    private static final Logger log = LoggerFactory.getLogger(RedisLocker.class);
    private static final byte[] ONE = {'1'};
    private static final byte[] ZERO = {'0'};
    private static final Duration DEFAULT_TOMBSTONE_TTL = Duration.ofMinutes(20);
    /**
     * The restart guard unless set: one value for every locker of a deployment, never derived from a locker's expiry.
     * After a restart without data the server knows nothing of the claims it lost, so only a guard that all lockers
     * share and that covers all their expiries keeps one holder. A minute covers the default expiry.
     */
    static final Duration DEFAULT_RESTART_GUARD = Duration.ofSeconds(60);
    /** How long the release subscription outlives the last waiter (see {@link RedisWakeups}). */
    private static final Duration WAKEUP_LINGER = Duration.ofSeconds(5);

    private final UnifiedJedis client;
    private final boolean ownsClient;
    private final RedisKeys keys;
    private final String server;
    private final int replicas;
    private final Duration replicaTimeout;
    private final Duration restartGuard;
    /** What a holder counts on: the expiry less {@code serverClockSkew}, how far another server may be ahead. */
    private final Duration validity;
    private final Duration tombstoneTtl;
    private final EvictionCheck evictionCheck;
    private final Set<String> evictionWarnings = ConcurrentHashMap.newKeySet();
    private final byte[] ownField;
    /** The channel the scripts publish a lock's key on when it may be free and waiters are queued. */
    private final byte[] channel;
    /** How long a waiter's queue entry lives unless the waiter refreshes it (see acquire.lua). */
    private final Duration queueTtl;
    private final RedisWakeups wakeups;
    /**
     * The waits in progress (from startWaiting to the end of stopWaiting), each with what this backend keeps for it;
     * close() lets them leave their queues.
     */
    private final ConcurrentHashMap<Waiting, WaitState> waitsInProgress = new ConcurrentHashMap<>();
    /** The first half of every nonce: this instance, even among lockers sharing a rid. */
    private final String instance = HexFormat.of().toHexDigits(new SecureRandom().nextLong());
    /** The second half: counts this instance's acquires, so that a tombstone can cover all those up to one. */
    private final AtomicLong acquires = new AtomicLong();
    /** {@link #instance} as bytes: the shared prefix of every claim id this locker keeps (never changed). */
    private final byte[] instanceBytes = instance.getBytes(StandardCharsets.US_ASCII);
    /** A single server (one admission marker for all locks) rather than a Cluster (one per slot). */
    private final boolean standalone;
    private final byte[] guardKey;
    private final RedisOwners owners;
    /** The scripts' constant arguments, encoded once and passed as they are (see {@link RedisScript#arg}). */
    private final Rawable expiryArg;
    /** Our own restart guard, as the acquire script gets it until a longer recorded one refuses us. */
    private final Rawable ownGuardArg;
    /** How long a renewal keeps the guard record alive: as admit does, the longer of the guard and 1 s, plus 1 s. */
    private final Rawable guardRecordLifeArg;
    /**
     * The acquire script's guard argument: ours, or ours and the longest guard recorded for our prefix that refused
     * us. Only this process remembers that guard after a restart that loses the record.
     */
    private volatile Rawable guardArg;
    /** The longest restart guard (ms) this locker waits out after a restart: its own, or a longer one it met. */
    private volatile long waitedGuardMs;
    /** Held while {@link #waitedGuardMs} and {@link #guardArg} change, so that they always name the same guard. */
    private final Object guardChange = new Object();
    /** A single server with a guard above 0: renewals keep the guard record alive (see renew.lua). */
    private final boolean renewsGuardRecord;
    private final Rawable queueArg;
    private final Rawable fieldArg;
    private final Rawable scrubArg;
    private final Rawable evictionArg;
    /**
     * The longest restart guard or tombstone lifetime the scripts count exactly: 100 years, the longest expiry
     * ({@link LockerConfig#MAX_EXPIRY}, which LockerConfig itself enforces).
     */
    static final Duration MAX_DURATION = LockerConfig.MAX_EXPIRY;

    private final Rawable channelArg;
    private final Rawable guardKeyArg;
    private final Rawable guardRecordArg;

    private RedisLocker(Builder b, LockerConfig config, UnifiedJedis client, boolean ownsClient) {
        super(b);
        this.client = client;
        this.ownsClient = ownsClient;
        this.keys = new RedisKeys(b.keyPrefix);
        this.standalone = client instanceof RedisClient;
        this.guardKey = keys.guardKey();
        this.server = b.describe();
        this.replicas = b.replicas;
        this.replicaTimeout = b.replicaTimeout;
        this.restartGuard = b.restartGuard();
        this.validity = this.config.expiry().minus(b.serverClockSkew);
        this.tombstoneTtl = b.tombstoneTtl;
        this.evictionCheck = b.evictionCheck;
        this.ownField = ("c" + instance).getBytes(StandardCharsets.US_ASCII); // this instance's field
        this.owners = new RedisOwners(client, keys, this::withRetries, time::nanoTime, instance, this.config.rid(),
                this.config.host(), this.config.pid(), this.config.expiry());
        this.channel = keys.releaseChannel();
        this.queueTtl = Duration.ofMillis(Math.max(300, Math.min(this.config.expiry().toMillis(), 3_000)));
        this.expiryArg = RedisScript.arg(millis(this.config.expiry()));
        this.ownGuardArg = RedisScript.arg(millis(this.restartGuard));
        this.guardArg = ownGuardArg;
        this.guardRecordLifeArg = RedisScript.arg(Long.toString(Math.max(guardMillis(this.restartGuard), 1_000)
                + 1_000).getBytes(StandardCharsets.US_ASCII));
        this.waitedGuardMs = guardMillis(this.restartGuard);
        this.renewsGuardRecord = standalone && !this.restartGuard.isZero();
        this.queueArg = RedisScript.arg(millis(this.queueTtl));
        this.fieldArg = RedisScript.arg(ownField);
        this.scrubArg = RedisScript.arg(scrub());
        this.evictionArg = RedisScript.arg(evictionCheck.arg);
        this.channelArg = RedisScript.arg(channel);
        this.guardKeyArg = RedisScript.arg(guardKey);
        this.guardRecordArg = RedisScript.arg(keys.guardRecordKey());
        // the wake-ups' subscription gets a connection of its own, made with these options; with a client the caller
        // manages there are no options to make one with, and waiters poll instead
        AtomicLong subscriptionsMade = new AtomicLong();
        this.wakeups = ownsClient ? new RedisWakeups(() -> b.newConnection(subscriptionsMade.getAndIncrement()),
                channel, this.config.rid(), this::later, b.wakeupLinger, b.wakeupHealthCheck()) : null;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** A locker for {@code uri} (see {@link Builder#uri}) with {@code config}; the URI's options win. */
    public static RedisLocker open(String uri, LockerConfig config) {
        return parse(uri, config).build();
    }

    /**
     * The one parse of a {@code redis://} URI, for {@link #open} and {@link RedisLockerProvider#check}: a builder
     * set from it, nothing connected.
     */
    static Builder parse(String uri, LockerConfig config) {
        return builder().config(config).uri(uri);
    }

    /** The Redis key that holds every claim on {@code lock}, for operators and tests. */
    public byte[] redisKey(KeyColumn lock) {
        config.validate(lock);
        return keys.lockKey(lock);
    }

    /** Waits until no write of this locker's owner record is under way, for tests. */
    void awaitOwnerRecord() throws InterruptedException {
        owners.awaitWrites();
    }

    /** This locker's claim field in every lock's hash ({@code "c" + instance}), for tests. */
    byte[] claimField() {
        return ownField.clone();
    }

    /** Who this locker talks to, as named in its error messages (never with a password). */
    public String server() {
        return server;
    }

    /** The Jedis client, for tools and tests that need to look at the server; do not close it. */
    public UnifiedJedis client() {
        return client;
    }

    // ---- the hooks --------------------------------------------------------------------------------------------

    @Override
    protected ClaimStatus writeSingleLock(KeyColumn lock, LockOwner owner) {
        return writeSingleLock(lock, owner, null);
    }

    /** The acquire script; a waiter's attempt is queued when refused (see acquire.lua). */
    @Override
    protected ClaimStatus writeSingleLock(KeyColumn lock, LockOwner owner, Waiting waiting) {
        byte[] key = keys.lockKey(lock);
        long acquire = acquires.incrementAndGet();
        byte[] nonce = countedClaimId(instanceBytes, acquire);
        WaitState wait = waiting == null ? null : waitsInProgress.get(waiting);
        if (wait != null) {
            wait.beforeAttempt(lock); // a release published from now on wakes the pause after this attempt
        }
        // no marker nor guard record in Cluster mode: a second key would make the script fail (TRYAGAIN) while the
        // lock's slot migrates
        int keyCount = standalone ? 3 : 1;
        Rawable[] call = new Rawable[keyCount + (wait == null ? 7 : 9)]; // the waiter's two only when waiting
        call[0] = RedisScript.arg(key);
        if (standalone) {
            call[1] = guardKeyArg;
            call[2] = guardRecordArg;
        }
        call[keyCount] = fieldArg;
        call[keyCount + 1] = RedisScript.arg(nonce);
        call[keyCount + 2] = expiryArg;
        call[keyCount + 3] = RedisScript.arg(owners.claimPart(owner));
        call[keyCount + 4] = guardArg;
        call[keyCount + 5] = scrubArg;
        call[keyCount + 6] = evictionArg;
        if (wait != null) {
            call[keyCount + 7] = wait.waiterIdArg;
            call[keyCount + 8] = queueArg;
        }
        long started = time.nanoTime(); // the claim lives from the script's TIME, which comes after this reading
        boolean[] sent = {false}; // did any attempt possibly reach the server (not only the last one)?
        Object reply;
        long acks = -1;
        try {
            if (replicas > 0) {
                Object[] both = withRetries(() -> runAndWait(RedisScript.ACQUIRE, keyCount, call), sent);
                reply = both[0];
                acks = (Long) both[1];
            } else {
                reply = withRetries(() -> RedisScript.ACQUIRE.run(client, keyCount, call), sent);
            }
        } catch (JedisConnectionException | JedisClusterOperationException e) {
            if (sent[0] || mayHaveReachedTheServer(e)) { // the script may have run, or may still run: withdraw it
                withdraw(lock, key, nonce, "the acquire's outcome is unknown (" + e.getMessage() + ")");
            }
            throw e;
        } catch (JedisException e) {
            if (replicas > 0) { // e.g. WAIT refused (no +wait in the ACL) after the script may have granted
                withdraw(lock, key, nonce, "the acquire's WAIT failed (" + e.getMessage() + ")");
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
            ClaimStatus status = grantedCounted(instanceBytes, acquire, token, deadline(started, validity));
            if (replicas > 0 && acks < replicas) {
                withdraw(lock, key, nonce, "only " + acks + " of " + replicas + " replicas acknowledged it");
                throw new TemporaryLockingException("only " + acks + " of " + replicas + " replicas of " + server
                        + " acknowledged the claim within " + replicaTimeout + "; the claim was withdrawn", lock);
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
            long leftMs = (Long) r.get(1);
            long waitedMs = waitedGuardMs;
            String since = waitedMs == guardMillis(restartGuard) ? "restartGuard=" + restartGuard + " ago"
                    : Duration.ofMillis(waitedMs) + " ago (the restartGuard recorded for prefix " + keys.prefix() + " when it refused this "
                    + "locker's restartGuard=" + restartGuard + ")";
            log.info("Refusing a grant on {}: {} started less than {}: it may have lost claims; {} ms left", lock,
                    server, since, leftMs);
            throw new TemporaryLockingException(server + " started less than " + since + ": it may have lost claims "
                    + "in a restart, so no claim is granted for another " + leftMs + " ms (set restartGuard=0 for a "
                    + "server whose data survives restarts)", lock);
        }
        if (code == -4) {
            String policy = new String((byte[]) r.get(1), StandardCharsets.UTF_8);
            throw new PermanentLockingException(server + " may evict keys (maxmemory-policy " + policy + " with "
                    + "maxmemory " + r.get(2) + " bytes): an evicted lock key lets a second process acquire a lock "
                    + "that is still held. Set maxmemory-policy noeviction (or maxmemory 0) on every master, or "
                    + "evictionCheck=warn to accept the risk", lock);
        }
        if (code == -6) {
            Duration recorded = Duration.ofMillis(Long.parseLong(new String((byte[]) r.get(1),
                    StandardCharsets.US_ASCII)));
            waitOutAfterARestart(recorded);
            throw new PermanentLockingException("restartGuard=" + restartGuard + " differs from restartGuard="
                    + recorded + ", which the other lockers of prefix " + keys.prefix() + " use on " + server
                    + ": after a restart without data the shorter guard would grant locks whose holders still work. "
                    + "Give every locker sharing the server one restartGuard (the record lapses "
                    + (recorded.compareTo(Duration.ofSeconds(1)) > 0 ? recorded : Duration.ofSeconds(1)).plusSeconds(1)
                    + " after their last grant or renewal)", lock);
        }
        if (code == -3) { // only a late request meets its tombstone, and nobody waits for its reply
            throw new TemporaryLockingException("this acquire had been withdrawn on " + server + " before it arrived; "
                    + "nothing was granted", lock);
        }
        throw new PermanentLockingException("unexpected reply " + code + " from the acquire script on " + server, lock);
    }

    /**
     * Remembers a longer guard recorded for our prefix, to wait out after every later restart of the server. The
     * restart loses the record with the claims granted under it, so this locker's memory is what covers them.
     */
    private void waitOutAfterARestart(Duration recorded) {
        long ms = recorded.toMillis();
        boolean longer;
        synchronized (guardChange) {
            longer = ms > waitedGuardMs;
            if (longer) {
                waitedGuardMs = ms;
                guardArg = RedisScript.arg((guardMillis(restartGuard) + ":" + ms).getBytes(StandardCharsets.US_ASCII));
            }
        }
        if (longer) {
            log.info("restartGuard={} of this locker differs from restartGuard={} recorded for prefix {} on {}: after "
                    + "a restart of the server it waits out {}", restartGuard, recorded, keys.prefix(), server,
                    recorded);
        }
    }

    @Override
    protected ClaimStatus renewSingleLock(KeyColumn lock, ClaimStatus status) {
        byte[] key = keys.lockKey(lock);
        // with the guard record as a second key: keeping it alive with our claim costs no round trip
        int keyCount = renewsGuardRecord ? 2 : 1;
        Rawable[] call = renewsGuardRecord
                ? new Rawable[]{RedisScript.arg(key), guardRecordArg, fieldArg, RedisScript.arg(claimIdOf(status)),
                        expiryArg, scrubArg, guardRecordLifeArg}
                : new Rawable[]{RedisScript.arg(key), fieldArg, RedisScript.arg(claimIdOf(status)), expiryArg,
                        scrubArg};
        long started = time.nanoTime();
        List<?> r;
        long acks = -1;
        if (replicas > 0) {
            Object[] both = withRetries(() -> runAndWait(RedisScript.RENEW, keyCount, call));
            r = (List<?>) both[0];
            acks = (Long) both[1];
        } else {
            r = (List<?>) withRetries(() -> RedisScript.RENEW.run(client, keyCount, call));
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
                        + " acknowledged the renewal within " + replicaTimeout + "; the claim keeps its former deadline",
                        lock);
            }
            return status.renewed(deadline(started, validity));
        }
        throw notOurs(lock, r);
    }

    @Override
    protected ClaimStatus verifySingleLock(KeyColumn lock, ClaimStatus status) {
        byte[] key = keys.lockKey(lock);
        List<byte[]> args = List.of(ownField, status.claimId(),
                Long.toString(status.fencingToken()).getBytes(StandardCharsets.US_ASCII));
        List<?> r = (List<?>) withRetries(() -> RedisScript.VERIFY.run(client, key, args));
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

    @Override
    protected void deleteSingleLock(KeyColumn lock, ClaimStatus status) {
        byte[] key = keys.lockKey(lock);
        Rawable[] call = {RedisScript.arg(key), fieldArg, RedisScript.arg(claimIdOf(status)), channelArg};
        withRetries(() -> RedisScript.RELEASE.run(client, 1, call));
    }

    @Override
    protected Optional<LockOwner> readHolder(KeyColumn lock) {
        byte[] key = keys.lockKey(lock);
        List<?> r = (List<?>) withRetries(() -> RedisScript.HOLDER.run(client, key, List.of(scrub())));
        if ((Long) r.get(0) == 1) {
            return Optional.of(owners.owner((byte[]) r.get(2), (byte[]) r.get(1)));
        }
        return Optional.empty();
    }

    @Override
    protected boolean deleteAllClaims(KeyColumn lock) {
        byte[] key = keys.lockKey(lock);
        long n = (Long) withRetries(() -> RedisScript.FORCE.run(client, key, List.of(channel)));
        return n > 0;
    }

    @Override
    protected Optional<LockInfo> readHolding(KeyColumn lock) {
        byte[] key = keys.lockKey(lock);
        List<?> r = (List<?>) withRetries(() -> RedisScript.HOLDER.run(client, key, List.of(scrub())));
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
    @Override
    protected boolean deleteClaimWithToken(KeyColumn lock, long token, byte[] record) {
        List<byte[]> keyList = List.of(keys.lockKey(lock), keys.recordKey(lock));
        List<byte[]> args = List.of(channel, Long.toString(token).getBytes(StandardCharsets.US_ASCII),
                FORCED.getBytes(StandardCharsets.US_ASCII), record);
        List<byte[]> resent = List.of(args.get(0), args.get(1), args.get(2), args.get(3), ONE);
        boolean[] mayHaveBeenSent = new boolean[1];
        return (Long) withRetries(() -> RedisScript.FORCE.run(client, keyList, mayHaveBeenSent[0] ? resent : args),
                mayHaveBeenSent) == 1L;
    }

    /** SCAN and list.lua; see {@link RedisListing} for what it costs. */
    @Override
    protected LockPage listHeld(byte[] keyPrefix, int limit, String cursor) {
        return new RedisListing(client, keys, server, this::withRetries, owners).page(keyPrefix, limit, cursor);
    }

    // ---- records (run once) ---------------------------------------------------------------------------------------

    @Override
    protected Optional<byte[]> readRecord(KeyColumn lock, String name) {
        List<byte[]> keyList = List.of(keys.lockKey(lock), keys.recordKey(lock));
        List<byte[]> args = List.of(new byte[]{'r'}, name.getBytes(StandardCharsets.US_ASCII));
        Object r = withRetries(() -> RedisScript.RECORD.run(client, keyList, args));
        return r instanceof byte[] ? Optional.of((byte[]) r) : Optional.empty();
    }

    @Override
    protected void putRecord(KeyColumn lock, String name, byte[] value) {
        List<byte[]> keyList = List.of(keys.lockKey(lock), keys.recordKey(lock));
        List<byte[]> args = List.of(new byte[]{'f'}, name.getBytes(StandardCharsets.US_ASCII), value);
        withRetries(() -> RedisScript.RECORD.run(client, keyList, args));
    }

    /**
     * Atomic with the check that our claim (field, nonce, token) is alive: one script. With {@code replicas > 0} the
     * record counts only once that many replicas acknowledged it, like the claim it follows: otherwise a failover to
     * a replica that has the claim but not the record would run the job again after a run reported done.
     */
    @Override
    protected boolean writeRecord(KeyColumn lock, String name, byte[] value, ClaimStatus holding) {
        Rawable[] call = {RedisScript.arg(keys.lockKey(lock)), RedisScript.arg(keys.recordKey(lock)),
                RedisScript.arg(new byte[]{'w'}), RedisScript.arg(name.getBytes(StandardCharsets.US_ASCII)),
                RedisScript.arg(value), fieldArg, RedisScript.arg(holding.claimId()),
                RedisScript.arg(Long.toString(holding.fencingToken()).getBytes(StandardCharsets.US_ASCII))};
        if (replicas == 0) {
            return (Long) withRetries(() -> RedisScript.RECORD.run(client, 2, call)) == 1L;
        }
        Object[] both = withRetries(() -> runAndWait(RedisScript.RECORD, 2, call));
        long acks = (Long) both[1];
        if ((Long) both[0] == 1L && acks < replicas) {
            throw new TemporaryLockingException("the run's record was written on " + server + " but only " + acks
                    + " of " + replicas + " replicas acknowledged it within " + replicaTimeout + ": a failover may "
                    + "lose it, and the job then runs again", lock);
        }
        return (Long) both[0] == 1L;
    }

    // ---- waiting: a queue per lock, woken by releases ----------------------------------------------------------

    @Override
    protected boolean toldOfReleases() {
        return wakeups != null && time == TimeSource.system(); // the wake-ups wait on the real clock
    }

    @Override
    protected void startWaiting(Waiting waiting) {
        WaitState wait = new WaitState(waiting);
        waitsInProgress.put(waiting, wait);
        if (!toldOfReleases()) {
            return;
        }
        for (KeyColumn lock : waiting.locks()) {
            wait.watches.put(lock, wakeups.watch(keys.lockKey(lock)));
        }
    }

    @Override
    protected void awaitRelease(Waiting waiting, TemporaryLockingException refusal, long maxNanos)
            throws InterruptedException {
        if (isClosed()) {
            return; // the waiting loop ends; close() waits for the wait to leave its queues
        }
        WaitState wait = waitsInProgress.get(waiting);
        RedisWakeups.Watch watch = wait == null || refusal.lock() == null ? null : wait.watches.get(refusal.lock());
        if (watch == null) {
            super.awaitRelease(waiting, refusal, maxNanos);
            return;
        }
        if (refusal.holder() != null) {
            // held: listen for its release. Not before, so that a server refusing connections (maxclients) is not
            // asked for one more; the subscription, once made, wakes us, so a release published before it is seen
            wakeups.start();
        }
        // wake to refresh our queue entry before it lapses, should no release come
        long pause = Math.min(maxNanos, queueTtl.toNanos() / 3);
        if (!wakeups.subscribed()) {
            // not listening (the subscription is being made, or was lost): a release now would go unseen, so look
            // again after a back-off, as on backends without wake-ups. Once made, the subscription wakes us anyway
            pause = Math.min(pause, wait.nextPollNanos());
        }
        long seen = wait.seen(refusal.lock());
        watch.await(seen, pause);
    }

    @Override
    protected void stopWaiting(Waiting waiting, boolean acquired) {
        WaitState wait = waitsInProgress.get(waiting);
        if (wait == null) {
            return;
        }
        try {
            leaveQueues(waiting, wait, acquired);
        } finally {
            synchronized (waitsInProgress) {
                waitsInProgress.remove(waiting);
                waitsInProgress.notifyAll();
            }
        }
    }

    private void leaveQueues(Waiting waiting, WaitState wait, boolean acquired) {
        for (KeyColumn lock : wait.watches.keySet()) {
            wakeups.unwatch(keys.lockKey(lock)); // watches exist only when wakeups does
        }
        if (acquired) {
            return; // each grant removed our entry from its lock's queue
        }
        for (KeyColumn lock : waiting.locks()) {
            if (!wait.attempted.containsKey(lock)) {
                continue;
            }
            try { // one attempt, no retries: an entry we fail to remove lapses within queueTtl
                RedisScript.DEQUEUE.run(client, keys.lockKey(lock), List.of(wait.waiterId, channel));
            } catch (RuntimeException e) {
                log.debug("Could not leave the queue of {} at {} (it lapses within {}): {}", lock, server, queueTtl,
                        e.toString());
            }
        }
    }

    /** True while this locker listens for releases (while it waits, and for a linger after); for tests. */
    boolean wakeupsSubscribed() {
        return wakeups != null && wakeups.subscribed();
    }

    /** How many times this locker subscribed to the release channel; for tests. */
    long wakeupSubscriptions() {
        return wakeups == null ? 0 : wakeups.subscriptions();
    }

    /** The pause before the wake-ups' last attempt to subscribe again after a broken connection, in ms; for tests. */
    long wakeupReconnectPauseMillis() {
        return wakeups == null ? 0 : wakeups.lastPauseMillis();
    }

    /** How many release messages about a lock one of its transactions waited for this locker received; for tests. */
    long wakeupMessages() {
        return wakeups == null ? 0 : wakeups.messages();
    }

    /** The queue identity of one wait and what it last saw of each lock's releases. */
    private final class WaitState {
        final byte[] waiterId;
        final Rawable waiterIdArg;
        final ConcurrentHashMap<KeyColumn, RedisWakeups.Watch> watches = new ConcurrentHashMap<>();
        final ConcurrentHashMap<KeyColumn, Long> attempted = new ConcurrentHashMap<>();
        /** The pause while not listening for releases: doubles from 2 ms to 200 ms over one wait. */
        private long pollMillis = 1; // one waiting thread

        long nextPollNanos() {
            pollMillis = Math.min(pollMillis * 2, 200);
            return TimeUnit.MILLISECONDS.toNanos(pollMillis);
        }

        WaitState(Waiting waiting) {
            this.waiterId = (instance + HexFormat.of().toHexDigits(waiting.id())).getBytes(StandardCharsets.US_ASCII);
            this.waiterIdArg = RedisScript.arg(waiterId);
        }

        void beforeAttempt(KeyColumn lock) {
            RedisWakeups.Watch w = watches.get(lock);
            attempted.put(lock, w == null ? 0L : w.releases());
        }

        long seen(KeyColumn lock) {
            return attempted.getOrDefault(lock, 0L);
        }
    }

    @Override
    protected void closeBackend() {
        owners.close();
        if (wakeups != null) {
            wakeups.close(); // wakes every waiter: each sees the locker closed and leaves its queues
        }
        if (ownsClient) {
            awaitWaitsEnded();
            client.close();
        }
    }

    /**
     * Waits, for at most queueTtl, until the waits in progress left their queues (DEQUEUE, which tells the waiters
     * behind them when the lock is free): on a closed client they could not, and their entries would hold the next
     * waiter off a free lock until they lapse (queueTtl), as a dead process's do. Woken by close, a waiter leaves after
     * its current attempt, if any; one that takes longer leaves its entries to lapse.
     */
    private void awaitWaitsEnded() {
        long end = System.nanoTime() + queueTtl.toNanos();
        boolean interrupted = false; // shutdown code often runs interrupted: the wait is bounded, so it is kept
        try {
            synchronized (waitsInProgress) {
                while (!waitsInProgress.isEmpty()) {
                    long left = end - System.nanoTime();
                    if (left <= 0) {
                        log.debug("Closing with {} wait(s) still under way: their queue entries lapse within {}",
                                waitsInProgress.size(), queueTtl);
                        return;
                    }
                    try {
                        TimeUnit.NANOSECONDS.timedWait(waitsInProgress, left);
                    } catch (InterruptedException e) {
                        interrupted = true;
                    }
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    protected LockingException translate(RuntimeException e, KeyColumn lock, String action) {
        if (e instanceof LockingException || !(e instanceof JedisException)) {
            return super.translate(e, lock, action);
        }
        return classify((JedisException) e, lock, action, server);
    }

    /** Maps a Jedis failure by what it means (see {@link RedisFailures}); the message names the server. */
    static LockingException classify(JedisException e, KeyColumn lock, String action, String server) {
        return RedisFailures.classify(e, lock, action, server);
    }

    // ---- helpers ----------------------------------------------------------------------------------------------

    /** A script and WAIT, pipelined on one connection so that WAIT counts this write's replication. */
    private Object[] runAndWait(RedisScript lua, int keyCount, Rawable[] keysAndArgs) {
        List<byte[]> keyList = new ArrayList<>();
        List<byte[]> args = new ArrayList<>();
        for (int i = 0; i < keysAndArgs.length; i++) {
            (i < keyCount ? keyList : args).add(keysAndArgs[i].getRaw());
        }
        byte[] key = keyList.get(0);
        for (int attempt = 0; ; attempt++) {
            Response<Object> script;
            Response<Long> acks;
            try (AbstractPipeline p = client.pipelined()) {
                script = attempt == 0
                        ? p.evalsha(lua.shaBytes(), keyList, args)
                        : p.eval(lua.source(), keyList, args);
                acks = p.waitReplicas(key, replicas, replicaTimeout.toMillis());
                p.sync();
            }
            try {
                return new Object[]{script.get(), acks.get()};
            } catch (JedisNoScriptException e) {
                if (attempt > 0) {
                    throw e;
                }
            }
        }
    }

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
    private void withdraw(KeyColumn lock, byte[] key, byte[] nonce, String why) {
        List<byte[]> args = List.of(ownField, nonce, millis(tombstoneTtl), millis(config.expiry()), scrub(), channel);
        try {
            Object removed = withRetries(() -> RedisScript.WITHDRAW.run(client, key, args));
            log.debug("Withdrew our acquire on {} at {} (a claim was found: {}): {}", lock, server, removed, why);
        } catch (RuntimeException e) {
            log.warn("Could not withdraw our acquire on {} at {} ({}); retrying in the background for up to {} (until "
                    + "then a claim it granted blocks the lock): {}", lock, server, why, config.expiry(), e.toString());
            withdrawLater(lock, key, args, time.nanoTime() + config.expiry().toNanos());
        }
    }

    /** Retries a withdrawal on the locker's background thread until it succeeds or the claim would have expired. */
    private void withdrawLater(KeyColumn lock, byte[] key, List<byte[]> args, long untilNanos) {
        if (time.nanoTime() - untilNanos >= 0 || isClosed()) {
            return;
        }
        later(() -> {
            try {
                RedisScript.WITHDRAW.run(client, key, args);
                log.info("Withdrew our acquire on {} at {} on a later attempt", lock, server);
            } catch (RuntimeException again) {
                withdrawLater(lock, key, args, untilNanos);
            }
        }, Duration.ofMillis(200));
    }

    /** False only when the connection failed before a command could be sent (refused, or connect timed out). */
    private static boolean mayHaveReachedTheServer(JedisException e) {
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof java.net.ConnectException || (t instanceof SocketTimeoutException
                    && String.valueOf(t.getMessage()).toLowerCase(java.util.Locale.ROOT).contains("connect"))) {
                return false;
            }
        }
        return true;
    }

    /**
     * Runs {@code op}, again on a fresh connection when the connection broke (a server restart leaves the pool's
     * idle connections dead), at most {@link LockerConfig#retries()} times in all. Every script is idempotent for
     * its caller: a repeated acquire (same nonce) replaces the claim its earlier attempt wrote, a repeated release or
     * renew finds the same state.
     */
    private <T> T withRetries(Supplier<T> op) {
        return withRetries(op, new boolean[1]);
    }

    /** As above; {@code mayHaveBeenSent[0]} becomes true when any failed attempt may have reached the server. */
    private <T> T withRetries(Supplier<T> op, boolean[] mayHaveBeenSent) {
        int attempts = Math.max(1, config.retries());
        for (int i = 1; ; i++) {
            try {
                return op.get();
            } catch (JedisConnectionException e) {
                if (mayHaveReachedTheServer(e)) {
                    mayHaveBeenSent[0] = true;
                }
                if (i >= attempts || RedisFailures.isTimeout(e) || !(client instanceof RedisClient)) {
                    throw e;
                }
                ((RedisClient) client).getPool().clear();
                log.debug("Connection to {} broke ({}); retrying on a fresh connection", server, e.toString());
            }
        }
    }

    /** {@code <instance><counter>}, 16 + 16 hex digits: fixed width, so the script compares counters as strings. */
    private byte[] scrub() {
        return config.scrubExpired() ? ONE : ZERO;
    }

    /** A guard in whole ms, as the scripts get it ({@link #millis}). */
    private static long guardMillis(Duration guard) {
        return Long.parseLong(new String(millis(guard), StandardCharsets.US_ASCII));
    }

    /**
     * A duration in whole milliseconds, rounded up: the scripts keep claims, the restart guard, tombstones and queue
     * entries for whole milliseconds, and none may end before the duration the client counts with (a claim rounded
     * down lapsed on the server while its holder's lease was still valid: an expiry of 1.9 ms was written as 1 ms, one
     * under a millisecond as 0).
     */
    static byte[] millis(Duration d) {
        long ms = d.toMillis(); // rounded down (toward the past for a negative one)
        if (d.compareTo(Duration.ofMillis(ms)) > 0) {
            ms++;
        }
        return Long.toString(Math.max(0, ms)).getBytes(StandardCharsets.US_ASCII);
    }


    @Override
    public String toString() {
        return "RedisLocker[rid=" + config.rid() + ", " + server + ", prefix=" + keys.prefix() + "]";
    }

    /**
     * What an acquire does on a server that may evict lock keys. Default {@link #FAIL}: an evicted key of a held lock
     * lets a second process acquire it (fencing tokens still rise, but mutual exclusion is gone), with no trace on
     * either side, so a misconfigured server is refused before it can do that.
     */
    public enum EvictionCheck {
        /** No grant: {@link PermanentLockingException} naming the policy (and without {@code +info}, NOPERM). */
        FAIL("fail"),
        /** Grant, and log a warning once per locker and condition. */
        WARN("warn"),
        /** Do not look (no {@code INFO memory} per acquire). */
        OFF("off");

        final byte[] arg;

        EvictionCheck(String arg) {
            this.arg = arg.getBytes(StandardCharsets.US_ASCII);
        }

        /** {@code fail}, {@code warn} or {@code off}, in any case. */
        static EvictionCheck parse(String s) {
            for (EvictionCheck c : values()) {
                if (c.name().equalsIgnoreCase(s)) {
                    return c;
                }
            }
            throw new IllegalArgumentException("evictionCheck must be fail, warn or off, was '" + s + "'");
        }
    }

    // ---- builder ----------------------------------------------------------------------------------------------

    /**
     * Options of a {@link RedisLocker}, with safe defaults. Every option can also be given in a URI (see
     * {@link #uri}); setters called after {@code uri(...)} override it.
     */
    public static final class Builder extends LockerBuilder<Builder> {
        private final List<HostAndPort> nodes = new ArrayList<>();
        private Boolean cluster;
        private int database;
        private String user;
        private String password;
        private boolean tls;
        private boolean verifyHostname = true;
        private SSLSocketFactory sslSocketFactory;
        private Path truststore;
        private char[] truststorePassword;
        private Path keystore;
        private char[] keystorePassword;
        private Duration connectTimeout = Duration.ofSeconds(2);
        private Duration socketTimeout = Duration.ofSeconds(2);
        private int poolSize = 8;
        private String keyPrefix = "locker:";
        private int replicas;
        private Duration replicaTimeout = Duration.ofSeconds(1);
        private Duration restartGuard;
        private Duration serverClockSkew = Duration.ZERO;
        private Duration tombstoneTtl = DEFAULT_TOMBSTONE_TTL;
        private EvictionCheck evictionCheck = EvictionCheck.FAIL;
        private String clientName;
        private Duration wakeupLinger = WAKEUP_LINGER;
        private Duration wakeupHealthCheck;
        private final List<Consumer<LockerConfig.Builder>> configOverrides = new ArrayList<>();
        private UnifiedJedis client;

        private Builder() {
        }

        /**
         * Reads a {@code redis://} or {@code rediss://} URI:
         * {@code redis[s]://[user[:password]@]host[:port][,host:port...][/database][?option=value&...]}.
         * See {@link RedisUri} for the options.
         */
        public Builder uri(String uri) {
            RedisUri.apply(uri, this);
            return this;
        }

        /** A server (standalone) or a seed node (Cluster); may be called several times. Default localhost:6379. */
        public Builder node(String host, int port) {
            Objects.requireNonNull(host, "host must not be null");
            if (port < 1 || port > 65535) {
                throw new IllegalArgumentException("port must be 1..65535, was " + port);
            }
            nodes.add(new HostAndPort(host, port));
            return this;
        }

        /** Forgets the nodes given so far. */
        public Builder clearNodes() {
            nodes.clear();
            return this;
        }

        /** Redis Cluster mode; default: true when several nodes are given, else false. */
        public Builder cluster(boolean on) {
            this.cluster = on;
            return this;
        }

        public Builder database(int db) {
            if (db < 0) {
                throw new IllegalArgumentException("database must be >= 0, was " + db);
            }
            this.database = db;
            return this;
        }

        /** ACL user name; null for the default user. */
        public Builder user(String u) {
            this.user = u;
            return this;
        }

        public Builder password(String p) {
            this.password = p;
            return this;
        }

        /**
         * TLS (the {@code rediss} scheme). The server's certificate is checked against the JVM's default trust
         * store, or {@link #truststore}, or whatever {@link #sslSocketFactory} decides.
         */
        public Builder tls(boolean on) {
            this.tls = on;
            return this;
        }

        /** Whether TLS checks that the server's certificate names the host; default true. */
        public Builder verifyHostname(boolean on) {
            this.verifyHostname = on;
            return this;
        }

        /** A trust store file (PKCS12 or JKS) holding the CA or certificate of the server; turns TLS on. */
        public Builder truststore(Path file, String password) {
            this.truststore = Objects.requireNonNull(file, "truststore must not be null");
            this.truststorePassword = password == null ? null : password.toCharArray();
            this.tls = true;
            return this;
        }

        /** A key store file with this client's certificate, for servers that require client certificates. */
        public Builder keystore(Path file, String password) {
            this.keystore = Objects.requireNonNull(file, "keystore must not be null");
            this.keystorePassword = password == null ? null : password.toCharArray();
            this.tls = true;
            return this;
        }

        /** Full control of the TLS socket (trust, client certificates); wins over truststore and keystore. */
        public Builder sslSocketFactory(SSLSocketFactory f) {
            this.sslSocketFactory = f;
            this.tls = true;
            return this;
        }

        public Builder connectTimeout(Duration d) {
            this.connectTimeout = positive(d, "connectTimeout");
            return this;
        }

        public Builder socketTimeout(Duration d) {
            this.socketTimeout = positive(d, "socketTimeout");
            return this;
        }

        /** Sets both the connect and the socket timeout. */
        public Builder timeout(Duration d) {
            return connectTimeout(d).socketTimeout(d);
        }

        /** Connections per server; default 8. */
        public Builder poolSize(int n) {
            if (n < 1) {
                throw new IllegalArgumentException("poolSize must be at least 1, was " + n);
            }
            this.poolSize = n;
            return this;
        }

        /** Prefix of every key; default {@code "locker:"}; must not contain braces. */
        public Builder keyPrefix(String p) {
            this.keyPrefix = RedisKeys.validatePrefix(p);
            return this;
        }

        /** A claim (and each renewal) counts only once this many replicas acknowledged it ({@code WAIT}); default 0. */
        public Builder replicas(int n) {
            if (n < 0) {
                throw new IllegalArgumentException("replicas must be >= 0, was " + n);
            }
            this.replicas = n;
            return this;
        }

        /** How long to wait for the replicas' acknowledgements; default 1 s. */
        public Builder replicaTimeout(Duration d) {
            this.replicaTimeout = positive(d, "replicaTimeout");
            return this;
        }

        /**
         * No claim is granted while the server's uptime is below this (it may have restarted and lost claims);
         * renewals and releases go on. Default 60 s, whatever the expiry: every locker sharing a server (and key
         * prefix) must use the same guard, and each locker's expiry must be at most the guard (checked when built;
         * hold longer with keep-alive, which renews within the expiry). A single server records the guard in use,
         * and refuses a locker asking with another one. Zero turns the guard off (for servers whose data survives
         * restarts, e.g. AOF with {@code appendfsync always}). The guard reads {@code INFO server} inside the acquire
         * script, so an ACL user needs {@code +info}; with {@code +lastsave +get +set} too, it reads it about once a
         * second instead of at every grant (the admission marker, see the README).
         */
        public Builder restartGuard(Duration d) {
            Objects.requireNonNull(d, "restartGuard must not be null");
            if (d.isNegative()) {
                throw new IllegalArgumentException("restartGuard must not be negative, was " + d);
            }
            this.restartGuard = d;
            return this;
        }

        /**
         * How far apart the clocks of the servers that may judge a claim can be: the master that wrote it, and a
         * replica a failover promotes or a Cluster node a slot migrates to. Default 0, right for one server without
         * replicas. The claim's expiry is an instant of the writing master's clock; a server ahead by this much ends it
         * this much sooner, so each holder's validity is the expiry less this bound. Must be under half the expiry
         * (keep-alive renews every third of it). {@code locker doctor} measures the clocks it can reach.
         */
        public Builder serverClockSkew(Duration d) {
            Objects.requireNonNull(d, "serverClockSkew must not be null");
            if (d.isNegative()) {
                throw new IllegalArgumentException("serverClockSkew must not be negative, was " + d);
            }
            this.serverClockSkew = d;
            return this;
        }

        /**
         * What an acquire does on a server that may evict keys ({@code maxmemory} above 0 and a
         * {@code maxmemory-policy} other than {@code noeviction}; volatile policies included, since lock keys carry
         * the safety-net {@code PEXPIRE}). Default {@link EvictionCheck#FAIL}. The check runs inside the acquire
         * script, on the master that holds the lock's key (so per master in a Cluster, and it follows a
         * {@code CONFIG SET} within a second), and needs {@code +info}.
         */
        public Builder evictionCheck(EvictionCheck check) {
            this.evictionCheck = Objects.requireNonNull(check, "evictionCheck must not be null");
            return this;
        }

        /**
         * How long a withdrawn acquire's tombstone stays in the lock's hash; default 20 minutes. An acquire whose
         * outcome the client does not know (it timed out, or the connection broke after sending) is withdrawn; if
         * its request reaches the server only later (held up in the network or a proxy), the tombstone makes it
         * grant nothing. A request later still would grant a claim nobody waits for, which blocks the lock until it
         * expires (no second holder, no lower token: a liveness loss, not a safety one). The default outlasts the
         * ~15.5 minutes Linux keeps retransmitting unacknowledged data ({@code tcp_retries2=15}); raise it behind a
         * proxy that may hold requests longer. It costs one small hash field per locker instance and lock, and keeps
         * that lock's key alive as long.
         */
        public Builder tombstoneTtl(Duration d) {
            this.tombstoneTtl = positive(d, "tombstoneTtl");
            return this;
        }

        public Builder clientName(String name) {
            this.clientName = name;
            return this;
        }

        /** How long the release subscription outlives the last waiter; default 5 s (for tests). */
        Builder wakeupLinger(Duration d) {
            this.wakeupLinger = positive(d, "wakeupLinger");
            return this;
        }

        /**
         * How often the release subscription must answer, and how long it has to (see {@link RedisWakeups}); default
         * the socket timeout, at least 2 s (for tests).
         */
        Builder wakeupHealthCheck(Duration d) {
            this.wakeupHealthCheck = positive(d, "wakeupHealthCheck");
            return this;
        }

        Duration wakeupHealthCheck() {
            if (wakeupHealthCheck != null) {
                return wakeupHealthCheck;
            }
            return socketTimeout.compareTo(Duration.ofSeconds(2)) > 0 ? socketTimeout : Duration.ofSeconds(2);
        }

        /** The restart guard this builder's locker would use: the one set, or {@link #DEFAULT_RESTART_GUARD}. */
        Duration restartGuard() {
            return restartGuard != null ? restartGuard : DEFAULT_RESTART_GUARD;
        }

        /** The options a deployment check judges ({@link RedisDoctor}): restart guard (null: the default), replicas. */
        Duration restartGuardOption() {
            return restartGuard;
        }

        Duration serverClockSkewOption() {
            return serverClockSkew;
        }

        int replicasOption() {
            return replicas;
        }

        String keyPrefixOption() {
            return keyPrefix;
        }

        EvictionCheck evictionCheckOption() {
            return evictionCheck;
        }

        /** A change to the locker config that comes from the URI (expiry, retries...); applied over {@link #config}. */
        Builder configOverride(Consumer<LockerConfig.Builder> change) {
            configOverrides.add(change);
            return this;
        }

        /** Uses a client you manage (it is not closed with the locker); connection options are then ignored. */
        public Builder client(UnifiedJedis c) {
            this.client = c;
            return this;
        }

        public RedisLocker build() {
            LockerConfig cfg = validated();
            if (client != null) {
                return new RedisLocker(this, cfg, client, false);
            }
            return new RedisLocker(this, cfg, newClient(cfg.retries()), true);
        }

        /**
         * Checks what can be checked without a server and returns the configuration the locker would run with.
         *
         * @throws IllegalArgumentException naming what is wrong
         */
        LockerConfig validated() {
            LockerConfig cfg = mergedConfig();
            // the scripts count server microseconds in Lua doubles (exact below 2^53, about the year 2255) and set the
            // key's safety-net TTL to twice the expiry: a longer duration would overflow them (an expiry of
            // Long.MAX_VALUE ms made PEXPIRE delete the key of the lock it granted), so it is refused before any I/O;
            // LockerConfig refuses an expiry over 100 years for every backend, the durations of Redis's own are here
            if (restartGuard != null) {
                atMostCenturies(restartGuard, "restartGuard");
            }
            atMostCenturies(tombstoneTtl, "tombstoneTtl");
            // Tokens need no allowance of their own: every PEXPIRE keeps the lock's key (and the last token in it) at
            // least one expiry past the token's issue, so a server behind by less than that never forgets it too early
            if (serverClockSkew.multipliedBy(2).compareTo(cfg.expiry()) >= 0) {
                throw new IllegalArgumentException("serverClockSkew " + serverClockSkew + " must be less than half the "
                        + "expiry " + cfg.expiry() + ": a holder counts on the expiry less the skew, and keep-alive "
                        + "renews every third of the expiry");
            }
            Duration guard = restartGuard();
            if (!guard.isZero() && cfg.expiry().compareTo(guard) > 0) {
                // a claim that outlives the guard outlives a restart that lost it: a second locker is granted its lock
                // once the guard is over, while this holder still counts on its claim
                throw new IllegalArgumentException("expiry " + cfg.expiry() + " is longer than restartGuard " + guard
                        + ": after a restart without data a lock could be granted again while its holder still works. "
                        + "Use an expiry of at most restartGuard (keep-alive renews longer holds), or raise "
                        + "restartGuard on every locker sharing the server, or set restartGuard=0 where claims survive "
                        + "restarts (appendonly yes, appendfsync always)");
            }
            if (client == null) {
                checkTopology();
            }
            return cfg;
        }

        /** Cluster mode and the database agree with the nodes given (a client of the caller's own has its own). */
        private void checkTopology() {
            List<HostAndPort> targets = nodes.isEmpty() ? List.of(new HostAndPort("localhost", 6379)) : nodes;
            boolean clusterMode = cluster != null ? cluster : targets.size() > 1;
            if (!clusterMode && targets.size() > 1) {
                throw new IllegalArgumentException("several nodes " + targets + " given but cluster mode is off");
            }
            if (clusterMode && database != 0) {
                throw new IllegalArgumentException("Redis Cluster has only database 0, not " + database);
            }
        }

        private static void atMostCenturies(Duration d, String name) {
            if (d.compareTo(MAX_DURATION) > 0) {
                throw new IllegalArgumentException(name + " must be at most " + MAX_DURATION.toDays() / 365
                        + " years on Redis (its scripts count server microseconds in doubles), was " + d);
            }
        }

        /** The config with the URI's overrides (expiry, retries...) applied. */
        @Override
        protected LockerConfig effectiveConfig() {
            return mergedConfig();
        }

        LockerConfig mergedConfig() {
            if (configOverrides.isEmpty()) {
                return config;
            }
            LockerConfig.Builder b = config.toBuilder();
            configOverrides.forEach(change -> change.accept(b));
            return b.build();
        }

        /** A Jedis client with these connection options (the locker's own, or a tool's); the caller closes it. */
        UnifiedJedis newClient(int retries) {
            return newClient(retries, poolSize);
        }

        /** Like {@link #newClient(int)}, with a pool of {@code connections}. */
        UnifiedJedis newClient(int retries, int connections) {
            checkTopology();
            List<HostAndPort> targets = nodes.isEmpty() ? List.of(new HostAndPort("localhost", 6379)) : nodes;
            boolean clusterMode = cluster != null ? cluster : targets.size() > 1;
            Duration effectiveSocketTimeout = effectiveSocketTimeout();
            DefaultJedisClientConfig.Builder cc = clientConfig(clusterMode);
            ConnectionPoolConfig pool = new ConnectionPoolConfig();
            pool.setMaxTotal(connections);
            pool.setMaxIdle(connections);
            pool.setMinIdle(0);
            pool.setMaxWait(connectTimeout.plus(effectiveSocketTimeout)); // a full pool fails instead of hanging
            pool.setTestOnBorrow(false); // one round trip per phase; broken connections are retried instead
            UnifiedJedis c;
            try {
                if (clusterMode) {
                    c = RedisClusterClient.builder()
                            .nodes(new LinkedHashSet<>(targets))
                            .clientConfig(cc.build())
                            .poolConfig(pool)
                            .maxAttempts(Math.max(2, retries))
                            .maxTotalRetriesDuration(effectiveSocketTimeout.multipliedBy(Math.max(2, retries)))
                            .build();
                } else {
                    c = RedisClient.builder()
                            .hostAndPort(targets.get(0))
                            .clientConfig(cc.build())
                            .poolConfig(pool)
                            .build();
                }
            } catch (JedisException e) {
                throw classify(e, null, "connecting", describe());
            }
            return c;
        }

        /**
         * One connection, made now, with these options, outside any pool (the release subscription's: its owner closes
         * it, or its socket to end a read blocked on it): to the single server, or to the {@code n}-th of the Cluster's
         * nodes given, in turn (a message published on any node reaches the subscribers of every one).
         */
        Connection newConnection(long n) {
            List<HostAndPort> targets = nodes.isEmpty() ? List.of(new HostAndPort("localhost", 6379)) : nodes;
            boolean clusterMode = cluster != null ? cluster : targets.size() > 1;
            return new Connection(targets.get((int) Math.floorMod(n, (long) targets.size())),
                    clientConfig(clusterMode).build());
        }

        private Duration effectiveSocketTimeout() {
            return replicas > 0 ? socketTimeout.plus(replicaTimeout) : socketTimeout;
        }

        private DefaultJedisClientConfig.Builder clientConfig(boolean clusterMode) {
            DefaultJedisClientConfig.Builder cc = DefaultJedisClientConfig.builder()
                    .connectionTimeoutMillis(toIntMillis(connectTimeout))
                    .socketTimeoutMillis(toIntMillis(effectiveSocketTimeout()))
                    .user(user)
                    .password(password)
                    .clientName(clientName);
            if (!clusterMode) {
                cc.database(database);
            }
            if (tls) {
                configureTls(cc);
            }
            return cc;
        }

        private void configureTls(DefaultJedisClientConfig.Builder cc) {
            if (sslSocketFactory != null) {
                legacyTls(cc);
                return;
            }
            SslOptions.Builder ssl = SslOptions.builder()
                    .sslVerifyMode(verifyHostname ? SslVerifyMode.FULL : SslVerifyMode.CA);
            if (truststore != null) {
                ssl.truststore(truststore.toFile(), truststorePassword);
            }
            if (keystore != null) {
                ssl.keystore(keystore.toFile(), keystorePassword);
            }
            cc.sslOptions(ssl.build());
        }

        /** Jedis's older TLS settings: the only way to hand it a ready socket factory. */
        @SuppressWarnings("deprecation")
        private void legacyTls(DefaultJedisClientConfig.Builder cc) {
            cc.ssl(true).sslSocketFactory(sslSocketFactory);
            // explicit parameters either way: without any, Jedis turns hostname verification on by itself
            SSLParameters params = new SSLParameters();
            params.setEndpointIdentificationAlgorithm(verifyHostname ? "HTTPS" : null);
            cc.sslParameters(params);
        }

        String describe() {
            List<HostAndPort> targets = nodes.isEmpty() ? List.of(new HostAndPort("localhost", 6379)) : nodes;
            boolean clusterMode = cluster != null ? cluster : targets.size() > 1;
            StringBuilder sb = new StringBuilder(tls ? "rediss://" : "redis://");
            if (user != null) {
                sb.append(user).append('@');
            }
            for (int i = 0; i < targets.size(); i++) {
                sb.append(i == 0 ? "" : ",").append(targets.get(i));
            }
            if (clusterMode) {
                sb.append(" (cluster)");
            } else if (database != 0) {
                sb.append('/').append(database);
            }
            return "Redis " + sb;
        }

        private static int toIntMillis(Duration d) {
            return (int) Math.min(Integer.MAX_VALUE, Math.max(1, d.toMillis()));
        }

        private static Duration positive(Duration d, String name) {
            Objects.requireNonNull(d, name + " must not be null");
            if (d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException(name + " must be positive, was " + d);
            }
            return d;
        }
    }
}
