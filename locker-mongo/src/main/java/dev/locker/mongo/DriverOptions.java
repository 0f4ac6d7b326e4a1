package dev.locker.mongo;

import com.mongodb.ConnectionString;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The option names the MongoDB driver on the classpath reads from a connection string, in lower case (the driver
 * lower-cases a name before it looks it up, so any case is accepted). An option outside this set would only make the
 * driver log "Connection string contains unsupported option '...'" and ignore it; Locker refuses it instead, before
 * the driver parses the URI.
 *
 * <p>The driver has no public list: {@link ConnectionString} keeps it in a private static set, {@code ALL_KEYS}, the
 * one its "unsupported option" warning checks. It is read from there, so that a newer driver's options are accepted
 * as they come. Should that fail (a driver that renamed or retyped the field, or a runtime that forbids the access),
 * {@link #BUILT_IN} serves: the set of driver 5.5.1, the version Locker is built with; a test keeps the two equal.
 * Beside the set, the driver reads two legacy names, {@code wtimeout} and {@code j}, as {@code wtimeoutMS} and
 * {@code journal} ({@link #LEGACY}).
 */
final class DriverOptions {

    /** {@code ConnectionString.ALL_KEYS} of mongodb-driver-core 5.5.1. */
    static final Set<String> BUILT_IN = Set.of("minpoolsize", "maxpoolsize", "timeoutms", "sockettimeoutms",
            "waitqueuetimeoutms", "connecttimeoutms", "maxidletimems", "maxlifetimems", "maxconnecting", "ssl", "tls",
            "tlsinsecure", "sslinvalidhostnameallowed", "tlsallowinvalidhostnames", "proxyhost", "proxyport",
            "proxyusername", "proxypassword", "replicaset", "readconcernlevel", "serverselectiontimeoutms",
            "localthresholdms", "heartbeatfrequencyms", "servermonitoringmode", "retrywrites", "retryreads", "appname",
            "uuidrepresentation", "directconnection", "loadbalanced", "srvmaxhosts", "srvservicename", "compressors",
            "zlibcompressionlevel", "readpreference", "readpreferencetags", "maxstalenessseconds", "safe", "w",
            "wtimeoutms", "journal", "authmechanism", "authsource", "gssapiservicename", "authmechanismproperties");

    /** Names the driver reads outside its set, as aliases ({@code wtimeout} of {@code wtimeoutms}, {@code j} of {@code journal}). */
    static final Set<String> LEGACY = Set.of("wtimeout", "j");

    /** Every option name the driver reads, lower case, sorted. */
    static final Set<String> NAMES;

    /** Where {@link #NAMES} came from: {@code "driver"} or {@code "built-in"}. */
    static final String SOURCE;

    static {
        Set<String> fromDriver = fromDriver();
        SOURCE = fromDriver != null ? "driver" : "built-in";
        NAMES = Stream.concat((fromDriver != null ? fromDriver : BUILT_IN).stream(), LEGACY.stream())
                .collect(Collectors.toCollection(TreeSet::new));
    }

    private DriverOptions() {
    }

    /** Whether the driver reads option {@code name} (in any case). */
    static boolean known(String name) {
        return NAMES.contains(name.toLowerCase(Locale.ROOT));
    }

    /** {@code ConnectionString.ALL_KEYS} of the driver on the classpath, lower case; null when it cannot be read. */
    static Set<String> fromDriver() {
        try {
            Field f = ConnectionString.class.getDeclaredField("ALL_KEYS");
            if (!Modifier.isStatic(f.getModifiers()) || !Set.class.isAssignableFrom(f.getType())) {
                return null;
            }
            f.setAccessible(true);
            Set<?> keys = (Set<?>) f.get(null);
            if (keys == null || keys.isEmpty() || !keys.stream().allMatch(String.class::isInstance)) {
                return null;
            }
            return keys.stream().map(k -> ((String) k).toLowerCase(Locale.ROOT)).collect(Collectors.toUnmodifiableSet());
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null; // NoSuchField, InaccessibleObject, Security...: the built-in set serves
        }
    }
}
