package dev.locker.redis;

import dev.locker.api.LockerConfig;
import dev.locker.engine.LockerBuilder;
import redis.clients.jedis.Connection;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.UnifiedJedis;

import javax.net.ssl.SSLSocketFactory;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * Options of a {@link RedisLocker}, with safe defaults. Every option can also be given in a URI (see
 * {@link #uri}); setters called after {@code uri(...)} override it.
 */
public final class RedisLockerBuilder extends LockerBuilder<RedisLockerBuilder> {

    /** How long a withdrawn acquire's tombstone stays unless set (see {@link #tombstoneTtl}). */
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
    private RedisLocker.EvictionCheck evictionCheck = RedisLocker.EvictionCheck.FAIL;
    private String clientName;
    private Duration wakeupLinger = WAKEUP_LINGER;
    private Duration wakeupHealthCheck;
    private final List<Consumer<LockerConfig.Builder>> configOverrides = new ArrayList<>();
    private UnifiedJedis client;

    RedisLockerBuilder() {
    }

    /**
     * Reads a {@code redis://} or {@code rediss://} URI:
     * {@code redis[s]://[user[:password]@]host[:port][,host:port...][/database][?option=value&...]}.
     * See {@link RedisUri} for the options.
     */
    public RedisLockerBuilder uri(String uri) {
        RedisUri.apply(uri, this);
        return this;
    }

    /** A server (standalone) or a seed node (Cluster); may be called several times. Default localhost:6379. */
    public RedisLockerBuilder node(String host, int port) {
        Objects.requireNonNull(host, "host must not be null");
        if (port < 1 || port > 65535) {
            throw new IllegalArgumentException("port must be 1..65535, was " + port);
        }
        nodes.add(new HostAndPort(host, port));
        return this;
    }

    /** Forgets the nodes given so far. */
    public RedisLockerBuilder clearNodes() {
        nodes.clear();
        return this;
    }

    /** Redis Cluster mode; default: true when several nodes are given, else false. */
    public RedisLockerBuilder cluster(boolean on) {
        this.cluster = on;
        return this;
    }

    public RedisLockerBuilder database(int db) {
        if (db < 0) {
            throw new IllegalArgumentException("database must be >= 0, was " + db);
        }
        this.database = db;
        return this;
    }

    /** ACL user name; null for the default user. */
    public RedisLockerBuilder user(String u) {
        this.user = u;
        return this;
    }

    public RedisLockerBuilder password(String p) {
        this.password = p;
        return this;
    }

    /**
     * TLS (the {@code rediss} scheme). The server's certificate is checked against the JVM's default trust
     * store, or {@link #truststore}, or whatever {@link #sslSocketFactory} decides.
     */
    public RedisLockerBuilder tls(boolean on) {
        this.tls = on;
        return this;
    }

    /** Whether TLS checks that the server's certificate names the host; default true. */
    public RedisLockerBuilder verifyHostname(boolean on) {
        this.verifyHostname = on;
        return this;
    }

    /** A trust store file (PKCS12 or JKS) holding the CA or certificate of the server; turns TLS on. */
    public RedisLockerBuilder truststore(Path file, String password) {
        this.truststore = Objects.requireNonNull(file, "truststore must not be null");
        this.truststorePassword = password == null ? null : password.toCharArray();
        this.tls = true;
        return this;
    }

    /** A key store file with this client's certificate, for servers that require client certificates. */
    public RedisLockerBuilder keystore(Path file, String password) {
        this.keystore = Objects.requireNonNull(file, "keystore must not be null");
        this.keystorePassword = password == null ? null : password.toCharArray();
        this.tls = true;
        return this;
    }

    /** Full control of the TLS socket (trust, client certificates); wins over truststore and keystore. */
    public RedisLockerBuilder sslSocketFactory(SSLSocketFactory f) {
        this.sslSocketFactory = f;
        this.tls = true;
        return this;
    }

    public RedisLockerBuilder connectTimeout(Duration d) {
        this.connectTimeout = positive(d, "connectTimeout");
        return this;
    }

    public RedisLockerBuilder socketTimeout(Duration d) {
        this.socketTimeout = positive(d, "socketTimeout");
        return this;
    }

    /** Sets both the connect and the socket timeout. */
    public RedisLockerBuilder timeout(Duration d) {
        return connectTimeout(d).socketTimeout(d);
    }

    /** Connections per server; default 8. */
    public RedisLockerBuilder poolSize(int n) {
        if (n < 1) {
            throw new IllegalArgumentException("poolSize must be at least 1, was " + n);
        }
        this.poolSize = n;
        return this;
    }

    /** Prefix of every key; default {@code "locker:"}; must not contain braces. */
    public RedisLockerBuilder keyPrefix(String p) {
        this.keyPrefix = RedisKeys.validatePrefix(p);
        return this;
    }

    /** A claim (and each renewal) counts only once this many replicas acknowledged it ({@code WAIT}); default 0. */
    public RedisLockerBuilder replicas(int n) {
        if (n < 0) {
            throw new IllegalArgumentException("replicas must be >= 0, was " + n);
        }
        this.replicas = n;
        return this;
    }

    /** How long to wait for the replicas' acknowledgements; default 1 s. */
    public RedisLockerBuilder replicaTimeout(Duration d) {
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
    public RedisLockerBuilder restartGuard(Duration d) {
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
    public RedisLockerBuilder serverClockSkew(Duration d) {
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
     * the safety-net {@code PEXPIRE}). Default {@link RedisLocker.EvictionCheck#FAIL}. The check runs inside the acquire
     * script, on the master that holds the lock's key (so per master in a Cluster, and it follows a
     * {@code CONFIG SET} within a second), and needs {@code +info}.
     */
    public RedisLockerBuilder evictionCheck(RedisLocker.EvictionCheck check) {
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
    public RedisLockerBuilder tombstoneTtl(Duration d) {
        this.tombstoneTtl = positive(d, "tombstoneTtl");
        return this;
    }

    public RedisLockerBuilder clientName(String name) {
        this.clientName = name;
        return this;
    }

    /** How long the release subscription outlives the last waiter; default 5 s (for tests). */
    RedisLockerBuilder wakeupLinger(Duration d) {
        this.wakeupLinger = positive(d, "wakeupLinger");
        return this;
    }

    /**
     * How often the release subscription must answer, and how long it has to (see {@link RedisWakeups}); default
     * the socket timeout, at least 2 s (for tests).
     */
    RedisLockerBuilder wakeupHealthCheck(Duration d) {
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

    RedisLocker.EvictionCheck evictionCheckOption() {
        return evictionCheck;
    }

    /** A change to the locker config that comes from the URI (expiry, retries...); applied over {@link #config}. */
    RedisLockerBuilder configOverride(Consumer<LockerConfig.Builder> change) {
        configOverrides.add(change);
        return this;
    }

    /** Uses a client you manage (it is not closed with the locker); connection options are then ignored. */
    public RedisLockerBuilder client(UnifiedJedis c) {
        this.client = c;
        return this;
    }

    public RedisLocker build() {
        LockerConfig cfg = validated();
        if (client != null) {
            return RedisLocker.create(this, client, false);
        }
        return RedisLocker.create(this, newClient(cfg.retries()), true);
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
