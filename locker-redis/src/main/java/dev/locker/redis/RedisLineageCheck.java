package dev.locker.redis;

import dev.locker.spi.DeploymentCheck.Finding;
import redis.clients.jedis.exceptions.JedisException;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;

/**
 * The doctor's {@code lineage} check: from when the server's data is known whole, as the acquire script's restart
 * guard judges it ({@code data_since} in {@code common.lua}), and what that means for the next grant.
 *
 * <p>On a single server it reads the lineage record and decides as the script does. The record continues when it
 * names the server's replication id or its {@code master_replid2}. Otherwise a server that never took data over
 * dates its data from its start. A server that took data over, with no record naming it, starts its lineage at its
 * next admission, and grants wait out the guard from then. A Cluster keeps no record: a master that took its data
 * over is judged by its uptime alone, which says nothing of that data's age.
 */
final class RedisLineageCheck {

    private static final String CHECK = "lineage";

    private RedisLineageCheck() {
    }

    /**
     * @param keepsData the server's persistence keeps every claim across a restart (AOF, {@code appendfsync always})
     */
    static Finding lineage(RedisNode node, String name, Map<String, String> info, Map<String, String> replication,
                           Duration guard, RedisLockerBuilder b, boolean cluster, boolean keepsData) {
        String id = replication == null ? null : replication.get("master_replid");
        String id2 = replication == null ? null : replication.get("master_replid2");
        long uptime = info == null ? -1 : number(info.get("uptime_in_seconds"));
        if (id == null || uptime < 0) {
            String why = replication == null ? "INFO replication was refused to this user"
                    : info == null ? "INFO server was refused to this user"
                    : "the server reports no replication id (Redis before 4) or no uptime";
            return Finding.warn(CHECK, name + "could not check the age of the server's data (" + why + "): the "
                    + "restart guard then counts the server's uptime alone", "run the doctor as a user allowed INFO "
                    + "server and INFO replication (ACL +info)");
        }
        boolean tookDataOver = id2 != null && !id2.matches("0+");
        Duration up = Duration.ofSeconds(uptime);
        if (cluster) {
            return cluster(name, id2, tookDataOver, up, guard, keepsData);
        }
        String key = new String(new RedisKeys(b.keyPrefixOption()).lineageKey(), StandardCharsets.UTF_8);
        String recordId = null;
        long recordSince = -1;
        long now;
        try {
            now = serverMicros(node);
            Object v = node.call("GET", key);
            if (v != null) {
                String[] parts = RedisNode.text(v).split(" ");
                if (parts.length == 2 && parts[0].matches("[0-9a-fA-F]+") && parts[1].matches("\\d{1,18}")) {
                    recordId = parts[0];
                    recordSince = Long.parseLong(parts[1]);
                }
            }
        } catch (JedisException refused) {
            return Finding.warn(CHECK, name + "could not read the lineage record " + key + " or the server's TIME ("
                    + refused.getMessage() + "); Locker's scripts need GET and SET for it, or a promoted replica "
                    + "grants nothing under a guard", "run the doctor as a user allowed TIME and GET on the prefix's "
                    + "keys");
        }
        // as the script: the real uptime is at least (uptime - 1) s plus the fraction of the current second
        long upsince = now - ((uptime - 1) * 1_000_000L + now % 1_000_000L);
        String ids = "replication id " + id + (tookDataOver ? ", master_replid2 " + id2 + " (it took data over since "
                + "it started: a promoted replica)" : ", master_replid2 unset (it took no data over since it started)");
        String record = recordId == null ? "no lineage record " + key
                : "lineage record " + key + " names " + recordId + (recordId.equals(id) ? " (this server's id)"
                : recordId.equals(id2) ? " (its master_replid2: the master it took over from)" : " (neither of its ids)")
                + ", since " + instant(recordSince);
        boolean continues = recordId != null && (recordId.equals(id) || recordId.equals(id2));
        if (!continues && tookDataOver) {
            // the script starts the lineage at its next admission: grants wait the guard from then
            String what = name + ids + "; " + record + ": its data is of unknown age, so the next grant starts its "
                    + "lineage then";
            if (guard.isZero()) {
                return Finding.ok(CHECK, what + ", which restartGuard=0 does not wait for");
            }
            return Finding.warn(CHECK, what + ", and no lock is granted for restartGuard=" + RedisDoctor.format(guard)
                            + " after it (claims lost before it took over could still be held)",
                    "expected after a promotion that no grant followed; it passes by itself. To avoid it, keep claims "
                            + "across restarts (appendonly yes, appendfsync always) and set restartGuard=0");
        }
        long since = continues ? Math.max(upsince, recordSince) : upsince;
        Duration age = Duration.ofNanos(Math.max(0, now - since) * 1_000L);
        String what = name + ids + "; " + record + (continues ? ": its data continues that lineage" : ": its data "
                + "dates from its start (the next grant rewrites the record)") + ", known whole since "
                + instant(since) + " (" + RedisDoctor.format(Duration.ofSeconds(age.toSeconds())) + " ago)";
        if (guard.isZero()) {
            return Finding.ok(CHECK, what + "; restartGuard=0 does not wait for it");
        }
        if (since <= upsince) {
            // the data is as old as the server: the restart-guard check reports the wait, if any
            return Finding.ok(CHECK, what + ": no younger than the server itself, so only its uptime can hold grants "
                    + "back (see restart-guard)");
        }
        if (age.compareTo(guard) < 0) {
            return Finding.warn(CHECK, what + ": grants are refused for about " + RedisDoctor.format(Duration.ofSeconds(
                            guard.minus(age).toSeconds() + 1)) + " more (restartGuard=" + RedisDoctor.format(guard) + ")",
                    "wait; it passes by itself");
        }
        return Finding.ok(CHECK, what + ": longer than restartGuard=" + RedisDoctor.format(guard) + ", the next grant "
                + "is not held back for it");
    }

    /** A Cluster master: no lineage record (a second key per script would fail while a slot migrates). */
    private static Finding cluster(String name, String id2, boolean tookDataOver, Duration up, Duration guard,
                                   boolean keepsData) {
        if (!tookDataOver) {
            return Finding.ok(CHECK, name + "took no data over since it started (master_replid2 unset): its uptime ("
                    + RedisDoctor.format(up) + ") dates its data, as the restart guard counts it");
        }
        String what = name + "took its data over from another server since it started (master_replid2 " + id2
                + ": a promoted replica). Cluster mode keeps no lineage record, so the restart guard counts its "
                + "uptime (" + RedisDoctor.format(up) + ") alone, which says nothing of that data's age";
        if (keepsData || guard.isZero()) {
            return Finding.ok(CHECK, what + (keepsData ? "; its persistence keeps claims across restarts, so none "
                    + "was lost before it took over" : "; restartGuard=0 declares that no restart loses claims"));
        }
        return Finding.warn(CHECK, what + ". If the master it replaced had restarted without data less than "
                        + "restartGuard=" + RedisDoctor.format(guard) + " before, its replica resynced that empty data, "
                        + "and a lock whose holder still works can be granted here at once",
                "keep claims across restarts on every master (appendonly yes, appendfsync always); or never restart "
                        + "a master without persistence automatically, so that its replica takes over instead (as "
                        + "Redis's replication docs advise)");
    }

    private static long serverMicros(RedisNode node) {
        Object t = node.call("TIME");
        List<?> l = (List<?>) t;
        return Long.parseLong(RedisNode.text(l.get(0))) * 1_000_000L + Long.parseLong(RedisNode.text(l.get(1)));
    }

    private static String instant(long micros) {
        return Instant.ofEpochSecond(micros / 1_000_000L, (micros % 1_000_000L) * 1_000L).toString();
    }

    private static long number(String s) {
        try {
            return s == null ? -1 : Long.parseLong(s.trim());
        } catch (NumberFormatException e) {
            return -1;
        }
    }
}
