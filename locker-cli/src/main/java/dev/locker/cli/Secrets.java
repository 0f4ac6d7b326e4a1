package dev.locker.cli;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Keeps a URI's secrets out of everything the CLI prints. {@link #mask} shows a URI with its password (in the user
 * info) and every option whose name says password, secret or key store secret replaced by {@code ***};
 * {@link #scrub} replaces those secrets, raw or percent-decoded, wherever they appear in a line about to be printed
 * (a backend's message, a stack trace), so that no path prints them.
 */
final class Secrets {

    /** Secrets shorter than this are masked in URIs but not searched for in free text (it would garble it). */
    private static final int MIN_SCRUB_LENGTH = 3;
    private static final Pattern USER_INFO = Pattern.compile("^([a-zA-Z][a-zA-Z0-9+.-]*://[^/?#@:]*:)([^/?#@]*)@");
    private static final Pattern OPTION = Pattern.compile("([?&;]([^=&;#]*)=)([^&;#]*)");

    private final List<String> secrets = new ArrayList<>();

    Secrets(String uri) {
        if (uri == null) {
            return;
        }
        Matcher u = USER_INFO.matcher(uri);
        if (u.find()) {
            add(u.group(2));
        }
        Matcher o = OPTION.matcher(uri);
        while (o.find()) {
            if (secretName(o.group(2))) {
                add(o.group(3));
            }
        }
    }

    private void add(String raw) {
        if (raw.isEmpty()) {
            return;
        }
        secrets.add(raw);
        try {
            String decoded = URLDecoder.decode(raw, StandardCharsets.UTF_8);
            if (!decoded.equals(raw)) {
                secrets.add(decoded);
            }
        } catch (IllegalArgumentException notEncoded) {
            // a % that starts no escape: the raw form is all there is
        }
        secrets.sort((a, b) -> b.length() - a.length()); // the longest first, so no part of one is left behind
    }

    private static boolean secretName(String name) {
        String n = name.toLowerCase(Locale.ROOT);
        return n.contains("password") || n.contains("secret") || n.contains("passwd") || n.equals("pwd");
    }

    /** The URI as it may be printed: password and secret options replaced by {@code ***}. */
    static String mask(String uri) {
        if (uri == null) {
            return null;
        }
        String out = USER_INFO.matcher(uri).replaceFirst("$1***@");
        Matcher o = OPTION.matcher(out);
        StringBuilder sb = new StringBuilder();
        while (o.find()) {
            String replacement = secretName(o.group(2)) ? o.group(1) + "***" : o.group();
            o.appendReplacement(sb, Matcher.quoteReplacement(replacement));
        }
        o.appendTail(sb);
        return sb.toString();
    }

    /** {@code text} with every secret of the URI replaced by {@code ***}. */
    String scrub(String text) {
        if (text == null || secrets.isEmpty()) {
            return text;
        }
        String out = text;
        for (String s : secrets) {
            if (s.length() >= MIN_SCRUB_LENGTH) {
                out = out.replace(s, "***");
            }
        }
        return out;
    }
}
