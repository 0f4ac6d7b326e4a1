package dev.locker.springboot;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Locale;
import java.util.Properties;

/**
 * Checks made before the locker is opened, so that a wrong driver or a pasted inline comment fails the start with
 * the remedy instead of a {@link NoClassDefFoundError} or an unreadable value.
 */
final class LockerStartupChecks {

    /** A class Jedis gained in version 7; locker-redis is built on it, and Jedis 6 lacks it. */
    static final String JEDIS_CLASS = "redis.clients.jedis.RedisClient";

    private LockerStartupChecks() {
    }

    /**
     * Refuses a property value that carries an inline comment; a properties file keeps the '#' and what follows.
     *
     * @param name  the property, for the message
     * @param value the value as Spring bound it
     * @param show  whether the value may be shown (the URI may hold a password)
     */
    static void noInlineComment(String name, String value, boolean show) {
        if (value == null) {
            return;
        }
        int hash = value.indexOf('#');
        if (hash > 0 && Character.isWhitespace(value.charAt(hash - 1))) {
            throw new LockerStartupException(name + (show ? " is '" + value + "', which" : "")
                    + " holds an inline comment: a properties file has none, so '#' and the rest became part of the value.",
                    "Put the comment on a line of its own, starting with '#', and leave only the value after '" + name + "='.",
                    null);
        }
    }

    /**
     * Refuses to open a Redis locker on a Jedis older than the one locker-redis was built with.
     *
     * @param uri    the locker URI; only its scheme is read
     * @param loader the class loader the backend is loaded from
     */
    static void driverFor(String uri, ClassLoader loader) {
        String scheme = uri == null ? "" : uri.substring(0, Math.max(0, uri.indexOf(':'))).toLowerCase(Locale.ROOT);
        if (!scheme.equals("redis") && !scheme.equals("rediss")) {
            return;
        }
        if (!present("redis.clients.jedis.Jedis", loader) || present(JEDIS_CLASS, loader)) {
            return; // no Jedis at all is locker-redis missing, which Lockers.open names itself
        }
        throw jedisTooOld(null);
    }

    /**
     * The failure that says which Jedis to pin.
     *
     * @param cause the class-loading failure met, or null when found before
     * @return the exception to throw
     */
    static LockerStartupException jedisTooOld(Throwable cause) {
        String version = builtWith("jedis.version");
        return new LockerStartupException("locker-redis needs Jedis " + version + " (it uses " + JEDIS_CLASS
                + "), but an older Jedis is on the classpath: Spring Boot's dependency management chose it.",
                "Pin Jedis in your pom: with spring-boot-starter-parent, add <jedis.version>" + version
                + "</jedis.version> to <properties>; otherwise declare redis.clients:jedis:" + version
                + " in your own <dependencyManagement> (Gradle's dependency-management plugin: ext['jedis.version'] = '" + version + "').",
                cause);
    }

    /**
     * A driver version this build of Locker was made with.
     *
     * @param key the property in {@code META-INF/locker/drivers.properties}
     * @return the version
     */
    static String builtWith(String key) {
        try (InputStream in = LockerStartupChecks.class.getResourceAsStream("/META-INF/locker/drivers.properties")) {
            Properties p = new Properties();
            if (in != null) {
                p.load(in);
            }
            return p.getProperty(key, "8.0.2");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static boolean present(String className, ClassLoader loader) {
        try {
            Class.forName(className, false, loader);
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }
}
