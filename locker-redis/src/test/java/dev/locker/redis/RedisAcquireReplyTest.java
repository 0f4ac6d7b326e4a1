package dev.locker.redis;

import dev.locker.testkit.RedisServer;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockTransaction;
import dev.locker.api.LockerConfig;
import dev.locker.engine.LockerEngine;
import dev.locker.api.LockingException;
import dev.locker.api.PermanentLockingException;
import dev.locker.api.TemporaryLockingException;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.Pipeline;

import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** acquire.lua ends where the build before did on every input RedisLocker sends, and each reply shape reads right. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 600, unit = TimeUnit.SECONDS)
class RedisAcquireReplyTest {

    private static final String OWN = "00000000000000aa";
    private static final String OTHER = "00000000000000bb";
    private static final String DEAD_TOMB = "w00000000000000cc";
    /** An hour in microseconds. */
    private static final long HOUR = 3_600_000_000L;
    /** LockerConfig.MAX_EXPIRY (100 years) in ms, as RedisLocker.millis writes it. */
    private static final String CENTURY_MS = Long.toString(LockerConfig.MAX_EXPIRY.toMillis());

    private final String prefix = "acqreply-" + LockerConfig.randomRid().substring(0, 8) + ":";
    private final List<RedisLocker> opened = new ArrayList<>();
    private RedisServer server;
    private Jedis admin;
    private byte[] marker;

    private static final Scripts NEW = new Scripts("new", "");
    /**
     * acquire.lua of the build before the bare-token reply (d6054f5^), a test resource, on today's prelude (the same
     * text). It replied with a list on every grant; today a grant without a warning replies with the bare token.
     *
     * <p>Each comparison sets up one hash shape on two keys and runs the old and the new acquire by EVAL. A wrapper
     * script calls each as a function and reads the hash and its PTTL in the same instant. Outcome (as each build's
     * RedisLocker reads it), hash and TTL are compared. The new general path runs on a third copy, a dead tombstone
     * added. The class has a server of its own, so its maxmemory policy can be switched.
     */
    private static final Scripts OLD = new Scripts("old", "before-bare-token/", "");

    /** One version's acquire script: the prelude, then acquire.lua, as RedisScript composes them. */
    static final class Scripts {
        final String label;
        final byte[] acquire;
        /** The same, run as a function, then the hash and its PTTL read in the same script (the same instant). */
        final byte[] observed;

        Scripts(String label, String dir) {
            this(label, dir, dir);
        }

        Scripts(String label, String dir, String preludeDir) {
            this.label = label;
            String body = RedisScript.resource(preludeDir + "common.lua") + "\n"
                    + RedisScript.resource(dir + "acquire.lua");
            this.acquire = body.getBytes(StandardCharsets.UTF_8);
            this.observed = ("local function acquire_script()\n" + body + "\nend\n"
                    + "local r = acquire_script()\n"
                    + "local kind = 'reply'\n"
                    + "if type(r) == 'table' and r.err then kind, r = 'error', r.err end\n"
                    + "return {kind, r, redis.call('HGETALL', KEYS[1]), redis.call('PTTL', KEYS[1]),\n"
                    + "    redis.call('PEXPIRETIME', KEYS[1])}\n")
                    .getBytes(StandardCharsets.UTF_8);
        }

        @Override
        public String toString() {
            return label;
        }
    }


    @BeforeAll
    void startServer() {
        server = RedisServer.start();
        admin = new Jedis("127.0.0.1", server.port());
        marker = b(prefix + "{}guard");
        // the guard's "up for 1 s" must be true for a guard of 1000 ms (a wait, not an assertion)
        while (uptimeSeconds() < 3) {
            RedisServer.sleep(100);
        }
    }

    @AfterEach
    void closeLockers() {
        opened.forEach(RedisLocker::close);
        opened.clear();
        noEviction();
    }

    @AfterAll
    void stopServer() {
        if (admin != null) {
            admin.close();
        }
        if (server != null) {
            server.close();
        }
    }

    // ---- helpers ---------------------------------------------------------------------------------------------------

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static String s(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }

    private long uptimeSeconds() {
        Matcher m = Pattern.compile("uptime_in_seconds:(\\d+)").matcher(admin.info("server"));
        assertTrue(m.find());
        return Long.parseLong(m.group(1));
    }

    private long serverMicros() {
        List<String> t = admin.time();
        return Long.parseLong(t.get(0)) * 1_000_000L + Long.parseLong(t.get(1));
    }

    private void evicting() {
        admin.configSet("maxmemory-policy", "allkeys-lru");
        admin.configSet("maxmemory", "104857600");
    }

    private void noEviction() {
        admin.configSet("maxmemory-policy", "noeviction");
        admin.configSet("maxmemory", "0");
    }

    private Map<String, String> hash(byte[] key) {
        Map<String, String> out = new TreeMap<>();
        admin.hgetAll(key).forEach((f, v) -> out.put(s(f), s(v)));
        return out;
    }

    private static String nonce(String instance, long counter) {
        return instance + String.format("%016x", counter);
    }

    private static String released(long token, String counterHex) {
        return "0 0 " + token + " " + counterHex + " ";
    }

    /** What one acquire did, read in the script that ran it: its reply (or error), then the hash and its PTTL. */
    /** pexpireAt is the key's expiry on the server's clock (ms), whatever time passed since the grant. */
    record Run(Object reply, String error, Map<String, String> hash, long pttl, long pexpireAt) {
    }

    private Run run(Scripts s, List<byte[]> keys, List<String> args) {
        List<byte[]> a = new ArrayList<>();
        for (String x : s == OLD ? args : AcquireReply.todaysArgs(args)) {
            a.add(b(x));
        }
        List<?> all = (List<?>) admin.eval(s.observed, keys, a);
        Object reply = null;
        String error = null;
        if (s((byte[]) all.get(0)).equals("error")) {
            error = s((byte[]) all.get(1));
        } else {
            reply = all.get(1);
        }
        Map<String, String> hash = new TreeMap<>();
        List<?> flat = (List<?>) all.get(2);
        for (int i = 0; i < flat.size(); i += 2) {
            hash.put(s((byte[]) flat.get(i)), s((byte[]) flat.get(i + 1)));
        }
        return new Run(reply, error, hash, (Long) all.get(3), (Long) all.get(4));
    }

    /** The outcome as RedisLocker of the build before reads the reply (writeSingleLock, verbatim in its decisions). */
    private static String readAsNew(Object reply, Map<String, String> hash) {
        List<?> r = reply instanceof List ? (List<?>) reply : null;
        long code = r == null ? 1 : (Long) r.get(0);
        if (code == 1) {
            String warning = r != null && r.size() > 3 ? s((byte[]) r.get(3)) : null;
            long token = r == null ? (Long) reply : (Long) r.get(1);
            return granted(token, hash, warning);
        }
        return refused(r);
    }

    /** The outcome as RedisLocker of the build before read it (every reply a list). */
    private static String readAsOld(Object reply, Map<String, String> hash) {
        List<?> r = (List<?>) reply;
        long code = (Long) r.get(0);
        if (code == 1) {
            String warning = r.size() > 3 ? s((byte[]) r.get(3)) : null;
            return granted((Long) r.get(1), hash, warning);
        }
        return refused(r);
    }

    /** A grant: its token ("W" when it is the time our claim was written, i.e. the server's clock), its warning. */
    private static String granted(long token, Map<String, String> hash, String warning) {
        String claim = hash.get("c" + OWN);
        if (claim == null && hash.isEmpty()) {
            // only with expiry 0 or 1 ms: PEXPIRE 1 or 3 ms, already past when the script ran longer (a loaded host
            // preempts redis-server mid-script), deletes the key at once (both builds; the holder's deadline, at most
            // the expiry after its send, has passed too)
            return "granted, key lapsed";
        }
        assertNotNull(claim, "granted " + token + " but no claim of ours: " + hash);
        Matcher m = CLAIM.matcher(claim);
        assertTrue(m.matches(), claim);
        long written = Long.parseLong(m.group(1));
        long tok = written + Long.parseLong(m.group(3));
        assertEquals(tok, token, "the reply's token is the claim's: " + claim);
        return "granted " + (token == written ? "W" : Long.toString(token)) + (warning == null ? "" : " " + warning);
    }

    private static String refused(List<?> r) {
        long code = (Long) r.get(0);
        if (code == -2) {
            return "restart guard"; // ms left compared separately (they count down between the two runs)
        }
        if (code == 0) {
            return "held by " + s((byte[]) r.get(3)) + " " + s((byte[]) r.get(1)); // (its ms left count down)
        }
        StringBuilder sb = new StringBuilder("code ").append(code);
        for (int i = 1; i < r.size(); i++) {
            Object o = r.get(i);
            sb.append(' ').append(o instanceof byte[] ? s((byte[]) o) : String.valueOf(o));
        }
        return sb.toString();
    }

    private static final Pattern CLAIM = Pattern.compile("^(\\d+) (\\d+) (\\d+) ([0-9a-fA-F]+) (.*)$", Pattern.DOTALL);

    /** The hash with the instant of the script taken out; a claim's expiry digits kept exactly as written. */
    private static Map<String, String> normalized(Map<String, String> hash) {
        Map<String, String> out = new TreeMap<>();
        hash.forEach((f, v) -> {
            if (f.equals(DEAD_TOMB)) {
                return; // the general-path copy's extra field (left when not scrubbing)
            }
            String n = v;
            if (f.startsWith("c")) {
                Matcher m = CLAIM.matcher(v);
                if (m.matches()) {
                    long ts = Long.parseLong(m.group(1));
                    n = ts == 0 ? "released " + v
                            : "claim tok=" + (m.group(3).equals("0") ? "W" : Long.toString(ts + Long.parseLong(
                            m.group(3)))) + " e=" + m.group(2) + " c=" + m.group(4) + " o=" + m.group(5);
                }
            }
            out.put(f, n);
        });
        return out;
    }

    /** What a refusal must keep: the last token (field "t" or any claim's, capped at 2^53) and the live claims. */
    private static Map<String, String> kept(Map<String, String> hash) {
        Map<String, String> out = new TreeMap<>();
        double last = 0;
        for (Map.Entry<String, String> e : hash.entrySet()) {
            String f = e.getKey();
            String v = e.getValue();
            if (f.equals("t")) {
                double t;
                try {
                    t = Double.parseDouble(v);
                } catch (NumberFormatException x) {
                    t = 0;
                }
                last = Double.isNaN(t) ? t : Math.max(last, t);
            } else if (f.startsWith("c")) {
                Matcher m = CLAIM.matcher(v);
                if (m.matches()) {
                    last = Math.max(last, Double.parseDouble(m.group(1)) + Double.parseDouble(m.group(3)));
                    if (!m.group(1).equals("0")) {
                        out.put(f, v);
                    }
                }
            }
        }
        out.put("last", Double.isNaN(last) ? "nan" : Double.toString(Math.min(last, 9007199254740992.0)));
        return out;
    }

    private String outcome(Scripts s, Run r) {
        if (r.error != null) {
            return "error " + r.error;
        }
        return s == OLD ? readAsOld(r.reply, r.hash) : readAsNew(r.reply, r.hash);
    }

    // ---- hash shapes -------------------------------------------------------------------------------------------------

    /** Shapes of a lock's hash, each set up on a key from a base time (server µs) shared by the copies compared. */
    private final Map<String, Shape> shapes = new LinkedHashMap<>();

    /** Writes one shape's fields on a key, queued on a pipeline. */
    private interface Shape {
        void write(Pipeline p, byte[] key, long now);
    }

    {
        shapes.put("empty", (p, k, now) -> { });
        shapes.put("t ahead", (p, k, now) -> p.hset(k, b("t"), b(Long.toString(now + HOUR))));
        shapes.put("t behind", (p, k, now) -> p.hset(k, b("t"), b(Long.toString(now - 5_000_000L))));
        shapes.put("t unreadable", (p, k, now) -> p.hset(k, b("t"), b("abc")));
        shapes.put("t nan", (p, k, now) -> p.hset(k, b("t"), b("nan")));
        shapes.put("t 1e19", (p, k, now) -> p.hset(k, b("t"), b("1e19")));
        shapes.put("t fraction", (p, k, now) -> p.hset(k, b("t"), b((now + HOUR) + ".5")));
        shapes.put("t leading zeros", (p, k, now) -> p.hset(k, b("t"), b("000" + (now + HOUR))));
        shapes.put("released ours ahead", (p, k, now) -> p.hset(k, b("c" + OWN), b(released(now + HOUR, "5"))));
        shapes.put("released ours behind", (p, k, now) -> p.hset(k, b("c" + OWN), b(released(now - 5_000_000L,
                "5"))));
        shapes.put("released ours zeros", (p, k, now) -> p.hset(k, b("c" + OWN), b("0 0 000" + (now + HOUR)
                + " 0005 ")));
        shapes.put("released ours huge", (p, k, now) -> p.hset(k, b("c" + OWN), b("0 0 99999999999999999999 5 ")));
        shapes.put("released ours long ctr", (p, k, now) -> p.hset(k, b("c" + OWN), b(released(now + HOUR,
                "10000000000000000"))));
        shapes.put("released other", (p, k, now) -> p.hset(k, b("c" + OTHER), b(released(now + HOUR, "7"))));
        shapes.put("live other", (p, k, now) -> p.hset(k, b("c" + OTHER), b(now + " 600000 0 7 =other")));
    }

    /**
     * Sets up {@code shape} on {@code key} and the marker in {@code markerState}, in one round trip. The differential
     * runs over ten thousand comparisons, so a round trip per command would be most of the class's time.
     */
    private void setUp(byte[] key, String shape, long now, boolean withDeadTombstone, String markerState,
                       String fresh) {
        try (Pipeline p = admin.pipelined()) {
            p.del(key);
            shapes.get(shape).write(p, key, now);
            if (withDeadTombstone) {
                p.hset(key, b(DEAD_TOMB), b("1 1"));
            }
            p.pexpire(key, 600_000); // a no-op when the shape leaves no key
            setMarker(p, markerState, fresh);
            p.sync();
        }
    }

    /** Marker states: none passed (Cluster mode), none there, this boot's saying ok, this boot's saying 0, stale. */
    private static final List<String> MARKERS = List.of("one key", "absent", "fresh", "fresh 0", "stale");

    private String freshMarker() {
        admin.del(marker);
        byte[] scratch = b(prefix + "{scratch}");
        run(OLD, List.of(scratch, marker), List.of("c" + OWN, nonce(OWN, 1), "1000", "=o", "1", "1", "warn"));
        admin.del(scratch);
        String m = s(admin.get(marker));
        assertNotNull(m, "admit wrote no marker");
        if (!m.contains(" ")) {
            // today's vouching form, LASTSAVE alone (guard waited out, no eviction): the states below are of the full
            // form, "<lastsave> <upsince> <ok>", so it is written out, the data whole since 2 s ago (up for 3 s)
            m = m + " " + (serverMicros() - 2_000_000L) + " 1";
        }
        return m;
    }

    private void setMarker(Pipeline p, String state, String fresh) {
        switch (state) {
            case "one key", "absent" -> p.del(marker);
            case "fresh" -> p.psetex(marker, 60_000, b(fresh.substring(0, fresh.length() - 1) + "1"));
            case "fresh 0" -> p.psetex(marker, 60_000, b(fresh.substring(0, fresh.length() - 1) + "0"));
            case "stale" -> p.psetex(marker, 60_000, b("1 1 1"));
            default -> throw new IllegalArgumentException(state);
        }
    }

    // ---- 1. the differential -----------------------------------------------------------------------------------------

    /**
     * Every input RedisLocker can send, on every hash shape the fast path takes or borders, ends as it did on the
     * build before. Inputs: expiry 0 ms to 100 years; restart guard 0, 1 ms, 1 s, 100 years; eviction check off,
     * warn or fail on a server that evicts or not; scrubbing on and off; the marker in each state. Compared: the
     * outcome, the hash (the claim's expiry digits exactly) and the TTL; the general path ends there too. A
     * grant's key outlives its claim.
     */
    @Test
    void theNewAcquireEndsWhereTheBuildBeforeEndsForEveryInputRedisLockerSends() {
        byte[] kNew = b(prefix + "{diff}n");
        byte[] kOld = b(prefix + "{diff}o");
        byte[] kGen = b(prefix + "{diff}g");
        int compared = 0;
        int fast = 0;
        int lapsed = 0;
        Map<String, Integer> outcomes = new TreeMap<>();
        for (boolean evicting : List.of(false, true)) {
            if (evicting) {
                evicting();
            } else {
                noEviction();
            }
            String fresh = freshMarker();
            // expiry 999 and guard 1000 give the same outcomes as their neighbours (18,000 cases); they are left out
            // because they would slow this class by half a minute
            for (String expiry : List.of("0", "1", "30000", CENTURY_MS)) {
                for (String guard : List.of("0", "1", CENTURY_MS)) {
                    for (String check : List.of("off", "warn", "fail")) {
                        for (String scrub : List.of("1", "0")) {
                            for (String markerState : MARKERS) {
                                for (String shape : shapes.keySet()) {
                                    String what = "expiry " + expiry + ", guard " + guard + ", check " + check
                                            + ", scrub " + scrub + ", marker " + markerState + ", evicting "
                                            + evicting + ", shape " + shape;
                                    long now = serverMicros();
                                    List<String> args = List.of("c" + OWN, nonce(OWN, 6), expiry, "=owner", guard,
                                            scrub, check);
                                    boolean oneKey = markerState.equals("one key");
                                    Run[] runs = new Run[3];
                                    Scripts[] who = {NEW, OLD, NEW};
                                    byte[][] keys = {kNew, kOld, kGen};
                                    int[] order = compared % 2 == 0 ? new int[]{0, 1, 2} : new int[]{1, 2, 0};
                                    for (int i : order) {
                                        setUp(keys[i], shape, now, i == 2, markerState, fresh);
                                        runs[i] = run(who[i], oneKey ? List.of(keys[i]) : List.of(keys[i], marker),
                                                args);
                                    }
                                    String on = outcome(NEW, runs[0]);
                                    String oo = outcome(OLD, runs[1]);
                                    String og = outcome(NEW, runs[2]);
                                    if (on.equals("granted, key lapsed") || oo.equals("granted, key lapsed")
                                            || og.equals("granted, key lapsed")) {
                                        System.out.println("LAPSED " + what + ": " + on + " " + runs[0].pttl + " / "
                                                + oo + " " + runs[1].pttl + " / " + og + " " + runs[2].pttl);
                                        assertTrue(Long.parseLong(expiry) <= 1, what);
                                        assertTrue(on.startsWith("granted") && oo.startsWith("granted")
                                                && og.startsWith("granted"), what + ": " + on + " / " + oo + " / " + og);
                                        lapsed++;
                                        compared++;
                                        continue;
                                    }
                                    assertEquals(oo, on, what);
                                    assertEquals(oo, og, what + " (general path)");
                                    assertEquals(normalized(runs[1].hash), normalized(runs[0].hash), what);
                                    if (on.startsWith("granted")) {
                                        assertEquals(normalized(runs[1].hash), normalized(runs[2].hash),
                                                what + " (general path)");
                                    } else {
                                        // refused or the token error: the general path has scrubbed first (a dead
                                        // claim moved into "t", capped at 2^53), as on the build before: the same
                                        // last token and the same live claims
                                        assertEquals(kept(runs[1].hash), kept(runs[2].hash), what + " (general path)");
                                    }
                                    if (on.equals("restart guard")) {
                                        long a = (Long) ((List<?>) runs[0].reply).get(1);
                                        long o = (Long) ((List<?>) runs[1].reply).get(1);
                                        assertTrue(Math.abs(a - o) <= 60_000 && a <= Long.parseLong(guard), what
                                                + ": " + a + " " + o);
                                    }
                                    for (int i = 0; i < 3; i++) {
                                        if (i == 2 && !on.startsWith("granted")) {
                                            continue; // (its key exists for the dead tombstone this test added)
                                        }
                                        long p = runs[i].pttl;
                                        long po = runs[1].pttl;
                                        assertTrue(p < 0 ? po == p : Math.abs(p - po) <= 1_000,
                                                what + " #" + i + ": " + p + " vs " + po);
                                        if (on.startsWith("granted")) {
                                            assertTrue(p <= 2 * Long.parseLong(expiry) + 1, what + ": " + p);
                                            Matcher m = CLAIM.matcher(runs[i].hash.get("c" + OWN));
                                            assertTrue(m.matches());
                                            // on the server's clock, not the time left: a redis-server preempted
                                            // between the grant and the PTTL (a loaded host) reads less left
                                            long claimEndsMs = Long.parseLong(m.group(1)) / 1_000
                                                    + Long.parseLong(m.group(2));
                                            assertTrue(runs[i].pexpireAt >= claimEndsMs, what + ": the key must "
                                                    + "outlive the claim: it expires at " + runs[i].pexpireAt
                                                    + " ms, the claim at " + claimEndsMs + " ms");
                                            assertEquals(expiry, m.group(2), what + ": the claim's expiry digits");
                                        }
                                    }
                                    if (runs[0].reply instanceof Long) {
                                        fast++;
                                    }
                                    outcomes.merge(on.replaceAll("\\d{6,}", "N"), 1,
                                            Integer::sum);
                                    compared++;
                                }
                            }
                        }
                    }
                }
            }
        }
        System.out.println("RedisAcquireReplyTest differential: " + compared + " comparisons, " + fast
                + " bare-token grants, " + lapsed + " with expiry 0 or 1 ms whose key lapsed in the script, outcomes "
                + outcomes);
        assertEquals(2 * 4 * 3 * 3 * 2 * MARKERS.size() * shapes.size(), compared);
        assertTrue(fast > 0);
    }

    // ---- 2. what RedisLocker reads ----------------------------------------------------------------------------------

    private RedisLocker open(RedisLockerBuilder b) {
        RedisLocker l = b.build();
        opened.add(l);
        return l;
    }

    private RedisLockerBuilder locker(int port, Duration expiry) {
        return RedisLocker.builder().node("127.0.0.1", port).keyPrefix(prefix)
                .config(LockerConfig.builder().rid("lean-" + LockerConfig.randomRid().substring(0, 8))
                        .expiry(expiry).build())
                .restartGuard(Duration.ZERO);
    }

    private static KeyColumn lock(String name) {
        return KeyColumn.named(name + "-" + LockerConfig.randomRid().substring(0, 6));
    }

    /** The token our live claim on {@code lock} carries, read from the hash. */
    private long claimToken(RedisLocker l, KeyColumn lock) {
        String v = s(admin.hget(l.redisKey(lock), l.claimField()));
        assertNotNull(v, "no claim of ours");
        Matcher m = CLAIM.matcher(v);
        assertTrue(m.matches(), v);
        assertFalse(m.group(1).equals("0"), "released: " + v);
        return Long.parseLong(m.group(1)) + Long.parseLong(m.group(3));
    }

    @SuppressWarnings("unchecked")
    private static Set<String> evictionWarnings(RedisLocker l) throws ReflectiveOperationException {
        Field driver = LockerEngine.class.getDeclaredField("driver");
        driver.setAccessible(true);
        Field f = RedisDriver.class.getDeclaredField("evictionWarnings");
        f.setAccessible(true);
        return (Set<String>) f.get(driver.get(l));
    }

    /**
     * Grants read through RedisLocker: on the fast path (empty, "t" ahead, our released claim) and the general path
     * (a dead claim of another's), with and without an eviction warning: the lease's token is the claim's, and a
     * warning is not lost (it is the list reply, logged once).
     */
    @Test
    void aGrantIsReadAsTheTokenOfItsClaimAndAWarningIsNotLost() throws Exception {
        for (boolean warn : List.of(false, true)) {
            if (warn) {
                evicting();
            } else {
                noEviction();
            }
            RedisLocker l = open(locker(server.port(), Duration.ofSeconds(30))
                    .evictionCheck(warn ? RedisLocker.EvictionCheck.WARN : RedisLocker.EvictionCheck.OFF));
            KeyColumn lock = lock("grant");
            byte[] key = l.redisKey(lock);
            // empty
            try (Lease lease = l.acquire(lock, "empty")) {
                assertEquals(claimToken(l, lock), lease.fencingToken());
            }
            // our claim released in place by that release: the fast path overwrites it
            assertTrue(hash(key).get(s(l.claimField())).startsWith("0 0 "), hash(key).toString());
            long before = serverMicros() + HOUR;
            admin.hset(key, l.claimField(), b(released(before, "1")));
            try (Lease lease = l.acquire(lock, "released")) {
                assertEquals(before + 1, lease.fencingToken());
                assertEquals(claimToken(l, lock), lease.fencingToken());
            }
            // only "t", ahead of the clock
            admin.del(key);
            admin.hset(key, b("t"), b(Long.toString(before + 10)));
            try (Lease lease = l.acquire(lock, "t")) {
                assertEquals(before + 11, lease.fencingToken());
            }
            // the general path: a dead claim of another's next to ours released
            admin.hset(key, b("c" + OTHER), b("1 1 0 7 =dead"));
            try (Lease lease = l.acquire(lock, "general")) {
                assertEquals(claimToken(l, lock), lease.fencingToken());
                assertTrue(lease.fencingToken() > before + 11);
            }
            if (warn) {
                assertEquals(Set.of("maxmemory-policy allkeys-lru with maxmemory 104857600"), evictionWarnings(l));
            } else {
                assertTrue(evictionWarnings(l).isEmpty());
            }
        }
    }

    /**
     * Refusals are never read as grants: held (0), the restart guard (-2), the eviction check (-4) and the token error
     * each end in an exception, with no claim of ours left and nothing in the hash changed; the holder keeps its claim.
     */
    @Test
    void everyRefusalIsReadAsARefusal() {
        RedisLocker holder = open(locker(server.port(), Duration.ofSeconds(30)));
        RedisLocker other = open(locker(server.port(), Duration.ofSeconds(30)));
        KeyColumn lock = lock("refused");
        byte[] key = holder.redisKey(lock);
        try (Lease held = holder.acquire(lock, "holding")) {
            Map<String, String> before = hash(key);
            LockTransaction tx = new LockTransaction("second");
            TemporaryLockingException e = assertThrows(TemporaryLockingException.class, () -> other.writeLock(lock, tx));
            assertTrue(e.getMessage().contains("held"), e.getMessage());
            assertEquals(before, hash(key));
            assertEquals(claimToken(holder, lock), held.fencingToken());
        }

        RedisLocker guarded = open(locker(server.port(), Duration.ofSeconds(30)).restartGuard(LockerConfig.MAX_EXPIRY));
        KeyColumn g = lock("guard");
        TemporaryLockingException ge = assertThrows(TemporaryLockingException.class,
                () -> guarded.writeLock(g, new LockTransaction("guarded")));
        assertTrue(ge.getMessage().contains("restartGuard"), ge.getMessage());
        assertFalse(admin.exists(guarded.redisKey(g)));

        evicting();
        RedisLocker failing = open(locker(server.port(), Duration.ofSeconds(30))
                .evictionCheck(RedisLocker.EvictionCheck.FAIL));
        KeyColumn f = lock("fail");
        PermanentLockingException fe = assertThrows(PermanentLockingException.class,
                () -> failing.writeLock(f, new LockTransaction("failing")));
        assertTrue(fe.getMessage().contains("allkeys-lru"), fe.getMessage());
        assertFalse(admin.exists(failing.redisKey(f)));
        noEviction();

        RedisLocker exhausted = open(locker(server.port(), Duration.ofSeconds(30)));
        KeyColumn x = lock("exhausted");
        byte[] xk = exhausted.redisKey(x);
        admin.hset(xk, b("t"), b("1e19"));
        admin.pexpire(xk, 600_000);
        RuntimeException xe = assertThrows(RuntimeException.class,
                () -> exhausted.writeLock(x, new LockTransaction("exhausted")));
        assertTrue(String.valueOf(xe.getMessage()).contains("2^53") || xe.getCause() != null
                && String.valueOf(xe.getCause().getMessage()).contains("2^53"), xe.toString());
        assertEquals(Map.of("t", "1e19"), hash(xk));
    }

    /**
     * The replicas path (pipelined EVALSHA + WAIT, read by runAndWait): with a real replica, a bare-token grant and a
     * grant with a warning are read as the claim's token (and the warning kept); with fewer replicas than asked, the
     * grant is withdrawn and refused, whatever the reply's shape.
     */
    @Test
    void theReplicasPathReadsBothGrantShapesAndWithdrawsAnUnacknowledgedOne() throws Exception {
        RedisServer replica = RedisServer.start("--replicaof", "127.0.0.1",
                Integer.toString(server.port()));
        try {
            while (!replica.cli("INFO", "replication").contains("master_link_status:up")
                    || admin.waitReplicas(1, 100) != 1) {
                RedisServer.sleep(50);
            }
            for (boolean warn : List.of(false, true)) {
                if (warn) {
                    evicting();
                } else {
                    noEviction();
                }
                RedisLocker l = open(locker(server.port(), Duration.ofSeconds(30)).replicas(1)
                        .replicaTimeout(Duration.ofSeconds(5))
                        .evictionCheck(warn ? RedisLocker.EvictionCheck.WARN : RedisLocker.EvictionCheck.OFF));
                KeyColumn lock = lock("replicated");
                try (Lease lease = l.acquire(lock, "replicated")) {
                    assertEquals(claimToken(l, lock), lease.fencingToken());
                }
                long ahead = serverMicros() + HOUR;
                admin.hset(l.redisKey(lock), l.claimField(), b(released(ahead, "1")));
                try (Lease lease = l.acquire(lock, "replicated again")) {
                    assertEquals(ahead + 1, lease.fencingToken());
                }
                assertEquals(warn ? 1 : 0, evictionWarnings(l).size());

                RedisLocker two = open(locker(server.port(), Duration.ofSeconds(30)).replicas(2)
                        .replicaTimeout(Duration.ofMillis(50))
                        .evictionCheck(warn ? RedisLocker.EvictionCheck.WARN : RedisLocker.EvictionCheck.OFF));
                KeyColumn t = lock("two");
                LockingException e = assertThrows(LockingException.class,
                        () -> two.writeLock(t, new LockTransaction("two")));
                assertTrue(e.getMessage().contains("acknowledged"), e.getMessage());
                String mine = s(admin.hget(two.redisKey(t), two.claimField()));
                assertTrue(mine == null, "the unacknowledged grant is withdrawn: " + hash(two.redisKey(t)));
            }
        } finally {
            noEviction();
            replica.close();
        }
    }

    /**
     * An expiry with a fraction of a millisecond is written rounded up, so a claim never lapses on the server
     * before its lease. Rounded down, an expiry under 1 ms would be a claim dead at birth while its holder's lease
     * is valid. The clock is virtual (frozen), so the lease's remaining time is exactly its validity: no timing
     * asserted.
     */
    @Test
    void aSubMillisecondExpiryIsNotWrittenShorterThanTheLease() {
        // what the scripts get: whole milliseconds, never fewer than asked (a key of a few ms may lapse before the
        // claim can be read back below, so the shortest expiries are checked here)
        assertEquals("2", s(RedisLocker.millis(Duration.ofNanos(1_900_000))));
        assertEquals("1", s(RedisLocker.millis(Duration.ofNanos(500_000))));
        assertEquals("1", s(RedisLocker.millis(Duration.ofNanos(1))));
        assertEquals("51", s(RedisLocker.millis(Duration.ofMillis(50).plusNanos(900_000))));
        assertEquals("30000", s(RedisLocker.millis(Duration.ofSeconds(30))));
        assertEquals("0", s(RedisLocker.millis(Duration.ZERO)));
        assertEquals("0", s(RedisLocker.millis(Duration.ofNanos(-500_000))));
        // and the claim a locker writes, where its key lives long enough to be read back
        for (Duration expiry : List.of(Duration.ofMillis(50).plusNanos(900_000), Duration.ofMillis(99).plusNanos(1))) {
            VirtualClock clock = new VirtualClock();
            RedisLocker l = open(RedisLocker.builder().node("127.0.0.1", server.port()).keyPrefix(prefix)
                    .config(LockerConfig.builder().rid("sub-" + LockerConfig.randomRid().substring(0, 8))
                            .expiry(expiry).timeSource(clock).build())
                    .restartGuard(Duration.ZERO));
            KeyColumn lock = lock("sub-ms");
            Lease lease = l.acquire(lock, "short");
            String claim = s(admin.hget(l.redisKey(lock), l.claimField()));
            org.junit.jupiter.api.Assumptions.assumeTrue(claim != null,
                    "the key (TTL twice the expiry) lapsed before it was read back: a loaded machine");
            Matcher m = CLAIM.matcher(claim);
            assertTrue(m.matches(), claim);
            Duration onServer = Duration.ofMillis(Long.parseLong(m.group(2)));
            Duration lease0 = lease.remaining();
            assertTrue(lease0.compareTo(onServer) <= 0, "expiry " + expiry + ": the lease is valid " + lease0
                    + " from before the script's TIME, the claim on the server lives " + onServer + " after it");
        }
    }
}
