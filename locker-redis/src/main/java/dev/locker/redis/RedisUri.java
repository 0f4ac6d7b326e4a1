package dev.locker.redis;

import dev.locker.api.LockerConfig;
import dev.locker.api.OptionSyntax;
import dev.locker.spi.UriOptions;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * Parses {@code redis[s]://[user[:password]@]host[:port][,host[:port]...][/database][?option=value&...]} into a
 * {@link RedisLockerBuilder}. Several hosts mean Redis Cluster seed nodes. IPv6 hosts go in brackets.
 *
 * <p>Options (durations as {@code 250ms}, {@code 2s}, {@code 1m} or ISO-8601 {@code PT2S}: a unit is required, 0 aside):
 * <table>
 *   <caption>URI options</caption>
 *   <tr><td>prefix</td><td>{@code locker:}</td><td>key prefix (no braces)</td></tr>
 *   <tr><td>cluster</td><td>true with several hosts</td><td>Redis Cluster mode</td></tr>
 *   <tr><td>database</td><td>0 (or the path)</td><td>database number (standalone only)</td></tr>
 *   <tr><td>user, password</td><td>none</td><td>ACL credentials (or in the user-info part)</td></tr>
 *   <tr><td>timeout</td><td>2s</td><td>connect and socket timeout</td></tr>
 *   <tr><td>connectTimeout, socketTimeout</td><td>2s</td><td>each on its own</td></tr>
 *   <tr><td>poolSize</td><td>8</td><td>connections per server</td></tr>
 *   <tr><td>replicas</td><td>0</td><td>replica acknowledgements ({@code WAIT}) a claim needs</td></tr>
 *   <tr><td>replicaTimeout</td><td>1s</td><td>how long to wait for them</td></tr>
 *   <tr><td>restartGuard</td><td>60s</td><td>refuse grants while the server's provable uptime is lower; one value
 *       for every locker of the server, at least each one's expiry</td></tr>
 *   <tr><td>serverClockSkew</td><td>0</td><td>how far the clocks of the servers that may judge a claim (master,
 *       replicas, Cluster nodes) may differ; taken off each holder's validity</td></tr>
 *   <tr><td>evictionCheck</td><td>fail</td><td>fail, warn or off: an acquire on a server that may evict keys</td></tr>
 *   <tr><td>tombstoneTtl</td><td>20m</td><td>how long a withdrawn acquire's late request is still refused</td></tr>
 *   <tr><td>verifyHostname</td><td>true</td><td>TLS hostname verification</td></tr>
 *   <tr><td>truststore, truststorePassword</td><td>the JVM's</td><td>trust store file (PKCS12/JKS) for TLS</td></tr>
 *   <tr><td>keystore, keystorePassword</td><td>none</td><td>client certificate for TLS</td></tr>
 *   <tr><td>clientName</td><td>none</td><td>{@code CLIENT SETNAME}</td></tr>
 *   <tr><td>expiry, lockWait, localWait, retries, why, rid, maxKeyBytes</td><td>from the LockerConfig</td><td>override it ({@link UriOptions#COMMON})</td></tr>
 * </table>
 * An unknown option is an error, so that a misspelt one is not silently ignored.
 */
final class RedisUri {

    /** The options of this backend, in the order its messages list them. */
    private static final List<String> OPTIONS = List.of("prefix", "cluster", "database", "user", "password", "timeout",
            "connectTimeout", "socketTimeout", "poolSize", "replicas", "replicaTimeout", "restartGuard", "serverClockSkew", "tombstoneTtl",
            "evictionCheck", "verifyHostname", "truststore", "truststorePassword", "keystore", "keystorePassword",
            "clientName");

    /** Every option name this parser reads: its own, their aliases and the common ones. */
    private static final Set<String> KNOWN = Stream.of(OPTIONS, List.of("keyPrefix", "db"), UriOptions.COMMON)
            .flatMap(Collection::stream).collect(Collectors.toUnmodifiableSet());

    /**
     * How this parser reads a query: options split at '&amp;' only (a ';' or '?' is part of a value), names
     * percent-decoded ('+' kept), case-sensitive.
     */
    static final OptionSyntax SYNTAX = (separator, name) -> separator == '&'
            && UriOptions.percentDecoded(name, false).map(KNOWN::contains).orElse(false);

    private RedisUri() {
    }

    static void apply(String uri, RedisLockerBuilder b) {
        if (uri == null) {
            throw new IllegalArgumentException("Redis URI must not be null");
        }
        int schemeEnd = uri.indexOf("://");
        if (schemeEnd < 0) {
            throw bad(uri, "expected redis://host[:port] or rediss://host[:port]");
        }
        String scheme = uri.substring(0, schemeEnd).toLowerCase(Locale.ROOT);
        if (!scheme.equals("redis") && !scheme.equals("rediss")) {
            throw bad(uri, "scheme must be redis or rediss, was '" + scheme + "'");
        }
        b.tls(scheme.equals("rediss"));
        String rest = uri.substring(schemeEnd + 3);
        String query = null;
        int q = rest.indexOf('?');
        if (q >= 0) {
            query = rest.substring(q + 1);
            rest = rest.substring(0, q);
        }
        int slash = rest.indexOf('/');
        if (slash >= 0 && rest.indexOf('@', slash) >= 0) {
            // an unencoded '/' in the user info (base64 secrets have them): what follows is no database number
            throw bad(uri, "a '/' before the last '@': percent-encode '/' as %2F in the user name and password");
        }
        String path = slash >= 0 ? rest.substring(slash + 1) : "";
        String authority = slash >= 0 ? rest.substring(0, slash) : rest;
        int at = authority.lastIndexOf('@');
        if (at >= 0) {
            String userInfo = authority.substring(0, at);
            authority = authority.substring(at + 1);
            int colon = userInfo.indexOf(':');
            String user = decode(uri, null, colon >= 0 ? userInfo.substring(0, colon) : userInfo);
            b.user(user.isEmpty() ? null : user);
            if (colon >= 0) {
                b.password(decode(uri, null, userInfo.substring(colon + 1)));
            }
        }
        if (authority.isEmpty()) {
            throw bad(uri, "no host");
        }
        b.clearNodes();
        for (String hostPort : authority.split(",")) {
            addNode(uri, hostPort.trim(), b);
        }
        if (!path.isEmpty()) {
            b.database(parseInt(uri, "database", path));
        }
        if (query != null && !query.isEmpty()) {
            List<String> common = new ArrayList<>();
            for (String pair : query.split("&")) {
                if (pair.isEmpty()) {
                    continue;
                }
                int eq = pair.indexOf('=');
                if (eq < 0) {
                    throw bad(uri, UriOptions.aboutOption(uri, pair, SYNTAX, "option '%s' has no value (write name=value)",
                            "an option without a value"));
                }
                if (eq == 0) {
                    throw bad(uri, UriOptions.aboutOption(uri, "", SYNTAX, "an option has no name (write name=value)",
                            "an option without a name"));
                }
                String written = pair.substring(0, eq);
                String name = decode(uri, written, written);
                if (UriOptions.COMMON.contains(name)) {
                    common.add(pair); // expiry, retries, why...: the same meaning on every backend
                } else if (!KNOWN.contains(name)) {
                    throw bad(uri, UriOptions.unknownOption(uri, written, SYNTAX) + "; known: "
                            + String.join(", ", OPTIONS) + ", and the common " + new TreeSet<>(UriOptions.COMMON));
                } else {
                    option(uri, name, decode(uri, written, pair.substring(eq + 1)), b);
                }
            }
            if (!common.isEmpty()) {
                UriOptions options = UriOptions.parse("?" + String.join("&", common));
                try {
                    options.applyTo(LockerConfig.builder()); // refuse a bad value now, not at build()
                } catch (IllegalArgumentException e) {
                    throw bad(uri, e.getMessage());
                }
                b.configOverride(options::applyTo);
            }
        }
    }

    private static void addNode(String uri, String hostPort, RedisLockerBuilder b) {
        String host;
        String portText = null;
        if (hostPort.startsWith("[")) {
            int close = hostPort.indexOf(']');
            if (close < 0) {
                throw bad(uri, "unclosed IPv6 host in '" + UriOptions.shown(uri, hostPort) + "'");
            }
            host = hostPort.substring(1, close);
            if (hostPort.length() > close + 1) {
                if (hostPort.charAt(close + 1) != ':') {
                    throw bad(uri, "bad host '" + UriOptions.shown(uri, hostPort) + "'");
                }
                portText = hostPort.substring(close + 2);
            }
        } else {
            int colon = hostPort.lastIndexOf(':');
            host = colon >= 0 ? hostPort.substring(0, colon) : hostPort;
            portText = colon >= 0 ? hostPort.substring(colon + 1) : null;
        }
        if (host.isEmpty()) {
            throw bad(uri, "empty host in '" + UriOptions.shown(uri, hostPort) + "'");
        }
        int port = portText == null || portText.isEmpty() ? 6379 : parseInt(uri, "port", portText);
        try {
            b.node(host, port);
        } catch (IllegalArgumentException e) {
            throw bad(uri, e.getMessage());
        }
    }

    private static void option(String uri, String name, String value, RedisLockerBuilder b) {
        try {
            switch (name) {
                case "prefix", "keyPrefix" -> b.keyPrefix(value);
                case "cluster" -> b.cluster(parseBoolean(uri, name, value));
                case "database", "db" -> b.database(parseInt(uri, name, value));
                case "user" -> b.user(value.isEmpty() ? null : value);
                case "password" -> b.password(value);
                case "timeout" -> b.timeout(duration(uri, name, value));
                case "connectTimeout" -> b.connectTimeout(duration(uri, name, value));
                case "socketTimeout" -> b.socketTimeout(duration(uri, name, value));
                case "poolSize" -> b.poolSize(parseInt(uri, name, value));
                case "replicas" -> b.replicas(parseInt(uri, name, value));
                case "replicaTimeout" -> b.replicaTimeout(duration(uri, name, value));
                case "restartGuard" -> b.restartGuard(duration(uri, name, value));
                case "serverClockSkew" -> b.serverClockSkew(duration(uri, name, value));
                case "tombstoneTtl" -> b.tombstoneTtl(duration(uri, name, value));
                case "evictionCheck" -> b.evictionCheck(RedisLocker.EvictionCheck.parse(value));
                case "verifyHostname" -> b.verifyHostname(parseBoolean(uri, name, value));
                case "truststore" -> b.truststore(Path.of(value), option(uri, "truststorePassword"));
                case "keystore" -> b.keystore(Path.of(value), option(uri, "keystorePassword"));
                case "truststorePassword", "keystorePassword" -> {
                    // read together with truststore / keystore
                }
                case "clientName" -> b.clientName(value);
                default -> throw new IllegalStateException("option " + name + " is in KNOWN but not read");
            }
        } catch (IllegalArgumentException e) {
            if (e.getMessage() != null && e.getMessage().startsWith("bad Redis URI")) {
                throw e;
            }
            throw bad(uri, "option " + name + ": " + e.getMessage());
        }
    }

    /** The decoded value of option {@code name} in {@code uri}'s query, or null. */
    private static String option(String uri, String name) {
        int q = uri.indexOf('?');
        for (String pair : (q < 0 ? "" : uri.substring(q + 1)).split("&")) {
            int eq = pair.indexOf('=');
            String written = eq > 0 ? pair.substring(0, eq) : null;
            if (written != null && decode(uri, written, written).equals(name)) {
                return decode(uri, written, pair.substring(eq + 1));
            }
        }
        return null;
    }

    /** {@code 250ms}, {@code 2s}, {@code 1m} or {@code PT2S} (a unit is required, 0 aside). */
    static Duration duration(String uri, String name, String value) {
        try {
            return UriOptions.duration(name, value);
        } catch (IllegalArgumentException e) {
            throw bad(uri, e.getMessage());
        }
    }

    private static int parseInt(String uri, String name, String value) {
        try {
            return Integer.parseInt(value.trim());
        } catch (NumberFormatException e) {
            throw bad(uri, name + " is not a number: '" + UriOptions.shown(uri, value) + "'");
        }
    }

    private static boolean parseBoolean(String uri, String name, String value) {
        if (value.equalsIgnoreCase("true")) {
            return true;
        }
        if (value.equalsIgnoreCase("false")) {
            return false;
        }
        throw bad(uri, "option " + name + " must be true or false, was '" + UriOptions.shown(uri, value) + "'");
    }

    /**
     * {@code s} percent-decoded ('+' kept), a piece of option {@code name} (written as in the URI), or of the user info
     * for null. A malformed escape fails without quoting it: URLDecoder's own message quotes the two characters after
     * the '%', a piece of the password when the escape is in one.
     */
    private static String decode(String uri, String name, String s) {
        return UriOptions.percentDecoded(s, false).orElseThrow(() -> bad(uri, name == null
                ? "a malformed percent-escape in the user info (write a '%' itself as %25)"
                : UriOptions.aboutOption(uri, name, SYNTAX,
                        "a malformed percent-escape in option '%s' (write a '%%' itself as %%25)",
                        "an option with a malformed percent-escape (write a '%' itself as %25)")));
    }

    private static IllegalArgumentException bad(String uri, String why) {
        return new IllegalArgumentException("bad Redis URI '" + SYNTAX.redact(uri) + "': " + why);
    }
}
