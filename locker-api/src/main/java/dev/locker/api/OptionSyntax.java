package dev.locker.api;

import java.util.List;
import java.util.Optional;

/**
 * How a backend reads the query of its URIs, as far as redaction needs it: which separator and name start an option it
 * knows. {@link Lockers#redact(String)} needs it for one case: a raw (not percent-encoded) separator inside a secret
 * option's value, {@code ?password=ab&cd=ef}, splits the secret, and what follows looks like an option. When that
 * "option" is one the backend does not know, it may be the rest of the secret ({@code ab&cd=ef}), so it is masked with
 * the secret: {@code ?password=***}. An option the backend knows ends the secret's value ({@code ?password=***&expiry=1s}):
 * the backend reads it as an option too.
 *
 * <p>A backend declares its syntax through {@link LockerProvider#optionSyntax()}; {@link Lockers#redact(String)} uses
 * the syntax of the URI's backend, and a backend's own messages may call {@link #redact} directly.
 */
@FunctionalInterface
public interface OptionSyntax {

    /** Every name after every separator starts an option: a secret's value ends at the next {@code name=}. */
    OptionSyntax ANY = (separator, name) -> true;

    /** No option is known: everything after a secret option, to the end of the URI, is masked with it. */
    OptionSyntax NONE = (separator, name) -> false;

    /**
     * Whether {@code separator} followed by {@code name} and {@code '='}, after the query's first option, starts an
     * option this backend reads as one it knows; false for a separator the backend does not split at (such text is
     * part of the previous value to it) and for a name it does not know.
     *
     * @param separator {@code '&'}, {@code ';'} or {@code '?'}
     * @param name the option's name as written (not percent-decoded), possibly empty
     * @return whether it starts an option the backend knows
     */
    boolean startsKnownOption(char separator, String name);

    /**
     * {@code uri} as a message may show it: {@link Lockers#redact(String)} with this syntax.
     *
     * @param uri any URI (or any text that may be one)
     * @return the URI with its secrets masked; null for null
     */
    default String redact(String uri) {
        return UriRedaction.redact(uri, this);
    }

    /**
     * The secrets {@link #redact} masks: {@link Lockers#secrets(String)} with this syntax.
     *
     * @param uri any URI
     * @return the secrets, non-empty, the longest first; empty for null
     */
    default List<String> secrets(String uri) {
        return UriRedaction.secrets(uri, this);
    }

    /**
     * For a message about option {@code name} of {@code uri} (one the backend does not know, or a malformed one): empty
     * when {@link #redact the redacted URI} shows an option of that name, so the message may name it; else what hides
     * it, such as {@code the secret option 'password'} or {@code the password of the user info}. The option is then
     * masked as part of that secret and may be a piece of it: the message must not name it.
     *
     * @param uri the URI
     * @param name the option's name as written in {@code uri}
     * @return empty when the option may be named, else a description of the secret that may contain it
     */
    default Optional<String> secretHiding(String uri, String name) {
        return UriRedaction.secretHiding(uri, this, name);
    }
}
