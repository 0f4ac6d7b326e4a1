package dev.locker.api;

import java.util.Locale;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.TreeMap;

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
        if (uri == null || uri.isBlank()) {
            throw new IllegalArgumentException("locker URI must not be empty; known schemes: " + providers().keySet());
        }
        if (config == null) {
            throw new IllegalArgumentException("config must not be null");
        }
        int colon = uri.indexOf(':');
        if (colon <= 0) {
            throw new IllegalArgumentException("locker URI '" + redacted(uri) + "' has no scheme; known schemes: "
                    + providers().keySet());
        }
        String scheme = uri.substring(0, colon).toLowerCase(Locale.ROOT);
        Map<String, LockerProvider> providers = providers();
        LockerProvider provider = providers.get(scheme);
        if (provider == null) {
            throw new IllegalArgumentException("no locker backend for scheme '" + scheme + "' (URI '" + redacted(uri)
                    + "'); known schemes: " + providers.keySet()
                    + " (add the backend's module, e.g. locker-redis, to the classpath)");
        }
        return provider.open(uri, config);
    }

    /** The URI as it may appear in a message: a password in its user info, or in a password option, is masked. */
    static String redacted(String uri) {
        String out = uri;
        int q = out.indexOf('?');
        int end = q >= 0 ? q : out.length();
        int at = out.lastIndexOf('@', end);
        int scheme = out.indexOf(':');
        if (at > 0) {
            int colon = out.lastIndexOf(':', at);
            if (colon > scheme) {
                out = out.substring(0, colon + 1) + "***" + out.substring(at);
            }
        }
        return out.replaceAll("(?i)((?:^|[?&;])[a-z]*password=)[^&;#]*", "$1***");
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
