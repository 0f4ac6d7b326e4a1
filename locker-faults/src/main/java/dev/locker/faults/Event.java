package dev.locker.faults;

import java.util.Locale;

/**
 * One line of the timeline: when ({@link System#nanoTime()}, shared by every JVM of the host), who (a worker id,
 * {@code referee} or {@code harness}), what, on which lock, with which fencing token and validity deadline (monotonic
 * nanoseconds, 0 when not known), and free text. Serialised as one tab-separated line; tabs and line breaks in the
 * text are replaced, so a line always parses back.
 *
 * @param nanos    when, on the host's monotonic clock
 * @param source   a worker id, {@code referee} or {@code harness}
 * @param type     what happened
 * @param lock     the lock's name, or {@code -}
 * @param token    the fencing token, or 0
 * @param deadline the writer's validity deadline (monotonic nanoseconds), or 0
 * @param detail   free text
 */
public record Event(long nanos, String source, Type type, String lock, long token, long deadline, String detail) {

    /** What an event records. */
    public enum Type {
        /** A worker opened its locker and waits for the start. */
        READY,
        /** A worker asked for a lock (tryAcquire / acquireWithin invoked). */
        ACQUIRE,
        /** The lock was granted: token and validity deadline. */
        GRANTED,
        /** The wait ended without the lock (busy, unreachable or refused: the detail says which). */
        REFUSED,
        /** The holder's validity deadline as it saw it (after a renewal, or sampled while holding). */
        DEADLINE,
        /** A write sent to the referee, with its token and the writer's deadline at sending. */
        WRITE,
        /** The referee's answer as the worker saw it: accepted. */
        WRITE_OK,
        /** The referee's answer as the worker saw it: refused (the detail says why). */
        WRITE_REFUSED,
        /** The holder stopped writing because its lease was no longer valid. */
        INVALID,
        /** The release step began at the backend (from the locker's probe). */
        RELEASE_STEP,
        /** The holder called close() on its lease. */
        RELEASE,
        /** close() returned. */
        RELEASED,
        /** The lost signal: the detail is the reason and what was observed. */
        LOST,
        /** The worker finished its cycles and closed its locker. */
        EXIT,
        /** The referee accepted a write. */
        ACCEPTED,
        /** The referee refused a write whose token is lower than the highest it saw for the lock. */
        STALE,
        /** The referee saw the highest token again from a different worker: two holders with one token. */
        CLASH,
        /** A fault injected by the harness (the detail says which, the lock names the worker or server). */
        FAULT,
        /** A note from the harness or a worker. */
        NOTE
    }

    /**
     * The event as one tab-separated line (without the line break).
     *
     * @return the line
     */
    public String toLine() {
        return nanos + "\t" + clean(source) + "\t" + type + "\t" + clean(lock) + "\t" + token + "\t" + deadline + "\t"
                + clean(detail);
    }

    /**
     * Parses a line written by {@link #toLine()}.
     *
     * @param line the line
     * @return the event
     * @throws IllegalArgumentException when the line is not an event
     */
    public static Event parse(String line) {
        String[] f = line.split("\t", 7);
        if (f.length < 7) {
            throw new IllegalArgumentException("not an event line (want 7 tab-separated fields): " + line);
        }
        try {
            return new Event(Long.parseLong(f[0]), f[1], Type.valueOf(f[2].toUpperCase(Locale.ROOT)), f[3],
                    Long.parseLong(f[4]), Long.parseLong(f[5]), f[6]);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("not an event line: " + line, e);
        }
    }

    /**
     * Whether a line looks like an event (a worker's stdout may carry other output).
     *
     * @param line the line
     * @return true when {@link #parse} would accept it
     */
    public static boolean isEvent(String line) {
        try {
            parse(line);
            return true;
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    private static String clean(String s) {
        if (s == null || s.isEmpty()) {
            return "-";
        }
        return s.replace('\t', ' ').replace('\n', ' ').replace('\r', ' ');
    }

    @Override
    public String toString() {
        return toLine();
    }
}
