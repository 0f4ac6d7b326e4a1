package dev.locker.redis;

import redis.clients.jedis.BuilderFactory;
import redis.clients.jedis.CommandArguments;
import redis.clients.jedis.CommandObject;
import redis.clients.jedis.Connection;
import redis.clients.jedis.ConnectionPoolConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.SslOptions;
import redis.clients.jedis.SslVerifyMode;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisException;

import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocketFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.List;

/**
 * How a {@link RedisLockerBuilder}'s options become Jedis clients and connections: a single server or a Cluster,
 * the database, credentials and TLS, timeouts and the pool. A snapshot of the builder's options, never changed.
 */
final class RedisConnections {

    /** The server's own answer to which topology it runs (see {@link #askClusterMode}). */
    private static final String CLUSTER_INFO_SCRIPT = "return redis.call('INFO', 'cluster')";

    private final List<HostAndPort> nodes;
    private final Boolean cluster;
    private final int database;
    private final String user;
    private final String password;
    private final boolean tls;
    private final boolean verifyHostname;
    private final SSLSocketFactory sslSocketFactory;
    private final Path truststore;
    private final char[] truststorePassword;
    private final Path keystore;
    private final char[] keystorePassword;
    private final Duration connectTimeout;
    /** The socket timeout, with a WAIT's time added when replicas must acknowledge. */
    private final Duration socketTimeout;
    private final String clientName;

    RedisConnections(List<HostAndPort> nodes, Boolean cluster, int database, String user, String password,
                     boolean tls, boolean verifyHostname, SSLSocketFactory sslSocketFactory, Path truststore,
                     char[] truststorePassword, Path keystore, char[] keystorePassword, Duration connectTimeout,
                     Duration socketTimeout, String clientName) {
        this.nodes = List.copyOf(nodes);
        this.cluster = cluster;
        this.database = database;
        this.user = user;
        this.password = password;
        this.tls = tls;
        this.verifyHostname = verifyHostname;
        this.sslSocketFactory = sslSocketFactory;
        this.truststore = truststore;
        this.truststorePassword = truststorePassword;
        this.keystore = keystore;
        this.keystorePassword = keystorePassword;
        this.connectTimeout = connectTimeout;
        this.socketTimeout = socketTimeout;
        this.clientName = clientName;
    }

    /** The nodes given, or localhost:6379 when none was. */
    private List<HostAndPort> targets() {
        return nodes.isEmpty() ? List.of(new HostAndPort("localhost", 6379)) : nodes;
    }

    /** Cluster mode as set, or else true when several nodes are given: the kind of client this makes. */
    boolean clusterMode() {
        return cluster != null ? cluster : targets().size() > 1;
    }

    /**
     * Whether the server behind a client of the caller's own runs in Cluster mode, as the server itself says
     * ({@code INFO cluster}): a client's class proves nothing, a {@code JedisPooled} reaches a single server too. It is
     * sent as a script with {@code routingKey}, so that a Cluster client routes it to a node. Without {@code +info}
     * the answer is Cluster: its one-key layout runs on both, and the guard then fails on INFO with its own message.
     */
    static boolean askClusterMode(UnifiedJedis client, byte[] routingKey) {
        CommandArguments a = new CommandArguments(Protocol.Command.EVAL).add(CLUSTER_INFO_SCRIPT).add(1)
                .key(routingKey);
        Object reply;
        try {
            reply = client.executeCommand(new CommandObject<>(a, BuilderFactory.RAW_OBJECT));
        } catch (JedisDataException denied) {
            return true;
        }
        String info = reply instanceof byte[] bytes ? new String(bytes, StandardCharsets.US_ASCII) : "";
        return !info.contains("cluster_enabled:0");
    }

    /** Cluster mode and the database agree with the nodes given (a client of the caller's own has its own). */
    void checkTopology() {
        List<HostAndPort> targets = targets();
        boolean clusterMode = clusterMode();
        if (!clusterMode && targets.size() > 1) {
            throw new IllegalArgumentException("several nodes " + targets + " given but cluster mode is off");
        }
        if (clusterMode && database != 0) {
            throw new IllegalArgumentException("Redis Cluster has only database 0, not " + database);
        }
    }

    /** A Jedis client with a pool of {@code connections}; the caller closes it. */
    UnifiedJedis newClient(int retries, int connections) {
        checkTopology();
        List<HostAndPort> targets = targets();
        boolean clusterMode = clusterMode();
        Duration effectiveSocketTimeout = socketTimeout;
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
            throw RedisFailures.classify(e, null, "connecting", describe());
        }
        return c;
    }

    /**
     * One connection, made now, with these options, outside any pool (the release subscription's: its owner closes
     * it, or its socket to end a read blocked on it): to the single server, or to the {@code n}-th of the Cluster's
     * nodes given, in turn (a message published on any node reaches the subscribers of every one).
     */
    Connection newConnection(long n) {
        List<HostAndPort> targets = targets();
        boolean clusterMode = clusterMode();
        return new Connection(targets.get((int) Math.floorMod(n, (long) targets.size())),
                clientConfig(clusterMode).build());
    }

    private DefaultJedisClientConfig.Builder clientConfig(boolean clusterMode) {
        DefaultJedisClientConfig.Builder cc = DefaultJedisClientConfig.builder()
                .connectionTimeoutMillis(toIntMillis(connectTimeout))
                .socketTimeoutMillis(toIntMillis(socketTimeout))
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
        List<HostAndPort> targets = targets();
        boolean clusterMode = clusterMode();
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
}
