package dev.locker.api;

import java.util.Locale;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.TreeMap;

/**
 * Opens a {@link Locker} for a URI, picking the backend by scheme: {@code mem:}, {@code redis://}, {@code rediss://},
 * {@code mongodb://}, {@code mongodb+srv://}, {@code hbase://}. A backend is available when its module is on the
 * classpath; switching backends is a configuration change.
 */
public final class Lockers {

    private Lockers() {
    }

    /** Opens a locker with default configuration (a fresh random rid). */
    public static Locker open(String uri) {
        return open(uri, LockerConfig.defaults());
    }

    public static Locker open(String uri, LockerConfig config) {
        if (uri == null || uri.isBlank()) {
            throw new IllegalArgumentException("locker URI must not be empty; known schemes: " + providers().keySet());
        }
        if (config == null) {
            throw new IllegalArgumentException("config must not be null");
        }
        int colon = uri.indexOf(':');
        if (colon <= 0) {
            throw new IllegalArgumentException("locker URI '" + uri + "' has no scheme; known schemes: "
                    + providers().keySet());
        }
        String scheme = uri.substring(0, colon).toLowerCase(Locale.ROOT);
        Map<String, LockerProvider> providers = providers();
        LockerProvider provider = providers.get(scheme);
        if (provider == null) {
            throw new IllegalArgumentException("no locker backend for scheme '" + scheme + "' (URI '" + uri
                    + "'); known schemes: " + providers.keySet()
                    + " (add the backend's module, e.g. locker-redis, to the classpath)");
        }
        return provider.open(uri, config);
    }

    /** The schemes of every backend on the classpath, sorted, with their providers. */
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
