package dev.locker.hbase;

import dev.locker.api.Lockers;
import dev.locker.spi.UriOptions;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * Where the lock table lives and how the HBase client behaves: the ZooKeeper quorum, the lock table and its column
 * families, and client timeouts short enough that a dead cluster fails in seconds, not minutes. Immutable; build with
 * {@link #builder()} or parse an {@code hbase://} URI with {@link #fromUri(String)}. Defaults are documented on the
 * builder's fields and in the README.
 */
public final class HBaseOptions {

    /** The backend's own URI options (the common ones — expiry, retries... — are handled by {@link UriOptions}). */
    static final Set<String> URI_OPTIONS = Set.of("znodeParent", "family", "tokenFamily", "createTable", "ttl",
            "serverClockSkew", "rpcTimeout", "operationTimeout", "clientRetries", "clientPause");

    private final String zkQuorum;
    private final int zkPort;
    private final String znodeParent;
    private final String table;
    private final String family;
    private final String tokenFamily;
    private final boolean createTable;
    private final Duration ttl;
    private final Duration serverClockSkew;
    private final Duration rpcTimeout;
    private final Duration operationTimeout;
    private final int clientRetries;
    private final Duration clientPause;
    private final Map<String, String> extraConfiguration;

    private HBaseOptions(Builder b) {
        this.zkQuorum = b.zkQuorum;
        this.zkPort = b.zkPort;
        this.znodeParent = b.znodeParent;
        this.table = b.table;
        this.family = b.family;
        this.tokenFamily = b.tokenFamily;
        this.createTable = b.createTable;
        this.ttl = b.ttl;
        this.serverClockSkew = b.serverClockSkew;
        this.rpcTimeout = b.rpcTimeout;
        this.operationTimeout = b.operationTimeout;
        this.clientRetries = b.clientRetries;
        this.clientPause = b.clientPause;
        this.extraConfiguration = Collections.unmodifiableMap(new LinkedHashMap<>(b.extra));
    }

    public static Builder builder() {
        return new Builder();
    }

    /**
     * Parses {@code hbase://zk1[:port][,zk2[:port]...]/[namespace:]table?option=value&...}. The authority is the
     * ZooKeeper quorum; the path is the lock table (default {@code locker_locks}). Common locker options in the query
     * are accepted and left to {@link UriOptions#applyTo}; an unknown option is an error.
     *
     * @throws IllegalArgumentException naming what is wrong
     */
    public static HBaseOptions fromUri(String uri) {
        Objects.requireNonNull(uri, "uri must not be null");
        UriOptions q = UriOptions.parse(uri).requireKnown(URI_OPTIONS);
        String base = q.base();
        String prefix = "hbase://";
        if (!base.regionMatches(true, 0, prefix, 0, prefix.length())) {
            throw new IllegalArgumentException("not an hbase:// URI: " + Lockers.redact(uri));
        }
        String rest = base.substring(prefix.length());
        int slash = rest.indexOf('/');
        String authority = slash < 0 ? rest : rest.substring(0, slash);
        String path = slash < 0 ? "" : rest.substring(slash + 1);
        if (authority.isEmpty()) {
            throw new IllegalArgumentException("hbase:// URI has no ZooKeeper quorum (hbase://zk1,zk2:2181/table): "
                    + Lockers.redact(uri));
        }
        Builder b = builder();
        // a quorum is host[:port] entries; a port on the last entry is the default for entries without one
        String[] hosts = authority.split(",");
        StringBuilder quorum = new StringBuilder();
        int port = -1;
        for (String h : hosts) {
            String host = h.trim();
            if (host.isEmpty()) {
                throw new IllegalArgumentException("empty host in the ZooKeeper quorum of " + Lockers.redact(uri));
            }
            int colon = host.lastIndexOf(':');
            if (colon >= 0 && host.indexOf(']') < colon) {
                String p = host.substring(colon + 1);
                try {
                    port = Integer.parseInt(p);
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("bad ZooKeeper port '" + UriOptions.shown(uri, p) + "' in "
                            + Lockers.redact(uri), e);
                }
                if (port < 1 || port > 65535) {
                    throw new IllegalArgumentException("ZooKeeper port " + port + " out of range in " + Lockers.redact(uri));
                }
            }
            if (quorum.length() > 0) {
                quorum.append(',');
            }
            quorum.append(host);
        }
        b.zkQuorum(quorum.toString());
        if (port > 0) {
            b.zkPort(port);
        }
        if (!path.isEmpty()) {
            if (path.endsWith("/")) {
                path = path.substring(0, path.length() - 1);
            }
            b.table(java.net.URLDecoder.decode(path, StandardCharsets.UTF_8));
        }
        b.znodeParent(q.get("znodeParent", b.znodeParent));
        b.family(q.get("family", b.family));
        b.tokenFamily(q.get("tokenFamily", b.tokenFamily));
        b.createTable(q.getBoolean("createTable", b.createTable));
        b.ttl(q.getDuration("ttl", b.ttl));
        b.serverClockSkew(q.getDuration("serverClockSkew", b.serverClockSkew));
        b.rpcTimeout(q.getDuration("rpcTimeout", b.rpcTimeout));
        b.operationTimeout(q.getDuration("operationTimeout", b.operationTimeout));
        b.clientRetries(q.getInt("clientRetries", b.clientRetries));
        b.clientPause(q.getDuration("clientPause", b.clientPause));
        return b.build();
    }

    public String zkQuorum() {
        return zkQuorum;
    }

    public int zkPort() {
        return zkPort;
    }

    public String znodeParent() {
        return znodeParent;
    }

    public String table() {
        return table;
    }

    public String family() {
        return family;
    }

    public byte[] familyBytes() {
        return family.getBytes(StandardCharsets.UTF_8);
    }

    public String tokenFamily() {
        return tokenFamily;
    }

    public byte[] tokenFamilyBytes() {
        return tokenFamily.getBytes(StandardCharsets.UTF_8);
    }

    public boolean createTable() {
        return createTable;
    }

    public Duration ttl() {
        return ttl;
    }

    /**
     * How far ahead of the clock that stamped a claim the clock that judges it may run: safe while every region server
     * that may serve the lock table keeps its clock within half of this of true time for a claim's whole life (a clock
     * behind at stamping and later forward steps, or a move to a server ahead, add up). A claim's cell TTL on the region
     * server is the expiry plus this allowance, so that such a claim is not dropped before its holder stops trusting it.
     */
    public Duration serverClockSkew() {
        return serverClockSkew;
    }

    public Duration rpcTimeout() {
        return rpcTimeout;
    }

    public Duration operationTimeout() {
        return operationTimeout;
    }

    public int clientRetries() {
        return clientRetries;
    }

    public Duration clientPause() {
        return clientPause;
    }

    /** Further HBase client settings applied last (e.g. security), as given to {@link Builder#set}. */
    public Map<String, String> extraConfiguration() {
        return extraConfiguration;
    }

    /** The cluster and table, for messages: {@code zk1,zk2:2181/hbase table locker_locks}. */
    public String describe() {
        return "HBase cluster " + zkQuorum + (zkQuorum.contains(":") ? "" : ":" + zkPort) + znodeParent + " table " + table;
    }

    @Override
    public String toString() {
        return "HBaseOptions{" + describe() + ", family=" + family + ", tokenFamily=" + tokenFamily + ", createTable="
                + createTable + ", ttl=" + ttl + ", serverClockSkew=" + serverClockSkew + ", rpcTimeout=" + rpcTimeout
                + ", operationTimeout=" + operationTimeout
                + ", clientRetries=" + clientRetries + ", clientPause=" + clientPause + "}";
    }

    /** Builder with safe defaults; every setter validates its argument. */
    public static final class Builder {
        /** ZooKeeper hosts, comma-separated, each with an optional {@code :port}. */
        private String zkQuorum = "localhost";
        /** ZooKeeper client port for hosts given without one. */
        private int zkPort = 2181;
        /** The cluster's root znode. */
        private String znodeParent = "/hbase";
        /** The lock table, {@code [namespace:]name}. */
        private String table = "locker_locks";
        /** Family of the claims: per-cell TTL decides expiry, the family TTL is a safety net. */
        private String family = "l";
        /** Family of the fencing-token counters: no TTL, so a token is never reused. */
        private String tokenFamily = "t";
        /** Create the lock table when it is missing (false: fail with a PermanentLockingException). */
        private boolean createTable = true;
        /** The claims family's TTL when this library creates the table: the safety net, far above any expiry. */
        private Duration ttl = Duration.ofDays(7);
        /**
         * Twice the distance from true time that every region server's clock keeps: 10 s assumes each within 5 s (NTP
         * or chrony do far better); HBase itself only warns at 10 s off the master's clock
         * ({@code hbase.master.warningclockskew}) and refuses a region server 30 s off.
         */
        private Duration serverClockSkew = Duration.ofSeconds(10);
        /** One RPC's timeout. */
        private Duration rpcTimeout = Duration.ofSeconds(3);
        /** One operation's timeout, retries included: the longest a call can block on a dead cluster. */
        private Duration operationTimeout = Duration.ofSeconds(10);
        /** Client-side retries of one operation (HBase's default is 15, with minutes of back-off). */
        private int clientRetries = 3;
        /** Base pause between client retries. */
        private Duration clientPause = Duration.ofMillis(100);
        private final Map<String, String> extra = new LinkedHashMap<>();

        private Builder() {
        }

        public Builder zkQuorum(String q) {
            Objects.requireNonNull(q, "zkQuorum must not be null");
            if (q.isBlank()) {
                throw new IllegalArgumentException("zkQuorum must not be blank");
            }
            this.zkQuorum = q;
            return this;
        }

        public Builder zkPort(int p) {
            if (p < 1 || p > 65535) {
                throw new IllegalArgumentException("zkPort must be 1..65535, was " + p);
            }
            this.zkPort = p;
            return this;
        }

        public Builder znodeParent(String z) {
            Objects.requireNonNull(z, "znodeParent must not be null");
            if (!z.startsWith("/")) {
                throw new IllegalArgumentException("znodeParent must start with '/', was '" + z + "'");
            }
            this.znodeParent = z;
            return this;
        }

        public Builder table(String t) {
            Objects.requireNonNull(t, "table must not be null");
            if (!t.matches("([A-Za-z0-9_.-]+:)?[A-Za-z0-9_][A-Za-z0-9_.-]*")) {
                throw new IllegalArgumentException("table '" + t + "' is not a valid HBase table name "
                        + "([namespace:]name of letters, digits, '_', '-', '.')");
            }
            this.table = t;
            return this;
        }

        public Builder family(String f) {
            this.family = familyName(f, "family");
            return this;
        }

        public Builder tokenFamily(String f) {
            this.tokenFamily = familyName(f, "tokenFamily");
            return this;
        }

        public Builder createTable(boolean on) {
            this.createTable = on;
            return this;
        }

        public Builder ttl(Duration d) {
            this.ttl = positive(d, "ttl");
            if (d.toSeconds() < 1) {
                throw new IllegalArgumentException("ttl must be at least 1 s (HBase TTLs are whole seconds), was " + d);
            }
            return this;
        }

        /**
         * Twice the distance from true time within which every region server that may serve the lock table keeps its
         * clock for a claim's whole life (what safety needs: then the clock that judges a claim's TTL is at most this far
         * ahead of the clock that stamped it); added to the claim's cell TTL on the region server, so a crashed
         * holder's lock is free {@code expiry + serverClockSkew} after its last grant or renewal. Zero only where one
         * region server with a clock that never steps serves the table. Default 10 s.
         */
        public Builder serverClockSkew(Duration d) {
            Objects.requireNonNull(d, "serverClockSkew must not be null");
            if (d.isNegative()) {
                throw new IllegalArgumentException("serverClockSkew must not be negative, was " + d);
            }
            if (d.compareTo(Duration.ofDays(1)) > 0) {
                throw new IllegalArgumentException("serverClockSkew must be at most 1 day, was " + d);
            }
            this.serverClockSkew = d;
            return this;
        }

        public Builder rpcTimeout(Duration d) {
            this.rpcTimeout = positive(d, "rpcTimeout");
            return this;
        }

        public Builder operationTimeout(Duration d) {
            this.operationTimeout = positive(d, "operationTimeout");
            return this;
        }

        public Builder clientRetries(int n) {
            if (n < 0 || n > 100) {
                throw new IllegalArgumentException("clientRetries must be 0..100, was " + n);
            }
            this.clientRetries = n;
            return this;
        }

        public Builder clientPause(Duration d) {
            this.clientPause = positive(d, "clientPause");
            return this;
        }

        /** Sets any HBase client configuration key (applied after every other option). */
        public Builder set(String key, String value) {
            extra.put(Objects.requireNonNull(key, "key must not be null"), Objects.requireNonNull(value, "value must not be null"));
            return this;
        }

        public HBaseOptions build() {
            if (family.equals(tokenFamily)) {
                throw new IllegalArgumentException("family and tokenFamily must differ (the token family has no TTL), both were '"
                        + family + "'");
            }
            return new HBaseOptions(this);
        }

        private static String familyName(String f, String what) {
            Objects.requireNonNull(f, what + " must not be null");
            if (!f.matches("[A-Za-z0-9_][A-Za-z0-9_.-]*")) {
                throw new IllegalArgumentException(what + " '" + f + "' is not a valid column family name");
            }
            return f;
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
