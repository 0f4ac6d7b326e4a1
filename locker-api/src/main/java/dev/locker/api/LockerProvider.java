package dev.locker.api;

import java.util.Set;

/**
 * A backend, found by {@link java.util.ServiceLoader} and chosen by URI scheme through {@link Lockers#open}
 * and {@link Lockers#check}.
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

    /**
     * Checks {@code uri} and returns the configuration a locker opened with it would run with, <b>without I/O</b>: no
     * connection, no thread, no file or directory created. It runs the same parsing and option validation as
     * {@link #open} (one parse function serves both, so they cannot disagree): a URI that passes here fails in
     * {@code open} only for what needs the backend itself.
     *
     * @param uri the locker URI; its scheme picks the backend
     * @param config the settings; URI options override them
     * @return {@code config} with the URI's options applied ({@code expiry}, {@code maxKeyBytes}...)
     * @throws IllegalArgumentException when the URI or an option is bad, naming what is wrong (the URI only as
     *     {@link Lockers#redact} shows it)
     */
    LockerConfig check(String uri, LockerConfig config);

    /**
     * How this backend reads the query options of its URIs, for {@link Lockers#redact}: which separator and name start
     * an option it knows. A secret option's value is masked together with the options after it that this syntax does
     * not know, since with a raw {@code &} in the secret they may be its rest. The default, {@link OptionSyntax#ANY}, knows
     * every name (a secret's value ends at the next {@code name=}).
     *
     * @return the syntax; not null
     */
    default OptionSyntax optionSyntax() {
        return OptionSyntax.ANY;
    }
}
