package dev.locker.mongo;

import com.mongodb.ConnectionString;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.Lockers;
import dev.locker.api.LockerProvider;
import dev.locker.spi.UriOptions;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

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
 * </table>
 *
 * <p>The common options of every backend ({@code expiry}, {@code retries}, {@code why}... see
 * {@link UriOptions#COMMON}) are taken out too and applied over the given configuration.
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
    private static final Set<String> OPTIONS = Set.of(DATABASE, COLLECTION, MAX_CLOCK_SKEW, CLOCK_CHECK, TTL_GRACE);

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
        return prepared(uri, config).config();
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
            db = new ConnectionString(p.driverUri).getDatabase();
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
        return b;
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
            throw new IllegalArgumentException("not a MongoDB URI (mongodb:// or mongodb+srv://): '" + Lockers.redact(uri) + "'");
        }
        int q = uri.indexOf('?');
        if (q < 0) {
            check(uri);
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
            String rawKey = eq < 0 ? pair : pair.substring(0, eq);
            String key = rawKey.toLowerCase(Locale.ROOT);
            if (UriOptions.COMMON.contains(rawKey)) {
                common.add(pair); // no driver option has these names
                continue;
            }
            if (key.startsWith("locker")) {
                if (!OPTIONS.contains(key)) {
                    throw new IllegalArgumentException("unknown Locker option '"
                            + UriOptions.shown(uri, pair.substring(0, Math.max(eq, 0)))
                            + "' in MongoDB URI; known: lockerDatabase, lockerCollection, lockerMaxClockSkewMS, "
                            + "lockerClockCheckIntervalMS, lockerTtlGraceSeconds");
                }
                String value = eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
                if (value.isEmpty()) {
                    throw new IllegalArgumentException("Locker option '" + key + "' in MongoDB URI has no value");
                }
                ours.put(key, value);
            } else {
                theirs.add(pair);
            }
        }
        String driverUri = uri.substring(0, q) + (theirs.isEmpty() ? "" : "?" + String.join("&", theirs));
        check(driverUri);
        String commonQuery = String.join("&", common);
        if (!commonQuery.isEmpty()) {
            UriOptions.parse("?" + commonQuery).applyTo(LockerConfig.builder()); // refuse a bad value now
        }
        return new Parsed(driverUri, ours, commonQuery);
    }

    private static void check(String driverUri) {
        try {
            new ConnectionString(driverUri);
        } catch (IllegalArgumentException e) {
            if (Lockers.secrets(driverUri).isEmpty()) {
                throw new IllegalArgumentException("bad MongoDB URI '" + Lockers.redact(driverUri) + "': "
                        + e.getMessage(), e);
            }
            // the driver's message may quote a piece of the password (a bad escape in it): neither it nor the
            // driver's exception goes further
            throw new IllegalArgumentException("bad MongoDB URI '" + Lockers.redact(driverUri) + "': the driver "
                    + "refused it (its reason is withheld: it may quote the password); percent-encode the user name and "
                    + "password (RFC 3986: ':' %3A, '/' %2F, '?' %3F, '#' %23, '@' %40, '%' %25)");
        }
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
