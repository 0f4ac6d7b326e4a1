package dev.locker.api;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
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

    /** The URI with every secret replaced by {@link #MASK}; null for null. */
    static String redact(String uri) {
        if (uri == null) {
            return null;
        }
        List<int[]> ranges = secretRanges(uri);
        StringBuilder out = new StringBuilder(uri.length());
        int from = 0;
        for (int[] r : ranges) {
            out.append(uri, from, r[0]).append(MASK);
            from = r[1];
        }
        return out.append(uri, from, uri.length()).toString();
    }

    /** Every secret {@link #redact} masks, as written and percent-decoded, non-empty, the longest first. */
    static List<String> secrets(String uri) {
        if (uri == null) {
            return List.of();
        }
        Set<String> out = new LinkedHashSet<>();
        for (int[] r : secretRanges(uri)) {
            String raw = uri.substring(r[0], r[1]);
            if (!raw.isEmpty()) {
                out.add(raw);
                for (String decoded : List.of(decoded(raw), decoded(raw.replace("+", "%2B")))) {
                    if (!decoded.isEmpty()) {
                        out.add(decoded); // '+' is a space to a form decoder, itself to others: both
                    }
                }
            }
        }
        List<String> sorted = new ArrayList<>(out);
        sorted.sort(Comparator.comparingInt(String::length).reversed());
        return List.copyOf(sorted);
    }

    /** The [start, end) ranges of {@code uri} to mask, in order, not overlapping. */
    private static List<int[]> secretRanges(String uri) {
        List<int[]> ranges = new ArrayList<>();
        Matcher scheme = SCHEME.matcher(uri);
        // without "scheme://" there is no marked authority: the password may start at the first ':' of all
        int start = scheme.find() ? scheme.end() : 0;
        int at = uri.lastIndexOf('@');
        int optionsFrom = start;
        if (at >= start) {
            int colon = uri.indexOf(':', start);
            if (colon >= 0 && colon < at) {
                ranges.add(new int[]{colon + 1, at});
                optionsFrom = at;
            }
        }
        Matcher m = OPTION.matcher(uri);
        m.region(optionsFrom, uri.length());
        while (m.find()) {
            if (secretName(m.group(1))) {
                ranges.add(new int[]{m.start(2), m.end(2)});
            }
        }
        return ranges;
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
