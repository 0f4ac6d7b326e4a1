package dev.locker.redis;

import dev.locker.spi.DeploymentCheck;
import dev.locker.api.LockerConfig;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisException;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;

/**
 * The {@code redis://} and {@code rediss://} deployment checks ({@code locker doctor}): what a Redis server or Cluster
 * does that breaks the guarantees {@link RedisLocker}'s safety argument assumes, judged with the URI's own options.
 *
 * <ul>
 *   <li>{@code server}: version and role (a replica refuses writes; Lua scripts that read {@code TIME} before writing
 *       need Redis 5+; {@code redis.acl_check_cmd} needs 7+);</li>
 *   <li>{@code maxmemory-policy}: any policy but {@code noeviction} may evict a held lock's key (every lock key
 *       carries the safety-net {@code PEXPIRE}, so {@code volatile-*} too), and the lock is granted twice: FAIL, even
 *       while {@code maxmemory} is 0 (one {@code CONFIG SET} away);</li>
 *   <li>{@code persistence}: a restart that can lose claims (no AOF with {@code appendfsync always}) is safe only with
 *       a {@code restartGuard} of at least the expiry (one guard for every locker of the server, default 60 s);</li>
 *   <li>{@code run-records}: a restart that loses data loses the records of finished {@code runOnce} jobs too,
 *       and no guard brings them back: such a job runs again (WARN);</li>
 *   <li>{@code restart-guard}: grants are refused while the server's uptime is below the guard; a guard other than
 *       the one the URI's prefix records fails, and a guard of 0 beside a recorded one warns (it is sound only where
 *       the server keeps its data, which {@code persistence} checks);</li>
 *   <li>{@code lineage}: how old the server's data is known to be, as the restart guard judges it. On a single
 *       server: the lineage record (present or not, its replication id against the server's two, its start and
 *       age) and what it means for the next grant. In a Cluster, which keeps no record: whether a master took its
 *       data over from another server since it started (WARN where a restart can lose claims);</li>
 *   <li>{@code acl}: every command Locker sends or its scripts call, with a lock key and the release channel, asked
 *       of {@code redis.acl_check_cmd} inside a script, so a least-privilege user needs no admin right to be
 *       checked;</li>
 *   <li>{@code server-clocks}: TIME on every master and replica it can reach, against {@code serverClockSkew}: a
 *       failover or slot migration hands a claim's expiry to another server's clock (FAIL beyond the bound);</li>
 *   <li>{@code replication}: replicas that a failover could promote without the claims written since
 *       ({@code replicas=N} makes each claim wait for N acknowledgements, {@code WAIT}).</li>
 * </ul>
 * In Cluster mode the per-server checks run on every master. Nothing is written. A check whose input this user may not
 * read (an INFO section or CONFIG GET refused by the ACL, a field missing) says so, WARN "could not check", unless its
 * verdict does not depend on that input; it never reads an absence as a fact ("no replicas").
 */
public final class RedisDoctor implements DeploymentCheck {

    /** Redis major versions: below 5 scripts need effects replication turned on by hand; 7 has acl_check_cmd. */
    private static final int MIN_MAJOR = 5;
    private static final int ACL_CHECK_MAJOR = 7;

    @Override
    public Set<String> schemes() {
        return Set.of("redis", "rediss");
    }

    @Override
    public List<Finding> check(String uri, Consumer<String> progress) {
        RedisLockerBuilder b = RedisLocker.builder().uri(uri); // a malformed URI fails here, before any I/O
        LockerConfig config = b.mergedConfig();
        Duration expiry = config.expiry();
        Duration guard = b.restartGuard();
        String where = b.describe();
        List<Finding> out = new ArrayList<>();
        progress.accept("connecting to " + where);
        UnifiedJedis client;
        try {
            client = b.newClient(1, 1);
        } catch (JedisException e) {
            throw RedisFailures.classify(e, null, "checking the deployment", where);
        }
        try (client) {
            Map<String, RedisNode> nodes = RedisNode.of(client);
            for (Map.Entry<String, RedisNode> e : nodes.entrySet()) {
                String name = nodes.size() == 1 ? "" : e.getKey() + ": ";
                progress.accept("checking " + (name.isEmpty() ? where : e.getKey()));
                try {
                    checkNode(e.getValue(), name, b, guard, expiry, nodes.size() > 1, out);
                } catch (JedisException ex) {
                    throw RedisFailures.classify(ex, null, "checking the deployment", where);
                }
            }
            progress.accept("reading the servers' clocks");
            out.add(RedisClockCheck.serverClocks(uri, nodes, b.serverClockSkewOption()));
        }
        return out;
    }

    /** One server: its INFO sections, then the checks. */
    private void checkNode(RedisNode node, String name, RedisLockerBuilder b, Duration guard, Duration expiry,
                           boolean cluster, List<Finding> out) {
        Map<String, String> info = RedisNode.info(node, "server");
        Map<String, String> replication = RedisNode.info(node, "replication");
        if (cluster && replication != null && "slave".equals(replication.get("role"))) {
            return; // a Cluster's replica: its master is checked
        }
        int major = info == null ? -1 : major(info.get("redis_version"));
        out.add(server(name, info, replication, major));
        out.add(eviction(name, RedisNode.info(node, "memory"), b));
        Map<String, String> persistence = RedisNode.info(node, "persistence");
        String appendfsync = RedisNode.config(node, "appendfsync");
        out.add(persistence(name, persistence, appendfsync, RedisNode.config(node, "save"), guard, expiry));
        out.add(runRecords(name, persistence, appendfsync));
        out.add(restartGuard(name, info, guard, cluster ? null : recordedGuard(node, b)));
        boolean keepsData = persistence != null && "1".equals(persistence.get("aof_enabled"))
                && "always".equals(appendfsync);
        out.add(RedisLineageCheck.lineage(node, name, info, replication, guard, b, cluster, keepsData));
        out.add(acl(node, name, b, major));
        out.add(replication(name, replication, b.replicasOption()));
    }

    private static Finding server(String name, Map<String, String> info, Map<String, String> replication, int major) {
        String version = info == null ? null : info.get("redis_version");
        String role = replication == null ? null : replication.get("role");
        String what = name + "Redis " + (version == null ? "?" : version) + ", "
                + (info == null ? "?" : info.getOrDefault("redis_mode", "standalone")) + ", " + (role == null ? "?" : role);
        if ("slave".equals(role)) {
            return Finding.fail("server", what + ": a replica refuses writes, so no lock can be taken here",
                    "point the URI at the master (" + replication.getOrDefault("master_host", "?") + ":"
                            + replication.getOrDefault("master_port", "?") + ")");
        }
        if (major > 0 && major < MIN_MAJOR) {
            return Finding.fail("server", what + ": Locker's scripts read TIME and then write, which Redis before 5.0 "
                    + "refuses without effects replication", "upgrade to Redis 7 (Locker is tested on 7.x)");
        }
        if (major > 0 && major < ACL_CHECK_MAJOR) {
            return Finding.warn("server", what + ": works, but ACL rights cannot be checked before Redis 7 "
                    + "(redis.acl_check_cmd)", "upgrade to Redis 7 (Locker is tested on 7.x)");
        }
        if (role == null) {
            return Finding.warn("server", what + ": could not check the server's role (" + refused(replication == null
                    ? "replication" : null) + "): a replica would refuse every write", "run the doctor as a user "
                    + "allowed INFO replication (ACL +info|replication), or check by hand that the URI names a master");
        }
        if (version == null) {
            return Finding.warn("server", what + ": could not check the server's version (" + refused(info == null
                    ? "server" : null) + "): Locker needs Redis 5 or later (7 for the ACL check)", "run the doctor as "
                    + "a user allowed INFO server, or check the version by hand (Locker is tested on 7.x)");
        }
        return Finding.ok("server", what);
    }

    /** Why a section could not be read: refused, or (null) the field is missing from the server's answer. */
    private static String refused(String section) {
        return section == null ? "the server's INFO lacks the field" : "INFO " + section + " was refused to this user";
    }

    private static Finding eviction(String name, Map<String, String> memory, RedisLockerBuilder b) {
        if (memory == null || memory.get("maxmemory_policy") == null) {
            return Finding.warn("maxmemory-policy", name + "could not check the eviction policy (" + refused(
                    memory == null ? "memory" : null) + "): any policy but noeviction may evict a held lock's key",
                    "run the doctor as a user allowed INFO memory (Locker's own evictionCheck needs it too), or check "
                            + "by hand that maxmemory-policy is noeviction");
        }
        String policy = memory.get("maxmemory_policy");
        long max = number(memory.get("maxmemory"));
        if (policy.equals("noeviction")) {
            return Finding.ok("maxmemory-policy", name + "noeviction: Redis never evicts a lock key"
                    + (max > 0 ? " (when full, writes fail with OOM: acquires fail for a while, never twice)" : ""));
        }
        String which = policy.startsWith("volatile") ? "keys with a TTL, and every lock key has one (the safety-net "
                + "PEXPIRE)" : "any key";
        String when = max > 0 ? "once memory reaches maxmemory (" + max + " bytes)"
                : "as soon as maxmemory is set (now 0, unlimited: one CONFIG SET away)";
        String refusal = max > 0 && b.evictionCheckOption() == RedisLocker.EvictionCheck.FAIL
                ? "; meanwhile acquires are refused (evictionCheck=fail)" : "";
        return Finding.fail("maxmemory-policy", name + "maxmemory-policy " + policy + " evicts " + which + " " + when
                        + ", a held lock's key among them, and the lock is then granted to a second process" + refusal,
                "CONFIG SET maxmemory-policy noeviction and put 'maxmemory-policy noeviction' in redis.conf "
                        + "(a cache that must evict needs a Redis of its own, apart from the locks)");
    }

    private static Finding persistence(String name, Map<String, String> p, String appendfsync, String save,
                                       Duration guard, Duration expiry) {
        String aofEnabled = p == null ? null : p.get("aof_enabled");
        boolean aof = "1".equals(aofEnabled);
        boolean always = aof && "always".equals(appendfsync);
        boolean unknown = aofEnabled == null || aof && appendfsync == null;
        String what = aofEnabled == null ? "persistence unknown (" + refused(p == null ? "persistence" : null) + ")"
                : aof ? "AOF with appendfsync " + (appendfsync == null ? "unknown (CONFIG GET refused)" : appendfsync)
                : "no AOF" + (save == null ? "" : save.isBlank() ? ", no RDB snapshots" : ", RDB snapshots (save " + save
                + ")");
        if (always) {
            return Finding.ok("persistence", name + what + ": claims survive a restart"
                    + (guard.isZero() ? "" : "; restartGuard=" + format(guard) + " only delays grants after one (0 is "
                    + "enough here)"));
        }
        if (guard.compareTo(expiry) >= 0) {
            // safe whatever the persistence: the guard covers a restart that loses every claim
            return Finding.ok("persistence", name + what + ": a restart can lose claims, and restartGuard="
                    + format(guard) + " (at least the expiry " + format(expiry) + ") holds grants off until they "
                    + "would have expired; every locker on this server needs an expiry of at most " + format(guard));
        }
        if (unknown) {
            return Finding.warn("persistence", name + what + ": could not check whether a restart keeps claims, and "
                            + "restartGuard=" + format(guard) + " is shorter than the expiry " + format(expiry)
                            + ": if it does not, a lock can be granted after a restart while its former holder still works",
                    "set restartGuard to at least the expiry on every locker of this server, or run the doctor as a "
                            + "user allowed INFO persistence and CONFIG GET appendfsync");
        }
        return Finding.fail("persistence", name + what + ": a restart can lose claims, and restartGuard="
                        + format(guard) + " is shorter than the expiry " + format(expiry) + ": after a restart a "
                        + "lock can be granted while its former holder still works",
                "set restartGuard to at least the expiry on every locker of this server, or run Redis with "
                        + "appendonly yes and appendfsync always");
    }

    /** Records of finished runs are data like any other: only a restart that keeps every write keeps them. */
    private static Finding runRecords(String name, Map<String, String> p, String appendfsync) {
        String aofEnabled = p == null ? null : p.get("aof_enabled");
        if ("1".equals(aofEnabled) && "always".equals(appendfsync)) {
            return Finding.ok("run-records", name + "AOF with appendfsync always: the records of finished runOnce jobs "
                    + "survive a restart");
        }
        String fix = "if a job must never run twice, run Redis with appendonly yes and appendfsync always; otherwise "
                + "make such jobs safe to run again";
        if (aofEnabled == null || "1".equals(aofEnabled) && appendfsync == null) {
            return Finding.warn("run-records", name + "could not check whether a restart keeps the records of "
                    + "finished runOnce jobs (" + refused(p == null ? "persistence" : null) + "): if it does not, such "
                    + "a job runs again after one", fix);
        }
        return Finding.warn("run-records", name + "a restart can lose the records of finished runOnce jobs (no AOF "
                + "with appendfsync always), and no restartGuard brings them back: such a job then runs again", fix);
    }

    /** The restart guard the lockers of the URI's prefix record on a single server (ms), or null when none is read. */
    private static Long recordedGuard(RedisNode node, RedisLockerBuilder b) {
        try {
            Object v = node.call("GET", new String(new RedisKeys(b.keyPrefixOption()).guardRecordKey(),
                    StandardCharsets.UTF_8));
            return v == null ? null : Long.valueOf(RedisNode.text(v));
        } catch (JedisException | NumberFormatException e) {
            return null;
        }
    }

    private static Finding restartGuard(String name, Map<String, String> info, Duration guard, Long recordedMs) {
        if (recordedMs != null && guard.isZero()) {
            return Finding.warn("restart-guard", name + "restartGuard=0, while the other lockers of this prefix use "
                            + "restartGuard=" + format(Duration.ofMillis(recordedMs)) + " here: 0 is sound only on a "
                            + "server that keeps its data across restarts (see persistence)",
                    "give every locker of this server one restartGuard: 0 only with appendonly yes and appendfsync "
                            + "always");
        }
        // the scripts record the guard in whole ms rounded up: compare in the same unit
        long guardMs = guard.toNanos() / 1_000_000 + (guard.toNanos() % 1_000_000 == 0 ? 0 : 1);
        if (recordedMs != null && recordedMs != guardMs) {
            return Finding.fail("restart-guard", name + "restartGuard=" + format(guard) + " differs from restartGuard="
                            + format(Duration.ofMillis(recordedMs)) + ", which the lockers of this prefix use here: "
                            + "acquires with it are refused, and after a restart the shorter guard would grant locks "
                            + "whose holders still work", "give every locker of this server one restartGuard");
        }
        if (guard.isZero()) {
            return Finding.ok("restart-guard", name + "restartGuard=0: grants right after a restart");
        }
        long uptime = info == null ? -1 : number(info.get("uptime_in_seconds"));
        if (uptime < 0) {
            return Finding.warn("restart-guard", name + "could not check the server's uptime (" + refused(
                    info == null ? "server" : null) + "): grants are refused while it is below restartGuard="
                    + format(guard), "run the doctor as a user allowed INFO server (Locker's restart guard needs it "
                    + "too)");
        }
        Duration up = Duration.ofSeconds(Math.max(0, uptime));
        if (up.compareTo(guard.plusSeconds(1)) < 0) {
            return Finding.warn("restart-guard", name + "the server has been up " + format(up) + ": grants are "
                            + "refused for about " + format(guard.plusSeconds(1).minus(up)) + " more (restartGuard="
                            + format(guard) + ", the server may have lost claims in its restart)",
                    "wait; or, if claims survive restarts here (appendonly yes, appendfsync always), add "
                            + "restartGuard=0 to the URI");
        }
        return Finding.ok("restart-guard", name + "up " + format(up) + ", longer than restartGuard=" + format(guard));
    }

    /** What Locker sends (or its scripts call), with the arguments that decide the ACL: the key and the channel. */
    private static List<List<String>> commands(String key, String channel, String lockChannel, int replicas,
                                               boolean cluster) {
        List<List<String>> c = new ArrayList<>(List.of(
                List.of("evalsha", "0000000000000000000000000000000000000000", "1", key),
                List.of("eval", "return 1", "1", key),
                List.of("hget", key, "f"), List.of("hset", key, "f", "v"), List.of("hdel", key, "f"),
                List.of("hgetall", key), List.of("hkeys", key), List.of("pexpire", key, "1000"),
                List.of("time"), List.of("info", "memory"), List.of("type", key),
                List.of("scan", "0", "match", key),
                List.of("publish", lockChannel, "x"), List.of("publish", channel, "x"),
                List.of("subscribe", channel, lockChannel)));
        if (replicas > 0) {
            c.add(List.of("wait", "1", "1000"));
        }
        if (cluster) {
            c.add(List.of("cluster", "slots"));
        }
        return c;
    }

    /** Commands without which only a convenience is lost; the rest break acquiring. */
    private static final Map<String, String> OPTIONAL = Map.of(
            "publish", "waiters are not woken by a release (they poll)",
            "subscribe", "waiters are not woken by a release (they poll)",
            "scan", "listing (locker list, show's token) fails",
            "type", "listing (locker list, show's token) fails");

    private static final String ACL_CHECK = "local denied = {}\n"
            + "local i = 1\n"
            + "while i <= #ARGV do\n"
            + "  local n = tonumber(ARGV[i])\n"
            + "  local args = {}\n"
            + "  for j = 1, n do args[j] = ARGV[i + j] end\n"
            + "  local ok, allowed = pcall(redis.acl_check_cmd, unpack(args))\n"
            + "  if not ok or not allowed then table.insert(denied, args[1]) end\n"
            + "  i = i + n + 1\n"
            + "end\n"
            + "return denied";

    private static Finding acl(RedisNode node, String name, RedisLockerBuilder b, int major) {
        if (major > 0 && major < ACL_CHECK_MAJOR) {
            return Finding.warn("acl", name + "not checked: redis.acl_check_cmd needs Redis 7", "check by hand that "
                    + "the URI's user may run " + commandNames(b));
        }
        String prefix = b.keyPrefixOption();
        String key = prefix + "{0000000000000000}doctor";
        String channel = prefix + "released";
        String lockChannel = prefix + "{0000000000000000}w"; // a lock's channel: its key and "w"
        boolean cluster = node.cluster();
        List<String> argv = new ArrayList<>();
        for (List<String> cmd : commands(key, channel, lockChannel, b.replicasOption(), cluster)) {
            argv.add(Integer.toString(cmd.size()));
            argv.addAll(cmd);
        }
        // a Cluster node answers MOVED to a script whose key lives on another node: there the key is checked only
        // inside the script (acl_check_cmd reads no key, so it runs on any node)
        List<Object> call = new ArrayList<>(cluster ? List.of("EVAL", ACL_CHECK, "0")
                : List.of("EVAL", ACL_CHECK, "1", key));
        call.addAll(argv);
        Object reply;
        try {
            reply = node.call(call.toArray(new String[0]));
        } catch (JedisDataException e) {
            String m = String.valueOf(e.getMessage());
            if (m.startsWith("NOPERM")) {
                return Finding.fail("acl", name + "this user may not run EVAL on " + key + ": Locker's scripts cannot "
                        + "run", "grant it: " + aclLine(b));
            }
            throw e;
        }
        List<String> denied = new ArrayList<>();
        if (reply instanceof List<?> l) {
            for (Object o : l) {
                String d = o instanceof byte[] bytes ? new String(bytes, StandardCharsets.UTF_8) : String.valueOf(o);
                if (!denied.contains(d)) { // publish is asked twice: on a lock's channel and the prefix's
                    denied.add(d);
                }
            }
        }
        if (denied.isEmpty()) {
            return Finding.ok("acl", name + "this user may run every command Locker uses on keys " + prefix
                    + "* and channels " + prefix + "*");
        }
        List<String> required = denied.stream().filter(d -> !OPTIONAL.containsKey(d.toLowerCase(Locale.ROOT))).toList();
        if (required.isEmpty()) {
            StringBuilder why = new StringBuilder(name + "denied " + denied + ": ");
            denied.stream().map(d -> OPTIONAL.get(d.toLowerCase(Locale.ROOT))).distinct()
                    .forEach(w -> why.append(w).append("; "));
            return Finding.warn("acl", why.substring(0, why.length() - 2), "grant them: " + aclLine(b));
        }
        return Finding.fail("acl", name + "denied " + denied + " on keys " + prefix + "* / channels " + prefix + "*"
                + ": acquiring fails", "grant them: " + aclLine(b));
    }

    private static String commandNames(RedisLockerBuilder b) {
        return "evalsha eval time hgetall hget hset hdel hkeys pexpire info type scan publish subscribe"
                + (b.replicasOption() > 0 ? " wait" : "");
    }

    private static String aclLine(RedisLockerBuilder b) {
        String p = b.keyPrefixOption();
        return "ACL SETUSER <user> ~" + p + "* &" + p + "* +" + commandNames(b).replace(" ", " +");
    }

    private static Finding replication(String name, Map<String, String> r, int replicas) {
        long connected = r == null ? -1 : number(r.get("connected_slaves"));
        if (connected < 0) {
            String why = refused(r == null ? "replication" : null);
            String fix = "run the doctor as a user allowed INFO replication (ACL +info|replication), or check by hand "
                    + "(INFO replication on the server)";
            return replicas > 0
                    ? Finding.warn("replication", name + "could not check that replicas=" + replicas + " replica(s) "
                            + "are connected (" + why + "): without them every claim waits replicaTimeout and acquiring "
                            + "fails", fix)
                    : Finding.warn("replication", name + "could not check for replicas (" + why + "): a replica "
                            + "replicates asynchronously with replicas=0, so a failover to one can lose a claim written "
                            + "just before it, and grant that lock twice", fix + "; with replicas, add replicas=1 to the "
                            + "URI");
        }
        if (replicas > 0 && connected < replicas) {
            return Finding.fail("replication", name + "replicas=" + replicas + " but " + Math.max(0, connected)
                    + " replica(s) connected: every claim waits replicaTimeout for acknowledgements it cannot get, "
                    + "and acquiring fails", "attach the replicas, or lower replicas= in the URI");
        }
        if (replicas > 0) {
            return Finding.ok("replication", name + connected + " replica(s); each claim waits for " + replicas
                    + " acknowledgement(s) (WAIT), so a failover to an acknowledging replica keeps it");
        }
        if (connected > 0) {
            return Finding.warn("replication", name + connected + " replica(s) replicate asynchronously and replicas=0: "
                            + "a failover to one can lose a claim written just before it, and grant that lock twice",
                    "add replicas=1 (or more) to the URI, so that each claim waits for a replica's acknowledgement "
                            + "(WAIT; the ACL needs +wait)");
        }
        return Finding.ok("replication", name + "no replicas: nothing to fail over to (restarts: see persistence)");
    }

    private static int major(String version) {
        if (version == null) {
            return -1;
        }
        try {
            return Integer.parseInt(version.split("\\.")[0]);
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    private static long number(String s) {
        try {
            return s == null ? -1 : Long.parseLong(s.trim());
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    static String format(Duration d) {
        if (d.isZero()) {
            return "0s";
        }
        long ms = d.toMillis();
        if (ms % 1000 != 0) {
            return ms + "ms";
        }
        long s = ms / 1000;
        return s % 3600 == 0 ? s / 3600 + "h" : s % 60 == 0 ? s / 60 + "m" : s + "s";
    }
}
