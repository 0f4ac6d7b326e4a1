package dev.locker.api;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The one place that decides which parts of a locker URI are secret (behind {@link Lockers#redact} and
 * {@link Lockers#secrets}). Invariant: it errs towards masking. Masking too much only makes a message less legible;
 * masking too little leaks a credential, and a URI with a malformed password (an unencoded '/', '?', '#', ':' or '@',
 * common in generated secrets) is exactly the one that ends up in an error message.
 *
 * <p>Masked: the user info's password, from the first ':' after {@code scheme://} (after the scheme's ':' when there is
 * no {@code //}) up to the last '@' of the whole URI (an '@' in a query value moves that end to the right: more is
 * masked, nothing leaks); and the value of every query option whose name (raw or percent-decoded) contains
 * {@code password}, {@code passwd}, {@code pwd}, {@code secret}, {@code token}, {@code credential}, {@code apikey},
 * {@code accesskey}, {@code privatekey}, or is MongoDB's {@code authMechanismProperties} (it can carry
 * {@code AWS_SESSION_TOKEN}). An option's value runs up to the next {@code ?}, {@code &} or {@code ;} that starts
 * another {@code name=}, so an unencoded separator inside a value cannot hide a later option.
 *
 * <p>With the {@link OptionSyntax} of the URI's backend, a secret option's value also takes in every option after it
 * that the backend does not know (or whose separator it does not split at), up to the next one it knows: with a raw
 * {@code &} in a password, {@code ?password=ab&cd=ef&expiry=1s} shows as {@code ?password=***&expiry=1s}, since
 * {@code cd=ef} may be the rest of the password ({@code ab&cd=ef}). The backend's message about that unknown option
 * must then not name it: {@link #secretHiding} tells it so.
 */
final class UriRedaction {

    static final String MASK = "***";

    private static final Pattern SCHEME = Pattern.compile("^[A-Za-z][A-Za-z0-9+.-]*://");
    private static final Pattern OPTION = Pattern.compile("[?&;]([^=?&;#/]*)=(.*?)(?=[?&;][^=?&;#/]*=|$)",
            Pattern.DOTALL);
    private static final String[] SECRET_WORDS = {"password", "passwd", "pwd", "secret", "token", "credential",
            "apikey", "accesskey", "privatekey", "authmechanismproperties"};

    private UriRedaction() {
    }

    /** The URI with every secret replaced by {@link #MASK}, for a backend of unknown syntax; null for null. */
    static String redact(String uri) {
        return redact(uri, OptionSyntax.ANY);
    }

    /** The URI with every secret replaced by {@link #MASK}; null for null. */
    static String redact(String uri, OptionSyntax syntax) {
        if (uri == null) {
            return null;
        }
        return masked(uri, scan(uri, syntax));
    }

    /** Every secret {@link #redact} masks, for a backend of unknown syntax. */
    static List<String> secrets(String uri) {
        return secrets(uri, OptionSyntax.ANY);
    }

    /**
     * Every secret {@link #redact} masks, as written and percent-decoded, non-empty, the longest first: each masked
     * range whole and, where it took in options the backend does not know, its own value and each of those options
     * (as {@code name=value}, name and value), since any of them may be the piece of the secret a message quotes.
     */
    static List<String> secrets(String uri, OptionSyntax syntax) {
        if (uri == null) {
            return List.of();
        }
        Set<String> out = new LinkedHashSet<>();
        for (Secret s : scan(uri, syntax)) {
            List<String> pieces = new ArrayList<>();
            pieces.add(uri.substring(s.start, s.end));
            pieces.addAll(s.pieces);
            for (String raw : pieces) {
                if (!raw.isEmpty()) {
                    out.add(raw);
                    for (String decoded : List.of(decoded(raw), decoded(raw.replace("+", "%2B")))) {
                        if (!decoded.isEmpty()) {
                            out.add(decoded); // '+' is a space to a form decoder, itself to others: both
                        }
                    }
                }
            }
        }
        List<String> sorted = new ArrayList<>(out);
        sorted.sort(Comparator.comparingInt(String::length).reversed());
        return List.copyOf(sorted);
    }

    /**
     * Empty when {@link #redact(String, OptionSyntax)} shows an option named {@code name} (or the URI has no secret at
     * all); else the secret that hides it: the one that took in an option of that name, else one whose text contains
     * the name, else "a secret".
     */
    static Optional<String> secretHiding(String uri, OptionSyntax syntax, String name) {
        if (uri == null || name == null) {
            return Optional.empty();
        }
        List<Secret> secrets = scan(uri, syntax);
        if (secrets.isEmpty()) {
            return Optional.empty();
        }
        Pattern shown = Pattern.compile("[?&;]" + Pattern.quote(name) + "(?:=|[?&;#]|$)");
        if (shown.matcher(masked(uri, secrets)).find()) {
            return Optional.empty();
        }
        for (Secret s : secrets) {
            if (s.tookIn.contains(name)) {
                return Optional.of(s.what);
            }
        }
        for (Secret s : secrets) {
            if (uri.substring(s.start, s.end).contains(name)) {
                return Optional.of(s.what);
            }
        }
        return Optional.of("a secret");
    }

    private static String masked(String uri, List<Secret> secrets) {
        StringBuilder out = new StringBuilder(uri.length());
        int from = 0;
        for (Secret s : secrets) {
            out.append(uri, from, s.start).append(MASK);
            from = s.end;
        }
        return out.append(uri, from, uri.length()).toString();
    }

    /** A range of the URI to mask, what it is for messages, and what it took in beside its own value. */
    private static final class Secret {
        final int start;
        int end;
        final String what;
        final List<String> tookIn = new ArrayList<>();
        final List<String> pieces = new ArrayList<>();

        Secret(int start, int end, String what) {
            this.start = start;
            this.end = end;
            this.what = what;
        }
    }

    /** The ranges of {@code uri} to mask, in order, not overlapping. */
    private static List<Secret> scan(String uri, OptionSyntax syntax) {
        List<Secret> ranges = new ArrayList<>();
        Matcher scheme = SCHEME.matcher(uri);
        // without "scheme://" there is no marked authority: the password may start at the first ':' of all
        int start = scheme.find() ? scheme.end() : 0;
        int at = uri.lastIndexOf('@');
        int optionsFrom = start;
        if (at >= start) {
            int colon = uri.indexOf(':', start);
            if (colon >= 0 && colon < at) {
                ranges.add(new Secret(colon + 1, at, "the password of the user info"));
                optionsFrom = at;
            }
        }
        Matcher m = OPTION.matcher(uri);
        m.region(optionsFrom, uri.length());
        Secret open = null; // the secret option whose value may run on over options the backend does not know
        while (m.find()) {
            String name = m.group(1);
            if (open != null && !known(syntax, uri.charAt(m.start()), name)) {
                if (open.pieces.isEmpty()) {
                    open.pieces.add(uri.substring(open.start, open.end)); // its own value, as the backend reads it
                }
                open.end = m.end();
                open.tookIn.add(name);
                open.pieces.addAll(List.of(uri.substring(m.start() + 1, m.end()), name, m.group(2)));
                continue;
            }
            open = null;
            if (secretName(name)) {
                open = new Secret(m.start(2), m.end(2), "the secret option '" + name + "'");
                ranges.add(open);
            }
        }
        return ranges;
    }

    /** Whether the backend knows this option; a syntax that fails counts as not knowing it (more is masked). */
    private static boolean known(OptionSyntax syntax, char separator, String name) {
        try {
            return syntax.startsKnownOption(separator, name);
        } catch (RuntimeException e) {
            return false;
        }
    }

    private static boolean secretName(String name) {
        String raw = name.toLowerCase(Locale.ROOT);
        String decoded = decoded(name).toLowerCase(Locale.ROOT);
        for (String word : SECRET_WORDS) {
            if (raw.contains(word) || decoded.contains(word)) {
                return true;
            }
        }
        return false;
    }

    private static String decoded(String s) {
        if (s.indexOf('%') < 0 && s.indexOf('+') < 0) {
            return s;
        }
        try {
            return URLDecoder.decode(s, StandardCharsets.UTF_8);
        } catch (IllegalArgumentException notEncoded) {
            return s;
        }
    }
}
