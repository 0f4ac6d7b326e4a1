package dev.locker.spi;

import dev.locker.api.LockerProvider;
import dev.locker.api.PermanentLockingException;
import dev.locker.api.TemporaryLockingException;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.ServiceLoader;
import java.util.TreeMap;
import java.util.function.Consumer;

/**
 * Checks one backend's deployment for what silently breaks locks (an eviction policy that drops lock keys, claims
 * lost on a restart, missing rights, asynchronous replicas, a clock far off the server's...). Each backend module
 * ships its own, next to the code that knows its layout, registered in
 * {@code META-INF/services/dev.locker.spi.DeploymentCheck} and found by URI scheme ({@link #forScheme}); the
 * {@code locker doctor} command runs it.
 *
 * <p>A check only reads: it never writes a claim, a record, a key, an index or a table.
 */
public interface DeploymentCheck {

    /**
     * The URI schemes whose deployments this checks, lower case, without the colon (as {@link LockerProvider#schemes}).
     *
     * @return the schemes
     */
    java.util.Set<String> schemes();

    /**
     * Runs every check against the deployment {@code uri} names, as a locker opened on that URI would use it (its
     * options, such as Redis's {@code restartGuard} or MongoDB's write concern, are judged too).
     *
     * @param uri      the locker URI
     * @param progress told, in a few words, what is being checked now (for a status line); never null
     * @return the findings, in the order they were checked; never empty
     * @throws IllegalArgumentException  before any I/O, when the URI is malformed (the message names no password)
     * @throws TemporaryLockingException when the deployment cannot be reached at all
     * @throws PermanentLockingException when it refuses this client outright (credentials, TLS)
     */
    List<Finding> check(String uri, Consumer<String> progress);

    /** How a finding judges the deployment. */
    enum Level {
        /** Safe as it is. */
        OK,
        /** Works, but something an operator should know or change (liveness, a missing safety net). */
        WARN,
        /** Breaks a lock guarantee (mutual exclusion, increasing tokens), or no lock can be taken at all. */
        FAIL
    }

    /**
     * One finding: which check, its level, one line saying why, and what to change (empty when nothing).
     *
     * @param check a short stable name, e.g. {@code maxmemory-policy} (tools may key on it)
     * @param level OK, WARN or FAIL
     * @param why   one line: what was found and what it means for locks
     * @param fix   what to change, or empty
     */
    record Finding(String check, Level level, String why, String fix) {

        /**
         * Validates the parts.
         *
         * @param check a short stable name
         * @param level OK, WARN or FAIL
         * @param why   one line
         * @param fix   what to change, or empty (null is taken as empty)
         */
        public Finding {
            Objects.requireNonNull(check, "check must not be null");
            Objects.requireNonNull(level, "level must not be null");
            Objects.requireNonNull(why, "why must not be null");
            fix = fix == null ? "" : fix;
        }

        /**
         * A finding that needs no change.
         *
         * @param check the check's name
         * @param why   what was found
         * @return the finding
         */
        public static Finding ok(String check, String why) {
            return new Finding(check, Level.OK, why, "");
        }

        /**
         * A finding an operator should act on, though locks stay safe.
         *
         * @param check the check's name
         * @param why   what was found
         * @param fix   what to change
         * @return the finding
         */
        public static Finding warn(String check, String why, String fix) {
            return new Finding(check, Level.WARN, why, fix);
        }

        /**
         * A finding that breaks a lock guarantee.
         *
         * @param check the check's name
         * @param why   what was found
         * @param fix   what to change
         * @return the finding
         */
        public static Finding fail(String check, String why, String fix) {
            return new Finding(check, Level.FAIL, why, fix);
        }
    }

    /**
     * The checks on the classpath, by scheme.
     *
     * @return every scheme some check serves, sorted, with its check
     */
    static Map<String, DeploymentCheck> available() {
        Map<String, DeploymentCheck> out = new TreeMap<>();
        for (DeploymentCheck c : ServiceLoader.load(DeploymentCheck.class, DeploymentCheck.class.getClassLoader())) {
            for (String s : c.schemes()) {
                out.putIfAbsent(s.toLowerCase(Locale.ROOT), c);
            }
        }
        return out;
    }

    /**
     * The check for a URI's scheme, if a module on the classpath ships one.
     *
     * @param scheme the scheme, e.g. {@code redis}
     * @return the check, or empty
     */
    static java.util.Optional<DeploymentCheck> forScheme(String scheme) {
        return java.util.Optional.ofNullable(available().get(scheme.toLowerCase(Locale.ROOT)));
    }
}
