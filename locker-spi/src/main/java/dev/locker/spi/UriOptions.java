package dev.locker.spi;

import dev.locker.api.LockerConfig;
import dev.locker.api.Lockers;
import dev.locker.api.OptionSyntax;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * The query options of a locker URI ({@code ?expiry=30s&lockWait=50ms}), shared by every provider so that the
 * common options mean the same on every backend: {@code expiry}, {@code lockWait}, {@code localWait},
 * {@code retries}, {@code maxKeyBytes}, {@code rid}, {@code why}. Durations are {@code 250ms}, {@code 30s},
 * {@code 5m}, {@code 1h} or ISO-8601 ({@code PT30S}): a unit is required, 0 aside. Unknown options are an error, so a
 * typo is not ignored.
 */
public final class UriOptions {

    /** The options every backend understands. */
    public static final Set<String> COMMON = Set.of("expiry", "lockWait", "localWait", "retries", "maxKeyBytes", "rid", "why");

    private final String uri;
    private final Map<String, String> options;
    /** Each option's name as written in the URI (before percent-decoding), by decoded name. */
    private final Map<String, String> written;

    private UriOptions(String uri, Map<String, String> options, Map<String, String> written) {
        this.uri = uri;
        this.options = options;
        this.written = written;
    }

    /**
     * Parses the part after '?' (if any) of {@code uri}.
     *
     * @param uri the locker URI; its scheme picks the backend
     * @return the options
     */
    public static UriOptions parse(String uri) {
        Map<String, String> out = new LinkedHashMap<>();
        Map<String, String> written = new LinkedHashMap<>();
        int q = uri.indexOf('?');
        if (q >= 0 && q < uri.length() - 1) {
            for (String pair : uri.substring(q + 1).split("&")) {
                if (pair.isEmpty()) {
                    continue;
                }
                int eq = pair.indexOf('=');
                String raw = eq < 0 ? pair : pair.substring(0, eq);
                String k = decoded(uri, raw, raw);
                String v = eq < 0 ? "" : decoded(uri, raw, pair.substring(eq + 1));
                if (out.put(k, v) != null) {
                    // before the backend's options are known: only the common ones count as known
                    OptionSyntax common = syntax(Set.of());
                    throw new IllegalArgumentException(aboutOption(uri, raw, common, "option '%s' is given twice",
                            "an option given twice") + " in locker URI " + common.redact(uri));
                }
                written.putIfAbsent(k, raw);
            }
        }
        return new UriOptions(uri, Collections.unmodifiableMap(out), Collections.unmodifiableMap(written));
    }

    /**
     * The URI without its query part.
     *
     * @return the URI without its query part
     */
    public String base() {
        int q = uri.indexOf('?');
        return q < 0 ? uri : uri.substring(0, q);
    }

    /** {@return every option, by name} */
    public Map<String, String> asMap() {
        return options;
    }

    /**
     * {@return the option's value, or {@code dflt} when absent}
     *
     * @param name the option's name
     * @param dflt the value when the option is absent
     */
    public String get(String name, String dflt) {
        return options.getOrDefault(name, dflt);
    }

    /**
     * {@return the option as an int, or {@code dflt} when absent}
     *
     * @param name the option's name
     * @param dflt the value when the option is absent
     */
    public int getInt(String name, int dflt) {
        String v = options.get(name);
        if (v == null) {
            return dflt;
        }
        try {
            return Integer.parseInt(v.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("option " + name + "=" + shown(uri, v) + " is not a whole number in locker URI " + Lockers.redact(uri), e);
        }
    }

    /**
     * {@return the option as a boolean ({@code true} or {@code false}), or {@code dflt} when absent}
     *
     * @param name the option's name
     * @param dflt the value when the option is absent
     */
    public boolean getBoolean(String name, boolean dflt) {
        String v = options.get(name);
        if (v == null) {
            return dflt;
        }
        switch (v.trim().toLowerCase(Locale.ROOT)) {
            case "true": case "yes": case "1": case "":
                return true;
            case "false": case "no": case "0":
                return false;
            default:
                throw new IllegalArgumentException("option " + name + "=" + shown(uri, v) + " is not true/false in locker URI " + Lockers.redact(uri));
        }
    }

    /**
     * {@return the option as a duration ({@code 250ms}, {@code 30s}, {@code 5m}, {@code 1h} or ISO-8601), or
     * {@code dflt} when absent}
     *
     * @param name the option's name
     * @param dflt the value when the option is absent
     */
    public Duration getDuration(String name, Duration dflt) {
        String v = options.get(name);
        return v == null ? dflt : duration(name, v);
    }

    /**
     * Fails naming every option that is neither common nor in {@code backendOptions}.
     *
     * @param backendOptions the option names this backend understands beside {@link #COMMON}
     * @return these options
     */
    public UriOptions requireKnown(Set<String> backendOptions) {
        OptionSyntax syntax = syntax(backendOptions);
        for (String k : options.keySet()) {
            if (!COMMON.contains(k) && !backendOptions.contains(k)) {
                throw new IllegalArgumentException(unknownOption(uri, written.getOrDefault(k, k), syntax)
                        + " in locker URI " + syntax.redact(uri) + "; common options: " + new TreeSet<>(COMMON)
                        + ", backend options: " + new TreeSet<>(backendOptions));
            }
        }
        return this;
    }

    /**
     * The syntax of the URIs this class reads ({@link #parse} then {@link #requireKnown}): options split at '&amp;'
     * only, names percent-decoded, known when common or in {@code backendOptions}. A backend that reads its URI this
     * way returns it from {@link dev.locker.api.LockerProvider#optionSyntax()}.
     *
     * @param backendOptions the option names the backend understands beside {@link #COMMON}
     * @return the syntax
     */
    public static OptionSyntax syntax(Set<String> backendOptions) {
        Set<String> known = Set.copyOf(backendOptions);
        return (separator, name) -> {
            if (separator != '&') {
                return false;
            }
            String decoded = decode(name); // a bad escape throws: the redaction counts that as unknown
            return COMMON.contains(decoded) || known.contains(decoded);
        };
    }

    /**
     * The words of a message about option {@code name} of {@code uri} that the backend does not know: {@code unknown
     * option 'cd'}, or, when {@link OptionSyntax#secretHiding the redacted URI hides it} (it follows a secret option
     * whose value had a raw '&amp;', and may be the rest of that secret), words that neither name it nor show it, say
     * what hides it and how to write an '&amp;' inside a secret. Every backend's unknown-option message goes through
     * here; the message must show the URI through the same syntax ({@link OptionSyntax#redact}).
     *
     * @param uri the URI
     * @param name the option's name as written in the URI (not decoded)
     * @param syntax the backend's syntax
     * @return the words, without the URI
     */
    public static String unknownOption(String uri, String name, OptionSyntax syntax) {
        return aboutOption(uri, name, syntax, "unknown option '%s'", "an unknown option");
    }

    /**
     * Like {@link #unknownOption}, for any message about one option that may be a piece of a secret.
     *
     * @param uri the URI
     * @param name the option's name as written in the URI (not decoded)
     * @param syntax the backend's syntax
     * @param named the words when the option may be named, with {@code %s} where its name goes
     *     ({@code "option '%s' has no value"})
     * @param unnamed the words when it may not, naming no option ({@code "an option without a value"})
     * @return the words, without the URI
     */
    public static String aboutOption(String uri, String name, OptionSyntax syntax, String named, String unnamed) {
        Optional<String> hiding = syntax.secretHiding(uri, name);
        if (hiding.isEmpty()) {
            return String.format(Locale.ROOT, named, name);
        }
        String secret = hiding.get();
        String semicolon = uri.contains(";" + name) ? " and a ';' as %3B" : "";
        if (secret.startsWith("the secret option")) {
            return unnamed + " follows " + secret + ", so it may be part of that secret and is not named: an '&' "
                    + "inside a secret must be percent-encoded as %26" + semicolon;
        }
        return unnamed + " is inside " + secret + ", so it may be part of that secret and is not named: in a "
                + "secret, percent-encode an '&' as %26, a '?' as %3F and a '/' as %2F" + semicolon;
    }

    /**
     * {@code config} with the common options of this URI applied on top.
     *
     * @param config the configuration to start from
     * @return {@code config} with the common options of this URI applied on top
     */
    public LockerConfig applyTo(LockerConfig config) {
        LockerConfig.Builder b = config.toBuilder();
        applyTo(b);
        return b.build();
    }

    /**
     * Sets the common options of this URI on {@code b}; other options are left to the backend.
     *
     * @param b the builder to set them on
     * @return {@code b}
     */
    public LockerConfig.Builder applyTo(LockerConfig.Builder b) {
        if (options.containsKey("expiry")) {
            b.expiry(getDuration("expiry", null));
        }
        if (options.containsKey("lockWait")) {
            b.lockWait(getDuration("lockWait", null));
        }
        if (options.containsKey("localWait")) {
            b.localWait(getDuration("localWait", null));
        }
        if (options.containsKey("retries")) {
            b.retries(getInt("retries", 0));
        }
        if (options.containsKey("maxKeyBytes")) {
            b.maxKeyBytes(getInt("maxKeyBytes", 0));
        }
        if (options.containsKey("rid")) {
            b.rid(options.get("rid"));
        }
        if (options.containsKey("why")) {
            b.why(options.get("why"));
        }
        return b;
    }

    /**
     * Parses {@code 250ms}, {@code 30s}, {@code 5m}, {@code 1h}, ISO-8601 or {@code 0}. A bare number other than 0 is
     * refused: a unit is required, so that {@code expiry=30} cannot quietly mean 30 ms.
     *
     * @param name the option's name
     * @param v the option's value
     * @return the duration
     * @throws IllegalArgumentException naming the option and the accepted forms, for a value without a unit, a
     *     negative one or one that is not a duration
     */
    public static Duration duration(String name, String v) {
        String s = v.trim().toLowerCase(Locale.ROOT);
        Duration d = null;
        try {
            if (s.startsWith("p")) {
                d = Duration.parse(s.toUpperCase(Locale.ROOT));
            } else if (s.equals("0")) {
                d = Duration.ZERO;
            } else if (!s.isEmpty() && s.chars().allMatch(Character::isDigit)) {
                // a bare number once meant milliseconds, so expiry=30 was 30 ms: a unit is now required
                throw new IllegalArgumentException("option " + name + "=" + v + " has no unit: write " + s + "ms or "
                        + s + "s (" + FORMS + ")");
            } else if (s.endsWith("ms")) {
                d = Duration.ofMillis(Long.parseLong(s.substring(0, s.length() - 2)));
            } else if (s.length() > 1) {
                long n = Long.parseLong(s.substring(0, s.length() - 1));
                switch (s.charAt(s.length() - 1)) {
                    case 's': d = Duration.ofSeconds(n); break;
                    case 'm': d = Duration.ofMinutes(n); break;
                    case 'h': d = Duration.ofHours(n); break;
                    default: break;
                }
            }
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("option " + name + "=" + v + " is not a duration (" + FORMS + ")", e);
        } catch (IllegalArgumentException e) {
            throw e; // the unit message above
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("option " + name + "=" + v + " is not a duration (" + FORMS + ")", e);
        }
        if (d == null) {
            throw new IllegalArgumentException("option " + name + "=" + v + " is not a duration (" + FORMS + ")");
        }
        if (d.isNegative()) {
            throw new IllegalArgumentException("option " + name + "=" + v + " must not be negative");
        }
        return d;
    }

    /** The accepted duration forms, for messages. */
    private static final String FORMS = "accepted: 250ms, 30s, 5m, 1h, ISO-8601 such as PT30S, or 0";

    /**
     * A piece of {@code uri} (a host, a port, a value) as a message may quote it: itself when
     * {@link Lockers#redact the redacted URI} shows it too, else {@code ***}. A parser that cut a malformed URI at the
     * wrong place may hold a piece of a password; quoting through this shows nothing the redacted URI does not.
     *
     * @param uri the URI the piece comes from
     * @param piece the piece to quote
     * @return {@code piece}, or {@code ***} when the redacted URI does not show it
     */
    public static String shown(String uri, String piece) {
        if (piece == null || uri == null) {
            return piece;
        }
        return Lockers.redact(uri).contains(piece) ? piece : "***";
    }

    /**
     * {@code s} percent-decoded, or empty for a malformed escape. URLDecoder's own message quotes the two characters
     * after a bad '%', a piece of a password when the escape is in one: a caller words its own message, through
     * {@link #aboutOption}, instead.
     *
     * @param s the text to decode
     * @param plusIsSpace whether a '+' is a space (form encoding, as {@link #parse} reads) or itself
     * @return the decoded text, or empty when an escape is malformed
     */
    public static Optional<String> percentDecoded(String s, boolean plusIsSpace) {
        try {
            return Optional.of(URLDecoder.decode(plusIsSpace ? s : s.replace("+", "%2B"), StandardCharsets.UTF_8));
        } catch (IllegalArgumentException malformed) {
            return Optional.empty();
        }
    }

    /** {@code s}, the name or value of option {@code name}, decoded; a malformed escape fails without quoting it. */
    private static String decoded(String uri, String name, String s) {
        return percentDecoded(s, true).orElseThrow(() -> {
            OptionSyntax common = syntax(Set.of());
            return new IllegalArgumentException(aboutOption(uri, name, common,
                    "a malformed percent-escape in option '%s' (write a '%%' itself as %%25)",
                    "an option with a malformed percent-escape (write a '%' itself as %25)")
                    + " in locker URI " + common.redact(uri));
        });
    }

    private static String decode(String s) {
        return URLDecoder.decode(s, StandardCharsets.UTF_8);
    }
}
