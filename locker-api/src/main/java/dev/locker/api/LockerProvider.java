package dev.locker.api;

import java.util.Set;

/**
 * A backend, found by {@link java.util.ServiceLoader} and chosen by URI scheme through {@link Lockers#open}.
 * Implementations register themselves in {@code META-INF/services/dev.locker.api.LockerProvider}.
 */
public interface LockerProvider {

    /**
     * The URI schemes this backend serves, lower case, without the colon (e.g. {@code "redis"}, {@code "rediss"}).
     *
     * @return the schemes it serves
     */
    Set<String> schemes();

    /**
     * Opens a locker for {@code uri}. The URI's own options (query parameters) override {@code config} where both
     * say something.
     *
     * @param uri the locker URI; its scheme picks the backend
     * @param config the settings; URI options override them
     * @throws IllegalArgumentException when the URI is malformed, naming what is wrong
     * @return the open locker; close it when done
     */
    Locker open(String uri, LockerConfig config);
}
