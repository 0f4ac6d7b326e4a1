package dev.locker.cli;

import dev.locker.api.ForcedRelease;
import dev.locker.api.KeyColumn;
import dev.locker.api.LockInfo;
import dev.locker.api.LockOwner;
import dev.locker.api.RunRecord;

import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * How locks, holders and records look in the CLI's output: the human form (legible names, instants with how long
 * ago or ahead) and the JSON form (stable field names, ISO-8601 instants, names in the CLI's {@code %XX} notation).
 */
final class Show {

    private Show() {
    }

    /** A lock as the operator would name it on the command line: {@code NAME} or {@code NAME --column C}. */
    static String lock(KeyColumn lock) {
        String key = LockNames.format(lock.key());
        return lock.columnLength() == 0 ? key : key + " --column " + LockNames.format(lock.column());
    }

    static Map<String, Object> lockJson(KeyColumn lock) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("key", LockNames.format(lock.key()));
        m.put("column", LockNames.format(lock.column()));
        m.put("serverName", lock.legible()); // as redis-cli, mongosh and hbase shell show it (KeyColumn.legible)
        return m;
    }

    static Map<String, Object> ownerJson(LockOwner o) {
        if (o == null) {
            return null;
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("rid", o.rid());
        m.put("host", o.host());
        m.put("pid", o.pid());
        m.put("thread", o.thread());
        m.put("why", o.why());
        m.put("since", o.since() == null ? null : o.since().toString());
        return m;
    }

    static Map<String, Object> infoJson(LockInfo info) {
        Map<String, Object> m = lockJson(info.lock());
        m.put("holder", ownerJson(info.holder()));
        m.put("token", info.fencingToken());
        m.put("expiresAt", info.expiresAt().toString());
        return m;
    }

    static Map<String, Object> forcedJson(ForcedRelease f) {
        if (f == null) {
            return null;
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("at", f.at().toString());
        m.put("by", ownerJson(f.by()));
        m.put("reason", f.reason());
        m.put("released", ownerJson(f.released().orElse(null)));
        m.put("releasedToken", f.releasedToken().isPresent() ? f.releasedToken().getAsLong() : null);
        return m;
    }

    static Map<String, Object> runJson(RunRecord r) {
        if (r == null) {
            return null;
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("ranBy", ownerJson(r.ranBy()));
        m.put("startedAt", r.startedAt().toString());
        m.put("finishedAt", r.finishedAt().toString());
        m.put("token", r.token());
        return m;
    }

    /** {@code rid (host, pid N, thread T)}: who, on one line. */
    static String owner(LockOwner o) {
        StringBuilder sb = new StringBuilder(clean(o.rid()));
        StringBuilder where = new StringBuilder();
        if (!o.host().isEmpty()) {
            where.append(clean(o.host()));
        }
        if (o.pid() > 0) {
            where.append(where.length() > 0 ? ", " : "").append("pid ").append(o.pid());
        }
        if (!o.thread().isEmpty()) {
            where.append(where.length() > 0 ? ", " : "").append("thread ").append(clean(o.thread()));
        }
        if (where.length() > 0) {
            sb.append(" (").append(where).append(')');
        }
        return sb.toString();
    }

    /** {@code 2026-01-02T03:04:05Z (5m12s ago)}, or {@code -} for null. */
    static String instant(Instant t, Instant now) {
        if (t == null) {
            return "-";
        }
        Duration d = Duration.between(now, t);
        String rel = d.isNegative() ? duration(d.negated()) + " ago" : "in " + duration(d);
        return t.truncatedTo(ChronoUnit.SECONDS) + " (" + rel + ")";
    }

    /** {@code 850ms}, {@code 42s}, {@code 5m12s}, {@code 3h04m}, {@code 2d03h}. */
    static String duration(Duration d) {
        long ms = d.toMillis();
        if (ms < 1000) {
            return ms + "ms";
        }
        long s = ms / 1000;
        if (s < 60) {
            return s + "s";
        }
        if (s < 3600) {
            return s / 60 + "m" + String.format("%02d", s % 60) + "s";
        }
        if (s < 86400) {
            return s / 3600 + "h" + String.format("%02d", s % 3600 / 60) + "m";
        }
        return s / 86400 + "d" + String.format("%02d", s % 86400 / 3600) + "h";
    }

    /**
     * Text from the backend made safe for a terminal: control and format characters (escape sequences, bidi
     * overrides) become {@code ?}.
     */
    static String clean(String text) {
        StringBuilder sb = new StringBuilder(text.length());
        text.codePoints().forEach(cp -> {
            int type = Character.getType(cp);
            sb.appendCodePoint(type == Character.CONTROL || type == Character.FORMAT ? '?' : cp);
        });
        return sb.toString();
    }

    /** A why, shortened to {@code max} characters, control characters as spaces. */
    static String why(String why, int max) {
        String w = clean(why);
        if (w.length() > max) {
            w = w.substring(0, Math.max(1, max - 1)) + "…";
        }
        return w;
    }
}
