package dev.locker.redis;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockingException;
import dev.locker.api.PermanentLockingException;
import dev.locker.api.TemporaryLockingException;
import dev.locker.engine.ClaimStatus;
import dev.locker.engine.LockerBuilder;
import dev.locker.engine.LockerEngine;
import redis.clients.jedis.Connection;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisException;

import javax.net.ssl.SSLSocketFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Consumer;

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
 *
 * <p>Claims live in one field per locker instance ({@code "c" + instance}, 16 random hex digits, so lockers sharing
 * a rid differ), told apart by a nonce per claim: the instance and a counter of its acquires. A live claim in that
 * field with another nonce belongs to another transaction and is never overwritten, renewed or deleted by this one.
 * A claim is compact (about 190 bytes of server memory per held lock): the owner's rid, host, pid, thread and reason
 * are stored once per locker in its owner record ({@link RedisOwners}), and a claim refers to them.
 */
public final class RedisLocker extends LockerEngine<ClaimStatus> {

    private static final Duration DEFAULT_TOMBSTONE_TTL = Duration.ofMinutes(20);
    /**
     * The restart guard unless set: one value for every locker of a deployment, never derived from a locker's expiry.
     * After a restart without data the server knows nothing of the claims it lost, so only a guard that all lockers
     * share and that covers all their expiries keeps one holder. A minute covers the default expiry.
     */
    static final Duration DEFAULT_RESTART_GUARD = Duration.ofSeconds(60);
    /** How long the release subscription outlives the last waiter (see {@link RedisWakeups}). */
    private static final Duration WAKEUP_LINGER = Duration.ofSeconds(5);
    /**
     * The longest restart guard or tombstone lifetime the scripts count exactly: 100 years, the longest expiry
     * ({@link LockerConfig#MAX_EXPIRY}, which LockerConfig itself enforces).
     */
    static final Duration MAX_DURATION = LockerConfig.MAX_EXPIRY;

    /** The driver, made by the engine's constructor; set from there, before anything else can reach it. */
    private final RedisDriver driver;

    private RedisLocker(Builder b, UnifiedJedis client, boolean ownsClient, EngineCalls calls) {
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

    /** Maps a Jedis failure by what it means (see {@link RedisFailures}); the message names the server. */
    static LockingException classify(JedisException e, KeyColumn lock, String action, String server) {
        return RedisFailures.classify(e, lock, action, server);
    }

    /** A duration in whole milliseconds, rounded up, as the scripts get it (see {@link RedisDriver#millis}). */
    static byte[] millis(Duration d) {
        return RedisDriver.millis(d);
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

        Duration replicaTimeoutOption() {
            return replicaTimeout;
        }

        Duration tombstoneTtlOption() {
            return tombstoneTtl;
        }

        Duration wakeupLingerOption() {
            return wakeupLinger;
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
                return new RedisLocker(this, client, false, new EngineCalls());
            }
            return new RedisLocker(this, newClient(cfg.retries()), true, new EngineCalls());
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
            connections().checkTopology();
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
            return connections().newClient(retries, connections);
        }

        /**
         * One connection, made now, with these options, outside any pool: see
         * {@link RedisConnections#newConnection}.
         */
        Connection newConnection(long n) {
            return connections().newConnection(n);
        }

        String describe() {
            return connections().describe();
        }

        /** Whether the client this builder makes is a Cluster client (a caller's own client is asked instead). */
        boolean clusterMode() {
            return connections().clusterMode();
        }

        /** The connection options as they are now: a WAIT's time is added to the socket timeout with replicas. */
        private RedisConnections connections() {
            return new RedisConnections(nodes, cluster, database, user, password, tls, verifyHostname,
                    sslSocketFactory, truststore, truststorePassword, keystore, keystorePassword, connectTimeout,
                    replicas > 0 ? socketTimeout.plus(replicaTimeout) : socketTimeout, clientName);
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
