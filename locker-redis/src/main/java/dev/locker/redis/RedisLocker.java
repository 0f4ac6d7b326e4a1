package dev.locker.redis;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockingException;
import dev.locker.api.PermanentLockingException;
import dev.locker.api.TemporaryLockingException;
import dev.locker.engine.ClaimStatus;
import dev.locker.engine.LockerEngine;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisException;

import java.nio.charset.StandardCharsets;
import java.time.Duration;

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
 *       {@code replicas} acknowledgements from the replica that will be promoted (a single server's guard counts
 *       from its data's lineage, so a replica promoted after resyncing from a restarted master waits it out), and {@code serverClockSkew} at least the clocks' difference (taken off
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
 * One nonce grants at most one claim. A later copy of an acquire answers the live claim's token unchanged, and grants
 * nothing once that claim ended; a claim whose acquire was sent twice ends by withdrawal (see docs/safety.md).
 *
 * <p>Claims live in one field per locker instance ({@code "c" + instance}, 16 random hex digits, so lockers sharing
 * a rid differ), told apart by a nonce per claim: the instance and a counter of its acquires. A live claim in that
 * field with another nonce belongs to another transaction and is never overwritten, renewed or deleted by this one.
 * A claim is compact (about 190 bytes of server memory per held lock): the owner's rid, host, pid, thread and reason
 * are stored once per locker in its owner record ({@link RedisOwners}), and a claim refers to them.
 */
public final class RedisLocker extends LockerEngine<ClaimStatus> {

    /** The driver, made by the engine's constructor; set from there, before anything else can reach it. */
    private final RedisDriver driver;

    /** A locker with the builder's options on {@code client}, which it closes when {@code ownsClient}. */
    static RedisLocker create(RedisLockerBuilder b, UnifiedJedis client, boolean ownsClient) {
        return new RedisLocker(b, client, ownsClient, new EngineCalls());
    }

    private RedisLocker(RedisLockerBuilder b, UnifiedJedis client, boolean ownsClient, EngineCalls calls) {
        super(b, config -> calls.made = new RedisDriver(b, config, client, ownsClient, calls));
        this.driver = calls.made;
        calls.locker = this;
    }

    /** The engine's background thread and closed state, for the driver; bound once the engine is built. */
    private static final class EngineCalls implements RedisDriver.Engine {
        private volatile RedisLocker locker;
        /** The driver the engine's constructor made, handed back to the locker's constructor. */
        private RedisDriver made;

        @Override
        public void later(Runnable task, Duration delay) {
            locker.later(task, delay);
        }

        @Override
        public boolean isClosed() {
            RedisLocker l = locker;
            return l != null && l.isClosed();
        }
    }

    public static RedisLockerBuilder builder() {
        return new RedisLockerBuilder();
    }

    /** A locker for {@code uri} (see {@link RedisLockerBuilder#uri}) with {@code config}; the URI's options win. */
    public static RedisLocker open(String uri, LockerConfig config) {
        return parse(uri, config).build();
    }

    /**
     * The one parse of a {@code redis://} URI, for {@link #open} and {@link RedisLockerProvider#check}: a builder
     * set from it, nothing connected.
     */
    static RedisLockerBuilder parse(String uri, LockerConfig config) {
        return builder().config(config).uri(uri);
    }

    /** The Redis key that holds every claim on {@code lock}, for operators and tests. */
    public byte[] redisKey(KeyColumn lock) {
        config.validate(lock);
        return driver.keys().lockKey(lock);
    }

    /** Waits until no write of this locker's owner record is under way, for tests. */
    void awaitOwnerRecord() throws InterruptedException {
        driver.awaitOwnerRecord();
    }

    /** This locker's claim field in every lock's hash ({@code "c" + instance}), for tests. */
    byte[] claimField() {
        return driver.claimField();
    }

    /** Who this locker talks to, as named in its error messages (never with a password). */
    public String server() {
        return driver.server();
    }

    /** The Jedis client, for tools and tests that need to look at the server; do not close it. */
    public UnifiedJedis client() {
        return driver.client();
    }

    /** True while this locker listens for releases (while it waits, and for a linger after); for tests. */
    boolean wakeupsSubscribed() {
        return driver.queue().wakeupsSubscribed();
    }

    /** How many times this locker subscribed to the release channel; for tests. */
    long wakeupSubscriptions() {
        return driver.queue().wakeupSubscriptions();
    }

    /** The pause before the wake-ups' last attempt to subscribe again after a broken connection, in ms; for tests. */
    long wakeupReconnectPauseMillis() {
        return driver.queue().wakeupReconnectPauseMillis();
    }

    /** How many release messages about a lock one of its transactions waited for this locker received; for tests. */
    long wakeupMessages() {
        return driver.queue().wakeupMessages();
    }

    /** How many SUBSCRIBE commands for a lock's channel this locker sent (for tests). */
    long wakeupChannelSubscriptions() {
        return driver.queue().wakeupChannelSubscriptions();
    }

    /** How many messages this locker's wake-up connection received, about any lock (for tests). */
    long wakeupMessagesReceived() {
        return driver.queue().wakeupMessagesReceived();
    }

    /** True while this locker listens for the releases of {@code lock} (for tests). */
    boolean wakeupListening(KeyColumn lock) {
        return driver.queue().wakeupListening(lock);
    }

    /** Maps a Jedis failure by what it means (see {@link RedisFailures}); the message names the server. */
    static LockingException classify(JedisException e, KeyColumn lock, String action, String server) {
        return RedisFailures.classify(e, lock, action, server);
    }

    /** A duration in whole milliseconds, rounded up, as the scripts get it (see {@link ScriptArgs#millis}). */
    static byte[] millis(Duration d) {
        return ScriptArgs.millis(d);
    }

    @Override
    public String toString() {
        return "RedisLocker[rid=" + config.rid() + ", " + driver.server() + ", prefix=" + driver.keys().prefix() + "]";
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
}
