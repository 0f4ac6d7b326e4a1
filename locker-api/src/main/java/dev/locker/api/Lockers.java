package dev.locker.api;

import java.util.Locale;
import java.util.Map;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * Opens a {@link Locker} for a URI, picking the backend by scheme: {@code mem:} (inside this JVM only),
 * {@code file:} (the processes of one host), {@code redis://}, {@code rediss://}, {@code mongodb://},
 * {@code mongodb+srv://}, {@code hbase://}. A backend is available when its module is on the classpath; switching
 * backends is a configuration change.
 */
public final class Lockers {

    private Lockers() {
    }

    /**
     * Opens a locker with default configuration (a fresh random rid).
     *
     * @param uri the locker URI; its scheme picks the backend
     * @return the open locker; close it when done
     */
    public static Locker open(String uri) {
        return open(uri, LockerConfig.defaults());
    }

    /**
     * Opens a locker whose transactions meet those of other lockers sharing {@code arbitration} in this process first.
     *
     * @param uri the locker URI; its scheme picks the backend
     * @param config the settings; URI options override them
     * @param arbitration the in-process arbitration to share ({@link Locker#arbitration()} of another locker)
     * @return the open locker; close it when done
     */
    public static Locker open(String uri, LockerConfig config, LocalArbitration arbitration) {
        if (config == null) {
            throw new IllegalArgumentException("config must not be null");
        }
        return open(uri, config.toBuilder().localArbitration(arbitration).build());
    }

    /**
     * Opens a locker for {@code uri} with {@code config}, through the backend that serves the URI's scheme.
     *
     * @param uri the locker URI; its scheme picks the backend
     * @param config the settings; URI options override them
     * @return the open locker; close it when done
     */
    public static Locker open(String uri, LockerConfig config) {
        return provider(uri, config).open(uri, config);
    }

    /**
     * Checks {@code uri} as {@link #open(String, LockerConfig)} would, without connecting, starting a thread or
     * creating a file, and returns the configuration the locker would run with: {@code config} with the URI's options
     * applied ({@code expiry}, {@code maxKeyBytes}...). {@code open} runs the same parsing, so a URI that passes here
     * fails there only for what needs the backend (unreachable, refused, missing table...).
     *
     * @param uri the locker URI; its scheme picks the backend
     * @param config the settings; URI options override them
     * @return the effective configuration
     * @throws IllegalArgumentException for a malformed URI, an unknown scheme or option, or a bad value, naming it (the
     *     message shows the URI only {@linkplain #redact redacted})
     */
    public static LockerConfig check(String uri, LockerConfig config) {
        return provider(uri, config).check(uri, config);
    }

    /** The provider of {@code uri}'s scheme, after the checks shared by {@link #open} and {@link #check}. */
    private static LockerProvider provider(String uri, LockerConfig config) {
        if (uri == null || uri.isBlank()) {
            throw new IllegalArgumentException("locker URI must not be empty; known schemes: " + providers().keySet());
        }
        if (config == null) {
            throw new IllegalArgumentException("config must not be null");
        }
        int colon = uri.indexOf(':');
        if (colon <= 0) {
            throw new IllegalArgumentException("locker URI '" + redact(uri) + "' has no scheme" + redisGuess(uri)
                    + "; known schemes: " + KNOWN + onClasspath());
        }
        String scheme = uri.substring(0, colon).toLowerCase(Locale.ROOT);
        Map<String, LockerProvider> providers = providers();
        LockerProvider provider = providers.get(scheme);
        if (provider == null) {
            String module = MODULES.get(scheme);
            if (module != null) {
                throw new IllegalArgumentException("no locker backend for scheme '" + scheme + "' on the classpath (URI '"
                        + redact(uri) + "'): add dev.locker:" + module + " to the classpath" + onClasspath());
            }
            if (!uri.startsWith("//", colon + 1)) {
                throw new IllegalArgumentException("locker URI '" + redact(uri) + "' has no scheme ('" + redact(scheme)
                        + "' is not one)" + redisGuess(uri) + "; known schemes: " + KNOWN + onClasspath());
            }
            throw new IllegalArgumentException("no locker backend for scheme '" + redact(scheme) + "' (URI '"
                    + redact(uri) + "'); known schemes: " + KNOWN + onClasspath());
        }
        return provider;
    }

    /**
     * The URI as it may appear in a message or a log line: the password of its user info (from the first ':' after
     * {@code scheme://} up to the last '@', so a password with an unencoded '/', '?', ':' or '@' is masked whole) and
     * the value of every query option whose name says password, secret or token (and MongoDB's
     * {@code authMechanismProperties}) are replaced by {@code ***}. When a backend on the classpath serves the URI's
     * scheme, a secret option's value also takes in the options after it that the backend does not know (its
     * {@link LockerProvider#optionSyntax()}): with a raw {@code &} in a password, {@code ?password=ab&cd=ef} shows as
     * {@code ?password=***}. It errs towards masking too much. Every module shows URIs through this method (or, inside
     * a backend, its own {@link OptionSyntax#redact}, which agrees with it).
     *
     * @param uri any URI (or any text that may be one)
     * @return the URI with its secrets masked; null for null
     */
    public static String redact(String uri) {
        return optionSyntax(uri).redact(uri);
    }

    /**
     * The secrets {@link #redact} masks in {@code uri}, as written and percent-decoded, the longest first: for tools
     * that must also scrub them from free text (a library's message that quotes a password it was given). Where a
     * secret took in options its backend does not know, each of them is listed too.
     *
     * @param uri any URI
     * @return the secrets, non-empty, the longest first; empty for null
     */
    public static java.util.List<String> secrets(String uri) {
        return optionSyntax(uri).secrets(uri);
    }

    /**
     * The option syntax of the backend that serves {@code uri}'s scheme: {@link OptionSyntax#ANY} when there is none
     * (or no scheme), {@link OptionSyntax#NONE} (mask more) when the backends cannot be asked.
     */
    private static OptionSyntax optionSyntax(String uri) {
        int colon = uri == null ? -1 : uri.indexOf(':');
        if (colon <= 0 || !SCHEME.matcher(uri.substring(0, colon)).matches()) {
            return OptionSyntax.ANY;
        }
        try {
            LockerProvider provider = providers().get(uri.substring(0, colon).toLowerCase(Locale.ROOT));
            if (provider == null) {
                return OptionSyntax.ANY;
            }
            OptionSyntax syntax = provider.optionSyntax();
            return syntax == null ? OptionSyntax.NONE : syntax;
        } catch (RuntimeException | ServiceConfigurationError | LinkageError e) {
            return OptionSyntax.NONE;
        }
    }

    private static final Pattern SCHEME = Pattern.compile("[A-Za-z][A-Za-z0-9+.-]*");

    /** The module that serves each scheme Locker has, so a refusal can say which one to add. */
    private static final Map<String, String> MODULES = Map.of("redis", "locker-redis", "rediss", "locker-redis",
            "mongodb", "locker-mongo", "mongodb+srv", "locker-mongo", "hbase", "locker-hbase", "file", "locker-file",
            "mem", "locker-engine");

    /** Every scheme of {@link #MODULES} as a URI starts with it, most used first. */
    private static final String KNOWN = "redis://, rediss://, mongodb://, mongodb+srv://, hbase://, file:, mem:";

    /** Text without {@code scheme://} is most often a Redis address: the hint shows it as one, redacted. */
    private static String redisGuess(String uri) {
        return ": for a Redis server, write redis://" + redact(uri).strip();
    }

    /** The schemes this classpath serves, for a refusal: which backend modules are really there. */
    private static String onClasspath() {
        java.util.Set<String> here = providers().keySet();
        return here.isEmpty() ? " (no backend module is on the classpath)" : " (on the classpath: " + here + ")";
    }

    /**
     * The schemes of every backend on the classpath, sorted, with their providers.
     *
     * @return the schemes of every backend on the classpath, sorted, with their providers
     */
    public static Map<String, LockerProvider> providers() {
        Map<String, LockerProvider> out = new TreeMap<>();
        for (LockerProvider p : ServiceLoader.load(LockerProvider.class, Lockers.class.getClassLoader())) {
            for (String s : p.schemes()) {
                out.putIfAbsent(s.toLowerCase(Locale.ROOT), p);
            }
        }
        return out;
    }
}
