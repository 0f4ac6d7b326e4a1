package dev.locker.mongo;

import com.mongodb.ConnectionString;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockerProvider;
import dev.locker.api.OptionSyntax;
import dev.locker.spi.UriOptions;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The {@code mongodb://} and {@code mongodb+srv://} backend. The URI is a standard MongoDB connection string plus
 * Locker's own options, which are taken out before the rest reaches the driver:
 *
 * <table>
 *   <caption>URI options</caption>
 *   <tr><td>lockerDatabase</td><td>the URI's database path, else {@code locker}</td></tr>
 *   <tr><td>lockerCollection</td><td>{@code locks}</td></tr>
 *   <tr><td>lockerMaxClockSkewMS</td><td>10000: above this measured offset to the server, expired holders are
 *       not taken over</td></tr>
 *   <tr><td>lockerClockCheckIntervalMS</td><td>60000: how often the offset is measured again (0: only at start)</td></tr>
 *   <tr><td>lockerTtlGraceSeconds</td><td>3600: the TTL index removes a lock document this long after its expiry
 *       or release</td></tr>
 *   <tr><td>lockerServerClockSkewMS</td><td>0: how far apart the replica set members' clocks may be; taken off
 *       every holder's validity, under half the expiry ({@link MongoLocker.Builder#serverClockSkew})</td></tr>
 * </table>
 *
 * <p>The common options of every backend ({@code expiry}, {@code retries}, {@code why}... see
 * {@link UriOptions#COMMON}) are taken out too and applied over the given configuration.
 *
 * <p>Any other option must be one the driver reads (in any case, as the driver reads them: {@link DriverOptions});
 * an unknown one is refused naming it, before the driver parses the URI (the driver would only log it and ignore it).
 * An unknown option right after a secret one ({@code authMechanismProperties}, {@code proxyPassword}) is not named:
 * with a raw '&amp;' in the secret it may be the secret's rest.
 *
 * <p>Driver options keep their meaning; Locker changes only defaults the URI does not set: {@code w=majority},
 * {@code readConcernLevel=majority}, {@code serverSelectionTimeoutMS=3000}, {@code connectTimeoutMS=3000},
 * {@code socketTimeoutMS=10000}.
 */
public final class MongoLockerProvider implements LockerProvider {

    static final String DATABASE = "lockerdatabase";
    static final String COLLECTION = "lockercollection";
    static final String MAX_CLOCK_SKEW = "lockermaxclockskewms";
    static final String CLOCK_CHECK = "lockerclockcheckintervalms";
    static final String TTL_GRACE = "lockerttlgraceseconds";
    static final String SERVER_CLOCK_SKEW = "lockerserverclockskewms";
    private static final Set<String> OPTIONS = Set.of(DATABASE, COLLECTION, MAX_CLOCK_SKEW, CLOCK_CHECK, TTL_GRACE,
            SERVER_CLOCK_SKEW);
    /** Locker's own options as the documentation spells them, for messages. */
    private static final List<String> OPTION_NAMES = List.of("lockerDatabase", "lockerCollection",
            "lockerMaxClockSkewMS", "lockerClockCheckIntervalMS", "lockerTtlGraceSeconds", "lockerServerClockSkewMS");

    /**
     * How a MongoDB URI's query is read: options split at '&amp;' and ';' (as the driver does), names case-insensitive
     * except the common ones ({@code expiry}...), known when Locker's, common or the driver's ({@link DriverOptions}).
     */
    static final OptionSyntax SYNTAX = (separator, name) -> (separator == '&' || separator == ';')
            && (UriOptions.COMMON.contains(name) || OPTIONS.contains(name.toLowerCase(Locale.ROOT))
            || DriverOptions.known(name));

    @Override
    public Set<String> schemes() {
        return Set.of("mongodb", "mongodb+srv");
    }

    @Override
    public Locker open(String uri, LockerConfig config) {
        Prepared p = prepared(uri, config);
        return p.builder().config(p.config()).build();
    }

    @Override
    public LockerConfig check(String uri, LockerConfig config) {
        Prepared p = prepared(uri, config);
        return p.builder().validated(p.config());
    }

    @Override
    public OptionSyntax optionSyntax() {
        return SYNTAX;
    }

    /** A MongoDB URI read: a builder set from it (no client until {@code build()}) and the effective configuration. */
    record Prepared(MongoLocker.Builder builder, LockerConfig config) {
    }

    /** The one parse of a MongoDB URI, for {@link #open} and {@link #check}: nothing connected, no thread. */
    static Prepared prepared(String uri, LockerConfig config) {
        return new Prepared(builder(uri), withCommonOptions(uri, config));
    }

    /** {@code config} with the URI's common options (expiry, retries, why...: {@link UriOptions#COMMON}) applied. */
    static LockerConfig withCommonOptions(String uri, LockerConfig config) {
        String common = parse(uri).common();
        return common.isEmpty() ? config : UriOptions.parse("?" + common).applyTo(config);
    }

    /** A builder set from {@code uri}: for callers that also want to set a mediator or other options in code. */
    public static MongoLocker.Builder builder(String uri) {
        Parsed p = parse(uri);
        MongoLocker.Builder b = MongoLocker.builder().connectionString(p.driverUri);
        String db = p.options.get(DATABASE);
        if (db == null) {
            db = connectionString(p.driverUri).getDatabase();
        }
        if (db != null) {
            b.database(db);
        }
        if (p.options.containsKey(COLLECTION)) {
            b.collection(p.options.get(COLLECTION));
        }
        Duration maxClockSkew = maxClockSkew(p);
        if (maxClockSkew != null) {
            b.maxClockSkew(maxClockSkew);
        }
        if (p.options.containsKey(CLOCK_CHECK)) {
            b.clockCheckInterval(Duration.ofMillis(number(p.options, CLOCK_CHECK, "lockerClockCheckIntervalMS")));
        }
        if (p.options.containsKey(TTL_GRACE)) {
            b.ttlGrace(Duration.ofSeconds(number(p.options, TTL_GRACE, "lockerTtlGraceSeconds")));
        }
        b.serverClockSkew(serverClockSkew(p));
        return b;
    }

    /** The URI's {@code lockerServerClockSkewMS}, zero when it has none; a bad value fails naming the option. */
    static Duration serverClockSkew(Parsed p) {
        return p.options.containsKey(SERVER_CLOCK_SKEW)
                ? Duration.ofMillis(number(p.options, SERVER_CLOCK_SKEW, "lockerServerClockSkewMS")) : Duration.ZERO;
    }

    /** The URI's {@code lockerMaxClockSkewMS}, or null when it has none; a bad value fails naming the option. */
    static Duration maxClockSkew(Parsed p) {
        return p.options.containsKey(MAX_CLOCK_SKEW)
                ? Duration.ofMillis(number(p.options, MAX_CLOCK_SKEW, "lockerMaxClockSkewMS")) : null;
    }

    /** The URI split into what the driver gets and Locker's options (keys in lower case). */
    record Parsed(String driverUri, Map<String, String> options, String common) {
    }

    static Parsed parse(String uri) {
        if (uri == null) {
            throw new IllegalArgumentException("MongoDB URI must not be null");
        }
        String lower = uri.toLowerCase(Locale.ROOT);
        if (!lower.startsWith("mongodb://") && !lower.startsWith("mongodb+srv://")) {
            throw new IllegalArgumentException("not a MongoDB URI (mongodb:// or mongodb+srv://): '" + SYNTAX.redact(uri) + "'");
        }
        int q = uri.indexOf('?');
        if (q < 0) {
            connectionString(uri);
            return new Parsed(uri, Map.of(), "");
        }
        Map<String, String> ours = new LinkedHashMap<>();
        List<String> theirs = new ArrayList<>();
        List<String> common = new ArrayList<>();
        for (String pair : uri.substring(q + 1).split("[&;]")) {
            if (pair.isEmpty()) {
                continue;
            }
            int eq = pair.indexOf('=');
            if (eq < 0) {
                throw bad(uri, noValue(uri, pair));
            }
            String rawKey = pair.substring(0, eq);
            String key = rawKey.toLowerCase(Locale.ROOT);
            if (UriOptions.COMMON.contains(rawKey)) {
                common.add(pair); // no driver option has these names
                continue;
            }
            if (key.startsWith("locker")) {
                if (!OPTIONS.contains(key)) {
                    throw bad(uri, UriOptions.aboutOption(uri, rawKey, SYNTAX, "unknown Locker option '%s'",
                            "an unknown Locker option") + "; known: " + String.join(", ", OPTION_NAMES));
                }
                String value = UriOptions.percentDecoded(pair.substring(eq + 1), true).orElseThrow(() -> bad(uri,
                        UriOptions.aboutOption(uri, rawKey, SYNTAX,
                                "a malformed percent-escape in option '%s' (write a '%%' itself as %%25)",
                                "an option with a malformed percent-escape (write a '%' itself as %25)")));
                if (value.isEmpty()) {
                    throw new IllegalArgumentException("Locker option '" + key + "' in MongoDB URI has no value");
                }
                ours.put(key, value);
            } else if (DriverOptions.known(key)) {
                theirs.add(pair);
            } else {
                throw bad(uri, UriOptions.unknownOption(uri, rawKey, SYNTAX) + "; known: Locker's "
                        + OPTION_NAMES + ", the common " + new TreeSet<>(UriOptions.COMMON) + " and the driver's (in any "
                        + "case) " + DriverOptions.NAMES);
            }
        }
        String driverUri = uri.substring(0, q) + (theirs.isEmpty() ? "" : "?" + String.join("&", theirs));
        connectionString(driverUri);
        String commonQuery = String.join("&", common);
        if (!commonQuery.isEmpty()) {
            UriOptions.parse("?" + commonQuery).applyTo(LockerConfig.builder()); // refuse a bad value now
        }
        return new Parsed(driverUri, ours, commonQuery);
    }

    /**
     * The driver's reading of a connection string whose options must all be the driver's: every module's one way to a
     * {@link ConnectionString}. An option the driver does not know (which it would only log, naming it, and ignore) or
     * one without a value is refused first, so the driver never parses it; the driver's own refusal is passed on
     * without its reason when that may quote a secret.
     *
     * @throws IllegalArgumentException naming what is wrong, showing the URI only redacted
     */
    static ConnectionString connectionString(String driverUri) {
        return connectionString(driverUri, NO_LOOKUP);
    }

    /**
     * As {@link #connectionString(String)}, with a {@code mongodb+srv://} URI's TXT record looked up (options such as
     * authSource and replicaSet): for a client about to connect, never for a check.
     */
    static ConnectionString resolvedConnectionString(String driverUri) {
        return connectionString(driverUri, null);
    }

    /**
     * A DNS client that answers nothing: the driver looks up the TXT record of a {@code mongodb+srv://} URI as it
     * parses it, and a check does no I/O (what the record adds is read when the client connects).
     */
    private static final com.mongodb.spi.dns.DnsClient NO_LOOKUP = (name, type) -> java.util.List.of();

    /** {@code dns} null: the driver's own DNS client. */
    private static ConnectionString connectionString(String driverUri, com.mongodb.spi.dns.DnsClient dns) {
        int q = driverUri.indexOf('?');
        if (q >= 0) {
            for (String pair : driverUri.substring(q + 1).split("[&;]")) {
                int eq = pair.indexOf('=');
                if (pair.isEmpty()) {
                    continue;
                }
                if (eq < 0) {
                    throw bad(driverUri, noValue(driverUri, pair));
                }
                if (!DriverOptions.known(pair.substring(0, eq))) {
                    throw bad(driverUri, UriOptions.unknownOption(driverUri, pair.substring(0, eq), SYNTAX)
                            + "; known: the driver's (in any case) " + DriverOptions.NAMES
                            + " (Locker's own and the common options go in a URI for Lockers.open or "
                            + "MongoLockerProvider.builder)");
                }
            }
        }
        try {
            return new ConnectionString(driverUri, dns);
        } catch (IllegalArgumentException e) {
            if (SYNTAX.secrets(driverUri).isEmpty()) {
                throw new IllegalArgumentException("bad MongoDB URI '" + SYNTAX.redact(driverUri) + "': "
                        + e.getMessage(), e);
            }
            // the driver's message may quote a piece of the password (a bad escape in it): neither it nor the
            // driver's exception goes further
            throw new IllegalArgumentException("bad MongoDB URI '" + SYNTAX.redact(driverUri) + "': the driver "
                    + "refused it (its reason is withheld: it may quote the password); percent-encode the user name and "
                    + "password (RFC 3986: ':' %3A, '/' %2F, '?' %3F, '#' %23, '@' %40, '%' %25)");
        }
    }

    private static String noValue(String uri, String pair) {
        return UriOptions.aboutOption(uri, pair, SYNTAX, "option '%s' has no value (write name=value)",
                "an option without a value");
    }

    private static IllegalArgumentException bad(String uri, String why) {
        return new IllegalArgumentException("bad MongoDB URI '" + SYNTAX.redact(uri) + "': " + why);
    }

    private static long number(Map<String, String> options, String key, String name) {
        try {
            long v = Long.parseLong(options.get(key));
            if (v < 0) {
                throw new IllegalArgumentException(name + " must not be negative, was " + v);
            }
            return v;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + " must be a whole number, was '" + options.get(key) + "'", e);
        }
    }
}
