package dev.locker.cli;

import java.io.PrintStream;

/**
 * Where the CLI writes: results on stdout (human text, or one JSON document per result with {@code --json}),
 * messages and status lines on stderr. Every line passes through {@link Secrets#scrub} first.
 */
final class Terminal {

    private final PrintStream out;
    private final PrintStream err;
    private final boolean interactive;
    private volatile Secrets secrets = new Secrets(null);

    Terminal(PrintStream out, PrintStream err, boolean interactive) {
        this.out = out;
        this.err = err;
        this.interactive = interactive;
    }

    /** From now on, the secrets of {@code uri} are scrubbed from every line. */
    void hide(String uri) {
        this.secrets = new Secrets(uri);
    }

    void out(String line) {
        synchronized (out) {
            out.println(secrets.scrub(line));
            out.flush();
        }
    }

    /**
     * Writes part of a line (a streamed JSON document, page by page), scrubbed; {@link #out} ends it. A part is whole
     * JSON values, so no secret is split between two parts.
     */
    void write(String part) {
        synchronized (out) {
            out.print(secrets.scrub(part));
            out.flush();
        }
    }

    void json(Object value) {
        out(Json.write(value));
    }

    void err(String line) {
        synchronized (err) {
            err.println(secrets.scrub(line));
            err.flush();
        }
    }

    /** Writes a status line in place (a terminal) or as a line of its own. */
    void status(String line, boolean last) {
        synchronized (err) {
            if (interactive) {
                err.print("\r\033[K" + secrets.scrub(line) + (last ? "\n" : ""));
            } else {
                err.println(secrets.scrub(line));
            }
            err.flush();
        }
    }

    /** Clears a status line written in place. */
    void clearStatus() {
        if (interactive) {
            synchronized (err) {
                err.print("\r\033[K");
                err.flush();
            }
        }
    }

    boolean interactive() {
        return interactive;
    }

    String scrub(String text) {
        return secrets.scrub(text);
    }
}
