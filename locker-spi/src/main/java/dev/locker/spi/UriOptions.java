package dev.locker.spi;

import dev.locker.api.LockerConfig;
import dev.locker.api.Lockers;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The query options of a locker URI ({@code ?expiry=30s&lockWait=50ms}), shared by every provider so that the
 * common options mean the same on every backend: {@code expiry}, {@code lockWait}, {@code localWait},
 * {@code retries}, {@code maxKeyBytes}, {@code rid}, {@code why}. Durations are {@code 250ms}, {@code 30s},
 * {@code 5m}, {@code 1h}, ISO-8601 ({@code PT30S}) or bare milliseconds. Unknown options are an error, so a typo is not ignored.
 */
public final class UriOptions {

    /** The options every backend understands. */
    public static final Set<String> COMMON = Set.of("expiry", "lockWait", "localWait", "retries", "maxKeyBytes", "rid", "why");

    private final String uri;
    private final Map<String, String> options;

    private UriOptions(String uri, Map<String, String> options) {
        this.uri = uri;
        this.options = options;
    }

    /**
     * Parses the part after '?' (if any) of {@code uri}.
     *
     * @param uri the locker URI; its scheme picks the backend
     * @return the options
     */
    public static UriOptions parse(String uri) {
        Map<String, String> out = new LinkedHashMap<>();
        int q = uri.indexOf('?');
        if (q >= 0 && q < uri.length() - 1) {
            for (String pair : uri.substring(q + 1).split("&")) {
                if (pair.isEmpty()) {
                    continue;
                }
                int eq = pair.indexOf('=');
                String k = decode(eq < 0 ? pair : pair.substring(0, eq));
                String v = eq < 0 ? "" : decode(pair.substring(eq + 1));
                if (out.put(k, v) != null) {
                    throw new IllegalArgumentException("option '" + shown(uri, k) + "' is given twice in locker URI " + Lockers.redact(uri));
                }
            }
        }
        return new UriOptions(uri, Collections.unmodifiableMap(out));
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
        for (String k : options.keySet()) {
            if (!COMMON.contains(k) && !backendOptions.contains(k)) {
                throw new IllegalArgumentException("unknown option '" + shown(uri, k) + "' in locker URI " + Lockers.redact(uri)
                        + "; common options: " + new java.util.TreeSet<>(COMMON) + ", backend options: "
                        + new java.util.TreeSet<>(backendOptions));
            }
        }
        return this;
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

    private static String decode(String s) {
        return URLDecoder.decode(s, StandardCharsets.UTF_8);
    }
}
