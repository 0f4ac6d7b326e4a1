package dev.locker.cli;

import dev.locker.api.Lockers;

import java.util.List;

/**
 * Keeps a URI's secrets out of everything the CLI prints. {@link #mask} shows a URI as {@link Lockers#redact} does;
 * {@link #scrub} replaces the same secrets ({@link Lockers#secrets}), raw or percent-decoded, wherever they appear in
 * a line about to be printed (a backend's message, a stack trace), so that no path prints them.
 */
final class Secrets {

    /** Secrets shorter than this are masked in URIs but not searched for in free text (it would garble it). */
    private static final int MIN_SCRUB_LENGTH = 3;

    private final List<String> secrets;

    Secrets(String uri) {
        this.secrets = Lockers.secrets(uri); // the longest first, so no part of one is left behind
    }

    /** The URI as it may be printed: password and secret options replaced by {@code ***}. */
    static String mask(String uri) {
        return Lockers.redact(uri);
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
