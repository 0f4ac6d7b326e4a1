package dev.locker.redis;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockerConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import redis.clients.jedis.UnifiedJedis;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static dev.locker.redis.RedisWaitingFixture.lock;
import static dev.locker.redis.RedisWaitingFixture.withRid;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A claim released in place ("0 0 <token> <counter> ") is dead to both builds, keeps its token and revives nothing. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class RedisReleasedInPlaceTest {

    private static final String EXPIRY_MS = "30000";
    /** An hour in microseconds: how far the server's clock is behind the last token after stepping back. */
    private static final long HOUR = 3_600_000_000L;

    @RegisterExtension
    static final RedisWaitingFixture fixture = RedisWaitingFixture.onTarget("released");

    private static final Scripts NEW = new Scripts("new", "");
    /**
     * The scripts of the build before release in place (8f3c52c^), test resources run by EVAL next to today's, against
     * the same keys: a rolling upgrade runs both. Today a release on the fast path leaves its claim released in place,
     * acquire's fast path takes a hash holding only such a claim, and force.lua no longer counts released claims.
     */
    private static final Scripts OLD = new Scripts("old", "before-release-in-place/");

    private static UnifiedJedis admin() {
        return fixture.admin();
    }

    // ---- the two versions' scripts ---------------------------------------------------------------------------------

    /** One version's scripts: the prelude, then each phase's file, as RedisScript composes them, run by EVAL. */
    static final class Scripts {
        final String label;
        private final Map<String, byte[]> sources = new HashMap<>();

        Scripts(String label, String dir) {
            this.label = label;
            String prelude = RedisScript.resource(dir + "common.lua");
            for (String s : List.of("acquire", "release", "renew", "verify", "withdraw", "holder", "list", "force",
                    "record", "dequeue")) {
                sources.put(s, (prelude + "\n" + RedisScript.resource(dir + s + ".lua"))
                        .getBytes(StandardCharsets.UTF_8));
            }
        }

        Object run(String script, List<byte[]> keys, List<String> args) {
            List<byte[]> a = new ArrayList<>();
            for (String x : args) {
                a.add(b(x));
            }
            return admin().eval(sources.get(script), keys, a);
        }

        Object run(String script, byte[] key, String... args) {
            return run(script, List.of(key), List.of(args));
        }

        /** The acquire as the version's RedisLocker sends it (no marker, no guard, no eviction check). */
        List<?> acquire(byte[] key, String instance, String nonce, String scrub, String waiter) {
            List<String> args = new ArrayList<>(List.of("c" + instance, nonce, EXPIRY_MS, "=owner " + instance, "0",
                    scrub, "off"));
            if (waiter != null) {
                args.add(waiter);
                args.add("60000");
            } else if (this == OLD) {
                args.add(""); // the build before always sent both
                args.add("60000");
            }
            return AcquireReply.of(run("acquire", List.of(key), this == OLD ? args : AcquireReply.todaysArgs(args)),
                    admin(), key, b("c" + instance));
        }

        long release(byte[] key, String instance, String nonce) {
            return (Long) run("release", key, "c" + instance, nonce, fixture.prefix() + "released");
        }

        @Override
        public String toString() {
            return label;
        }
    }

    // ---- helpers ---------------------------------------------------------------------------------------------------

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static String s(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }

    private byte[] key(String name) {
        return new RedisKeys(fixture.prefix()).lockKey(lock(name));
    }

    private static String nonce(String instance, long counter) {
        return instance + String.format("%016x", counter);
    }

    private Map<String, String> hash(byte[] key) {
        Map<String, String> out = new TreeMap<>();
        admin().hgetAll(key).forEach((f, v) -> out.put(s(f), s(v)));
        return out;
    }

    private static String released(long token, String counterHex) {
        return "0 0 " + token + " " + counterHex + " ";
    }

    private static long code(Object reply) {
        return (Long) ((List<?>) reply).get(0);
    }

    /**
     * What the hash says, read on the server in one step, by rules of this test's own (not the prelude's parse): the
     * key's PTTL, the highest token it keeps (field "t" or any claim's, released ones included), the live claims (their
     * field, counter and µs left), how many claims are released, how many fields.
     */
    private static final String CHECK = """
            local t = redis.call('TIME')
            local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
            local all = redis.call('HGETALL', KEYS[1])
            local maxtok, live, rel = 0, {}, 0
            for i = 1, #all, 2 do
              local f, v = all[i], all[i + 1]
              if f == 't' then
                local x = tonumber(v) or 0
                if x > maxtok then maxtok = x end
              elseif string.sub(f, 1, 1) == 'c' then
                local ts, e, d, c = string.match(v, '^(%d+) (%d+) (%d+) (%x+) ')
                if ts then
                  local tok = tonumber(ts) + tonumber(d)
                  if tok > maxtok then maxtok = tok end
                  local exp = tonumber(ts) + tonumber(e) * 1000
                  if exp > now then
                    live[#live + 1] = f .. ' ' .. c .. ' ' .. string.format('%d', exp - now)
                  end
                  if string.sub(v, 1, 4) == '0 0 ' then rel = rel + 1 end
                end
              end
            end
            return {redis.call('PTTL', KEYS[1]), string.format('%d', maxtok), live, rel, #all / 2}
            """;

    /** The server's view of a lock's hash (see {@link #CHECK}). */
    record State(long pttl, long maxTok, List<String> live, long released, long size) {
        /** "field counter" of each live claim. */
        List<String> liveClaims() {
            List<String> out = new ArrayList<>();
            for (String l : live) {
                out.add(l.substring(0, l.lastIndexOf(' ')));
            }
            return out;
        }

        long remainingMicros(int i) {
            String l = live.get(i);
            return Long.parseLong(l.substring(l.lastIndexOf(' ') + 1));
        }
    }

    private State state(byte[] key) {
        List<?> r = (List<?>) admin().eval(b(CHECK), List.of(key), List.of());
        List<String> live = new ArrayList<>();
        for (Object o : (List<?>) r.get(2)) {
            live.add(s((byte[]) o));
        }
        return new State((Long) r.get(0), Long.parseLong(s((byte[]) r.get(1))), live, (Long) r.get(3),
                (Long) r.get(4));
    }

    private static final Pattern CLAIM = Pattern.compile("^(\\d+) (\\d+) (\\d+) ([0-9a-fA-F]+) (.*)$", Pattern.DOTALL);

    /** A hash with what depends on the instant of the script (written time, tombstone and queue ends) taken out. */
    private Map<String, String> normalized(byte[] key) {
        Map<String, String> out = new TreeMap<>();
        hash(key).forEach((f, v) -> {
            String n = v;
            if (f.startsWith("c")) {
                Matcher m = CLAIM.matcher(v);
                if (m.matches()) {
                    long ts = Long.parseLong(m.group(1));
                    long tok = ts + Long.parseLong(m.group(3));
                    n = ts == 0 ? "released tok=" + tok + " c=" + m.group(4) + " o=" + m.group(5)
                            : "claim tok=" + (m.group(3).equals("0") ? "W" : Long.toString(tok)) + " e=" + m.group(2)
                            + " c=" + m.group(4) + " o=" + m.group(5);
                }
            } else if (f.startsWith("w")) {
                n = "until-U " + v.substring(v.indexOf(' ') + 1);
            } else if (f.startsWith("q")) {
                n = v.substring(0, v.indexOf(' ')) + " until-U" + v.substring(v.indexOf('\n'));
            }
            out.put(f, n);
        });
        return out;
    }

    /** The reply of an acquire with what depends on the instant taken out (the written time; the holder's ms left). */
    private static String normalizedReply(List<?> r, long lastBefore) {
        long c = (Long) r.get(0);
        if (c == 1) {
            long tok = (Long) r.get(1);
            long written = (Long) r.get(2);
            return "granted " + (tok == written && lastBefore < written ? "W" : Long.toString(tok))
                    + (r.size() > 3 ? " warning" : "");
        }
        if (c == 0) {
            return "held by " + s((byte[]) r.get(3));
        }
        if (c == -5) {
            return "promised to " + s((byte[]) r.get(2));
        }
        return "code " + c;
    }

    private byte[] twin(byte[] key) {
        byte[] twin = b(s(key) + "~twin"); // same hash tag: same slot
        admin().del(twin);
        if (admin().exists(key)) {
            assertTrue(admin().copy(key, twin, true));
        }
        return twin;
    }

    // ---- 1. rolling upgrade: the old scripts on a released claim ----------------------------------------------------

    /**
     * A released claim written by a new locker, met by every script of the build before: it is dead to them (no
     * holder, no renewal, no check, no record, not listed), its token is kept (old acquire, with and without
     * scrubbing, grants above it), a repeated old release of the same nonce turns it into field "t" and a stale one
     * leaves it alone. The one difference: the old force.lua still counts it (reply 1, "claims found").
     */
    @Test
    void oldScriptsTreatANewReleasedClaimAsADeadClaimAndKeepItsToken() {
        String a = "00000000000000aa";
        String bb = "00000000000000bb";
        long last = fixture.serverMicros() + HOUR;
        for (String scrub : List.of("1", "0")) {
            byte[] key = key("old-sees-released-" + scrub);
            admin().hset(key, b("c" + a), b(released(last, "5")));
            admin().pexpire(key, 600_000);
            assertEquals(List.of(0L), OLD.run("holder", key, "0"));
            assertEquals(List.of(-1L), OLD.run("verify", key, "c" + a, nonce(a, 5), Long.toString(last)));
            assertEquals(List.of(-1L), OLD.run("renew", key, "c" + a, nonce(a, 5), EXPIRY_MS, "0"));
            assertEquals(List.of(0L), OLD.run("list", List.of(key), List.of()));
            byte[] records = b(s(key) + "r");
            assertEquals(0L, OLD.run("record", List.of(key, records), List.of("w", "run", "v", "c" + a, nonce(a, 5),
                    Long.toString(last))));
            assertEquals(Map.of("c" + a, released(last, "5")), hash(key), "nothing written");

            // another old locker takes the lock on the old general path, above the released token
            List<?> r = OLD.acquire(key, bb, nonce(bb, 1), scrub, null);
            assertEquals(1L, code(r));
            assertEquals(last + 1, r.get(1));
            if (scrub.equals("1")) {
                assertEquals(List.of("c" + bb), List.copyOf(hash(key).keySet()), "scrubbed, \"t\" gone again");
            } else {
                assertEquals(released(last, "5"), hash(key).get("c" + a), "left alone without scrubbing");
            }
            // its release (general path when the released claim lingers) keeps the higher token
            assertEquals(1L, OLD.release(key, bb, nonce(bb, 1)));
            State st = state(key);
            assertEquals(last + 1, st.maxTok());
            assertTrue(st.live().isEmpty());
            assertTrue(st.pttl() > 0, "the key keeps a TTL: " + st.pttl());
            // and the new locker, next, above both
            r = NEW.acquire(key, a, nonce(a, 6), scrub, null);
            assertEquals(last + 2, r.get(1));
        }

        // a repeated release of the old build (reply lost) on the released claim its first attempt... of the new build
        byte[] again = key("old-release-again");
        admin().hset(again, b("c" + a), b(released(last, "5")));
        admin().pexpire(again, 600_000);
        assertEquals(0L, OLD.release(again, a, nonce(a, 4)), "a stale nonce: nothing of ours");
        assertEquals(Map.of("c" + a, released(last, "5")), hash(again));
        assertEquals(1L, OLD.release(again, a, nonce(a, 5)), "the same nonce: found (released)");
        assertEquals(Map.of("t", Long.toString(last)), hash(again), "its token kept in \"t\"");
        assertTrue(admin().pttl(again) > 0, "the key keeps its TTL");

        // the old forced release counts the released claim (new: 0); both keep its token
        byte[] forced = key("old-force");
        admin().hset(forced, b("c" + a), b(released(last, "5")));
        admin().pexpire(forced, 600_000);
        byte[] forcedNew = twin(forced);
        assertEquals(1L, OLD.run("force", forced, fixture.prefix() + "released"),
                "the build before counts a released claim as a claim: reply 1 (forceRelease true)");
        assertEquals(0L, NEW.run("force", forcedNew, fixture.prefix() + "released"));
        assertEquals(Map.of("t", Long.toString(last)), hash(forced));
        assertEquals(hash(forced), hash(forcedNew));
    }

    /** The old withdraw and dequeue next to a released claim: the tombstone refuses the late acquire on both builds. */
    @Test
    void aTombstoneNextToAReleasedClaimRefusesTheLateAcquireOnBothBuilds() {
        String a = "00000000000000aa";
        for (Scripts withdrawer : List.of(OLD, NEW)) {
            for (Scripts late : List.of(OLD, NEW)) {
                for (String scrub : List.of("1", "0")) {
                    byte[] key = key("tomb-" + withdrawer + late + scrub);
                    long last = fixture.serverMicros() + HOUR;
                    admin().hset(key, b("c" + a), b(released(last, "5")));
                    admin().pexpire(key, 600_000);
                    // acquire 6 timed out before it reached the server: withdrawn
                    assertEquals(0L, withdrawer.run("withdraw", key, "c" + a, nonce(a, 6), "60000", EXPIRY_MS, scrub,
                            fixture.prefix() + "released"), "nothing of acquire 6 was there");
                    assertEquals(-3L, code(late.acquire(key, a, nonce(a, 6), scrub, null)),
                            withdrawer + " withdrew, " + late + " arrived late, scrub " + scrub);
                    State st = state(key);
                    assertTrue(st.live().isEmpty());
                    assertEquals(last, st.maxTok(), "the released claim's token is kept (claim or \"t\")");
                    List<?> r = late.acquire(key, a, nonce(a, 7), scrub, null);
                    assertEquals(last + 1, r.get(1), "a later acquire is granted above it");
                }
            }
        }
    }

    // ---- 2. fast path == general path, by differential against the build before -----------------------------------

    /**
     * Every hash shape the new fast path takes with a released claim in it (ours or another's; scrubbing on or off;
     * the last token ahead of the clock or behind it), acquired by the new script and, on a copy, by the build
     * before's (which knows no released claims, so takes its general path): the same reply, the same hash (what
     * depends on the instant aside), the same TTL.
     */
    @Test
    void theFastPathOnAReleasedClaimEndsWhereTheGeneralPathOfTheBuildBeforeEnds() {
        String a = "00000000000000aa";
        String bb = "00000000000000bb";
        int compared = 0;
        for (boolean ahead : List.of(true, false)) {
            for (String holderOfReleased : List.of(a, bb)) {
                for (String scrub : List.of("1", "0")) {
                    for (String counter : List.of("5", "0", "ffffffffffffffff", "6")) {
                        byte[] key = key("diff");
                        long tok = ahead ? fixture.serverMicros() + HOUR : fixture.serverMicros() - 5_000_000L;
                        admin().hset(key, b("c" + holderOfReleased), b(released(tok, counter)));
                        admin().pexpire(key, 600_000);
                        byte[] twin = twin(key);
                        String what = "ahead " + ahead + ", released in " + holderOfReleased + ", scrub " + scrub
                                + ", counter " + counter;
                        if (holderOfReleased.equals(a) && Long.compareUnsigned(Long.parseUnsignedLong(counter, 16), 6) >= 0) {
                            // our own released claim of this acquire or a later one: a late copy, granted nothing
                            Map<String, String> before = hash(key);
                            assertEquals(-3L, code(NEW.acquire(key, a, nonce(a, 6), scrub, null)), what);
                            assertEquals(before, hash(key), what + ": the hash as it was");
                            compared++;
                            continue;
                        }
                        List<?> n = NEW.acquire(key, a, nonce(a, 6), scrub, null);
                        List<?> o = OLD.acquire(twin, a, nonce(a, 6), scrub, null);
                        assertEquals(normalizedReply(o, tok), normalizedReply(n, tok), what);
                        assertEquals(normalized(twin), normalized(key), what);
                        long pn = admin().pttl(key);
                        long po = admin().pttl(twin);
                        assertTrue(pn > 50_000 && pn <= 60_001 && po > 50_000 && po <= 60_001, what + ": " + pn + " "
                                + po);
                        if (ahead) {
                            assertEquals(tok + 1, n.get(1), what);
                        } else {
                            assertEquals(n.get(2), n.get(1), what + ": the server's time");
                        }
                        compared++;
                    }
                }
            }
        }
        assertEquals(32, compared);
    }

    /** A waiting acquire (9 arguments) and a plain one (7) on a released claim: the same grant. */
    @Test
    void aWaitingAcquireOnAReleasedClaimIsGrantedAsAPlainOneAndQueuesNothing() {
        String a = "00000000000000aa";
        String bb = "00000000000000bb";
        long last = fixture.serverMicros() + HOUR;
        byte[] plain = key("plain");
        admin().hset(plain, b("c" + bb), b(released(last, "3")));
        admin().pexpire(plain, 600_000);
        byte[] waiting = twin(plain);
        List<?> p = NEW.acquire(plain, a, nonce(a, 1), "1", null);
        List<?> w = NEW.acquire(waiting, a, nonce(a, 1), "1", a + "0000000000000001");
        assertEquals(last + 1, p.get(1));
        assertEquals(last + 1, w.get(1));
        assertEquals(normalized(plain), normalized(waiting));
        assertFalse(hash(waiting).containsKey("n"), "nothing queued");
    }

    // ---- 3. scrubbing off: released claims do not pile up -------------------------------------------------------------

    /**
     * With scrubExpired=false, a released claim of another locker is never removed by the acquire (general path), but
     * the release after it goes the general way too (two fields), so a lock used by ever new locker instances keeps
     * at most the first one's released claim and field "t": the hash does not grow with the number of lockers.
     */
    @Test
    void withoutScrubbingReleasedClaimsDoNotPileUpAcrossLockerInstances() {
        byte[] key = key("no-scrub");
        long top = 0;
        for (int i = 1; i <= 40; i++) {
            String inst = String.format("%016x", 0x1000 + i);
            List<?> r = NEW.acquire(key, inst, nonce(inst, 1), "0", null);
            assertEquals(1L, code(r));
            long tok = (Long) r.get(1);
            assertTrue(tok > top);
            top = tok;
            assertEquals(1L, NEW.release(key, inst, nonce(inst, 1)));
            State st = state(key);
            assertTrue(st.size() <= 2, "hash of " + st.size() + " fields after " + i + " lockers: " + hash(key));
            assertEquals(top, st.maxTok());
            assertTrue(st.pttl() > 0);
        }
        // and through lockers that do not scrub
        KeyColumn lock = lock("no-scrub-lockers");
        byte[] lk = null;
        for (int i = 0; i < 12; i++) {
            RedisLocker l = fixture.open(fixture.onTarget().config(LockerConfig.builder().rid("ns-" + i)
                    .expiry(Duration.ofSeconds(30)).scrubExpired(false).build()).restartGuard(Duration.ZERO));
            lk = l.redisKey(lock);
            try (Lease lease = l.acquire(lock, "n" + i)) {
                assertTrue(lease.fencingToken() > 0);
            }
            assertTrue(admin().hlen(lk) <= 2, hash(lk).toString());
            assertFalse(l.holder(lock).isPresent());
            l.close();
        }
    }

    // ---- 4. retries and late requests ------------------------------------------------------------------------------

    /**
     * A release whose reply was lost, sent again after another locker took the lock (scrubbing: the released claim
     * dropped on the fast path; not scrubbing: the general path), or after our own next transaction took it: the
     * repeat removes nothing and the holder keeps its claim.
     */
    @Test
    void aRepeatedReleaseAfterTheNextGrantRemovesNothing() {
        String a = "00000000000000aa";
        String bb = "00000000000000bb";
        for (Scripts v : List.of(NEW, OLD)) {
            for (String scrub : List.of("1", "0")) {
                byte[] key = key("repeat-" + v + scrub);
                long t1 = (Long) NEW.acquire(key, a, nonce(a, 5), scrub, null).get(1);
                assertEquals(1L, NEW.release(key, a, nonce(a, 5)));
                long t2 = (Long) NEW.acquire(key, bb, nonce(bb, 1), scrub, null).get(1);
                assertTrue(t2 > t1);
                // (scrubbing off: our released claim is still there, and the repeat finds it: 1, and "t" keeps its
                // token; scrubbing on: B's fast path dropped it, 0)
                assertEquals(scrub.equals("1") ? 0L : 1L, v.release(key, a, nonce(a, 5)), v + " scrub " + scrub);
                assertEquals(List.of("c" + bb + " 1"), state(key).liveClaims());
                assertEquals(t2, state(key).maxTok());
                assertEquals(1L, NEW.release(key, bb, nonce(bb, 1)));
                // our own next transaction (same field), then the repeat of the first one's release
                long t3 = (Long) NEW.acquire(key, a, nonce(a, 6), scrub, null).get(1);
                assertTrue(t3 > t2);
                assertEquals(0L, v.release(key, a, nonce(a, 5)));
                assertEquals(List.of("c" + a + " 6"), state(key).liveClaims());
                // a renewal or check of the first transaction, in flight: refused, nothing written
                assertEquals(-1L, code(v.run("renew", key, "c" + a, nonce(a, 5), EXPIRY_MS, scrub)));
                assertEquals(0L, code(v.run("verify", key, "c" + a, nonce(a, 5), Long.toString(t1))));
            }
        }
    }

    /**
     * A renewal in flight when the release lands (the renewer thread races the release): it finds the claim released
     * and revives nothing, on either build; a repeated release then still answers 1 and leaves it released.
     */
    @Test
    void aRenewalThatArrivesAfterTheReleaseRevivesNothing() {
        String a = "00000000000000aa";
        for (Scripts v : List.of(NEW, OLD)) {
            byte[] key = key("renew-late-" + v);
            long tok = (Long) NEW.acquire(key, a, nonce(a, 9), "1", null).get(1);
            assertEquals(1L, NEW.release(key, a, nonce(a, 9)));
            for (String scrub : List.of("0", "1")) {
                assertEquals(List.of(-1L), v.run("renew", key, "c" + a, nonce(a, 9), EXPIRY_MS, scrub));
                assertTrue(state(key).live().isEmpty());
            }
            assertEquals(tok, state(key).maxTok());
        }
    }

    // ---- 5. waiters, force, TTL ------------------------------------------------------------------------------------

    /**
     * A released claim next to a queue (a waiter of another locker queued behind a holder that does not scrub, the
     * holder then releases): the first waiter is served, above every token; a one-shot acquire of a third locker is
     * refused meanwhile; a forced release counts only the live claim and keeps the highest token.
     */
    @Test
    void aReleasedClaimNextToAQueueAndAForcedRelease() {
        String a = "00000000000000aa";
        String bb = "00000000000000bb";
        String cc = "00000000000000cc";
        byte[] key = key("queue");
        long last = fixture.serverMicros() + HOUR;
        admin().hset(key, b("c" + a), b(released(last, "1")));
        admin().pexpire(key, 600_000);
        // B takes it without scrubbing: A's released claim stays
        assertEquals(last + 1, NEW.acquire(key, bb, nonce(bb, 1), "0", null).get(1));
        // C waits behind B
        String waiter = cc + "0000000000000001";
        assertEquals(0L, code(NEW.acquire(key, cc, nonce(cc, 1), "0", waiter)));
        assertTrue(hash(key).containsKey("q" + waiter));
        // B releases (general path: wakes C)
        assertEquals(1L, NEW.release(key, bb, nonce(bb, 1)));
        // A, not waiting, is refused: promised to C
        assertEquals(-5L, code(NEW.acquire(key, a, nonce(a, 2), "1", null)));
        // C comes back: served above B's token
        List<?> r = NEW.acquire(key, cc, nonce(cc, 2), "0", waiter);
        assertEquals(1L, code(r));
        assertEquals(last + 2, r.get(1));
        assertFalse(hash(key).containsKey("q" + waiter));
        // forced: one live claim counted (C's), the released one removed too, the token kept
        byte[] twin = twin(key);
        assertEquals(1L, NEW.run("force", key, fixture.prefix() + "released"));
        assertEquals(1L, OLD.run("force", twin, fixture.prefix() + "released"));
        State st = state(key);
        assertTrue(st.live().isEmpty());
        assertEquals(0L, st.released());
        assertEquals(last + 2, st.maxTok());
        assertTrue(st.pttl() > 0);
        assertEquals(hash(twin), hash(key));
    }

    /** The key outlives the claim on both fast paths, and a released hash keeps the TTL the grant gave it. */
    @Test
    void theKeyOutlivesEveryClaimAndAReleasedHashKeepsItsTtl() {
        String a = "00000000000000aa";
        String bb = "00000000000000bb";
        byte[] key = key("ttl");
        NEW.acquire(key, a, nonce(a, 1), "1", null);
        State held = state(key);
        assertEquals(1, held.live().size());
        assertTrue(held.pttl() * 1000 >= held.remainingMicros(0), held.toString());
        NEW.release(key, a, nonce(a, 1));
        long pttl = admin().pttl(key);
        assertTrue(pttl > 0 && pttl <= 60_001, "the grant's TTL, kept: " + pttl);
        // a short TTL left on the released hash (it was set long ago): the next grant on the fast path sets its own
        admin().pexpire(key, 50);
        NEW.acquire(key, bb, nonce(bb, 1), "1", null);
        State next = state(key);
        assertEquals(1, next.live().size());
        assertTrue(next.pttl() * 1000 >= next.remainingMicros(0), next.toString());
    }

    // ---- 6. the Java side -------------------------------------------------------------------------------------------

    /**
     * Through the lockers, with a released claim in the hash and scrubbing off for one of them: holder, list and
     * forceRelease report only live claims; a held lock is listed with its holder, token and expiry, not the released
     * claim's; the lost signal of a forced holder is not raised by a released claim.
     */
    @Test
    void theLockersReportOnlyLiveClaimsNextToAReleasedOne() {
        RedisLocker a = fixture.open(withRid(fixture.onTarget(), "rel-a", Duration.ofSeconds(30)));
        RedisLocker b = fixture.open(fixture.onTarget().config(LockerConfig.builder().rid("rel-b")
                .expiry(Duration.ofSeconds(30)).scrubExpired(false).build()).restartGuard(Duration.ZERO));
        KeyColumn lock = lock("java");
        String prefix = "java-";
        long first;
        try (Lease l = a.acquire(lock, "first")) {
            first = l.fencingToken();
        }
        try (Lease l = b.acquire(lock, "second")) {
            assertTrue(l.fencingToken() > first);
            assertEquals(2L, admin().hlen(a.redisKey(lock)), "a's released claim lingers (b does not scrub)");
            assertTrue(a.holder(lock).orElseThrow().rid().startsWith("rel-b"));
            List<dev.locker.api.LockInfo> listed = new ArrayList<>();
            String cursor = null;
            do {
                var page = a.list(prefix, 100, cursor);
                listed.addAll(page.locks());
                cursor = page.nextCursor().orElse(null);
            } while (cursor != null);
            var info = listed.stream().filter(i -> i.lock().equals(lock)).findFirst().orElseThrow();
            assertTrue(info.holder().rid().startsWith("rel-b"));
            assertEquals(l.fencingToken(), info.fencingToken());
            assertTrue(b.forceRelease(lock, "operator"), "one live claim");
        }
        assertFalse(a.holder(lock).isPresent());
        assertFalse(a.forceRelease(lock, "again"), "nothing left to force");
        try (Lease l = a.acquire(lock, "third")) {
            assertTrue(l.fencingToken() > first);
        }
        assertFalse(b.forceRelease(lock, "released only"), "a's released claim is no claim");
        assertNotEquals(0, admin().hlen(a.redisKey(lock)), "the token is kept");
    }

    // ---- 7. random schedules, mixed builds ---------------------------------------------------------------------------

    /** One locker instance of the random schedule: its build, its acquire counter, its claim as it believes it. */
    private static final class Inst {
        final String id;
        final Scripts v;
        long counter;
        String held; // nonce of the claim it was granted and has not released (it may have died since)
        String lastAcquire;
        String waiter; // its wait, while queued
        long waits;
        final List<String> nonces = new ArrayList<>();

        Inst(String id, Scripts v) {
            this.id = id;
            this.v = v;
        }
    }

    /**
     * Random schedules of acquires (plain and waiting, with and without scrubbing), repeated acquires (same nonce),
     * releases (current and stale nonces, repeated), renewals, checks, withdrawals, holder reads, listings, forced
     * releases and claims that die (their written time moved back, token kept), by lockers of both builds on one lock
     * whose last token is an hour ahead of the server's clock. After every step: at most one live claim; no live claim
     * appears but by a grant, and a grant finds no other live claim (only its own request's); every grant's token is
     * above every earlier one and the hash keeps the highest; the key has a TTL that outlives its live claim. Every
     * acquire and release of the new build is also run, on a copy, by the build before: the same reply and the same
     * live claim and kept token (acquire: the same hash).
     */
    @Test
    void randomSchedulesOfBothBuildsKeepOneHolderAndRisingTokens() {
        int fastOnReleased = 0;
        for (long seed = 1; seed <= 20; seed++) {
            fastOnReleased += schedule(seed, seed % 2 == 1, 400);
        }
        assertTrue(fastOnReleased > 20, "the schedules met the new fast path on a released claim " + fastOnReleased
                + " times");
    }

    private int schedule(long seed, boolean ahead, int steps) {
        Random rnd = new Random(seed);
        byte[] key = key("random-" + seed);
        if (ahead) {
            admin().hset(key, b("t"), b(Long.toString(fixture.serverMicros() + HOUR)));
            admin().pexpire(key, 600_000);
        }
        List<Inst> insts = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            insts.add(new Inst(String.format("%015x%d", seed, i), i == 0 ? NEW : i == 1 ? OLD : rnd.nextBoolean()
                    ? NEW : OLD));
        }
        long maxGranted = ahead ? state(key).maxTok() : 0;
        int fastOnReleased = 0;
        List<String> log = new ArrayList<>();
        for (int step = 0; step < steps; step++) {
            int op = rnd.nextInt(100);
            Inst x = insts.get(rnd.nextInt(insts.size()));
            if (op >= 36 && op < 68 && rnd.nextInt(5) != 0) { // releases, renewals, checks: mostly by a holder
                for (Inst i : insts) {
                    if (i.held != null) {
                        x = i;
                    }
                }
            }
            String scrub = rnd.nextBoolean() ? "1" : "0";
            State before = state(key);
            Map<String, String> shape = hash(key);
            String what;
            try {
                if (op < 30) {
                    // acquire (a waiter comes back with its wait)
                    String waiter = x.waiter != null ? x.waiter : rnd.nextInt(3) == 0
                            ? x.id + String.format("%016x", ++x.waits) : null;
                    String n = nonce(x.id, ++x.counter);
                    x.nonces.add(n);
                    x.lastAcquire = n;
                    what = x.v + " " + x.id + " acquire " + n + " scrub " + scrub + " waiter " + waiter;
                    boolean releasedShape = shape.size() == 1 && shape.keySet().iterator().next().startsWith("c")
                            && shape.values().iterator().next().startsWith("0 0 ");
                    byte[] twin = x.v == NEW ? twin(key) : null;
                    List<?> r = x.v.acquire(key, x.id, n, scrub, waiter);
                    if (twin != null) {
                        List<?> o = OLD.acquire(twin, x.id, n, scrub, waiter);
                        assertEquals(normalizedReply(o, before.maxTok()), normalizedReply(r, before.maxTok()), what);
                        assertEquals(normalized(twin), normalized(key), what);
                        if (releasedShape && code(r) == 1) {
                            fastOnReleased++;
                        }
                    }
                    long c = code(r);
                    if (c == 1) {
                        assertTrue(before.liveClaims().isEmpty(), what + ": granted next to live " + before.live());
                        long tok = (Long) r.get(1);
                        assertTrue(tok > maxGranted, what + ": token " + tok + " not above " + maxGranted);
                        maxGranted = tok;
                        x.held = n;
                        x.waiter = null;
                    } else if (c == 0 || c == -5) {
                        x.waiter = waiter;
                    }
                    what += " -> " + c;
                } else if (op < 36 && x.lastAcquire != null) {
                    // the same request again (its reply lost), plain
                    String n = x.lastAcquire;
                    what = x.v + " " + x.id + " repeat acquire " + n + " scrub " + scrub;
                    List<?> r = x.v.acquire(key, x.id, n, scrub, null);
                    String mine = "c" + x.id + " " + n.substring(16).replaceFirst("^0+(?=.)", "");
                    if (x.v == NEW && before.liveClaims().contains(mine)) {
                        // the claim this request was granted, live: the same token again, the claim as it stands
                        assertEquals(1L, code(r), what);
                        Matcher m = CLAIM.matcher(shape.get("c" + x.id));
                        assertTrue(m.matches(), what);
                        assertEquals(Long.parseLong(m.group(1)) + Long.parseLong(m.group(3)), r.get(1), what);
                        assertEquals(shape.get("c" + x.id), hash(key).get("c" + x.id), what + ": the claim as it was");
                    } else if (code(r) == 1) {
                        for (String l : before.liveClaims()) {
                            assertEquals(mine, l, what + ": granted next to live " + before.live());
                        }
                        long tok = (Long) r.get(1);
                        assertTrue(tok > maxGranted, what + ": token " + tok + " not above " + maxGranted);
                        maxGranted = tok;
                        x.held = n;
                    }
                    what += " -> " + code(r);
                } else if (op < 56) {
                    // release: our claim, or a stale nonce (a repeat whose first reply was lost)
                    String n = x.held != null && rnd.nextInt(4) != 0 ? x.held
                            : x.nonces.isEmpty() ? nonce(x.id, 0) : x.nonces.get(rnd.nextInt(x.nonces.size()));
                    what = x.v + " " + x.id + " release " + n;
                    byte[] twin = x.v == NEW ? twin(key) : null;
                    long r = x.v.release(key, x.id, n);
                    if (twin != null) {
                        long o = OLD.release(twin, x.id, n);
                        assertEquals(o, r, what);
                        State sn = state(key);
                        State so = state(twin);
                        assertEquals(so.liveClaims(), sn.liveClaims(), what);
                        assertEquals(so.maxTok(), sn.maxTok(), what);
                    }
                    if (n.equals(x.held)) {
                        x.held = null;
                    }
                    what += " -> " + r;
                } else if (op < 64 && x.held != null) {
                    what = x.v + " " + x.id + " renew " + x.held + " scrub " + scrub;
                    List<?> r = (List<?>) x.v.run("renew", key, "c" + x.id, x.held, EXPIRY_MS, scrub);
                    what += " -> " + r.get(0);
                } else if (op < 68 && x.held != null) {
                    what = x.v + " " + x.id + " verify " + x.held;
                    Object r = x.v.run("verify", key, "c" + x.id, x.held, "0");
                    what += " -> " + code(r);
                } else if (op < 71 && !x.nonces.isEmpty()) {
                    String n = rnd.nextBoolean() ? x.lastAcquire : x.nonces.get(rnd.nextInt(x.nonces.size()));
                    what = x.v + " " + x.id + " withdraw " + n + " scrub " + scrub;
                    Object r = x.v.run("withdraw", key, "c" + x.id, n, "60000", EXPIRY_MS, scrub,
                            fixture.prefix() + "released");
                    if (n.equals(x.held)) {
                        x.held = null;
                    }
                    what += " -> " + r;
                } else if (op < 80) {
                    what = x.v + " holder scrub " + scrub;
                    List<?> r = (List<?>) x.v.run("holder", key, scrub);
                    if ((Long) r.get(0) == 1) {
                        assertEquals(1, before.live().size(), what);
                        assertEquals(before.liveClaims().get(0).split(" ")[0], s((byte[]) r.get(2)), what);
                    } else {
                        assertTrue(before.live().isEmpty(), what + ": no holder, but live " + before.live());
                    }
                    Object l = ((List<?>) x.v.run("list", List.of(key), List.of())).get(0);
                    assertEquals(before.live().isEmpty(), l instanceof Long, what + ": list " + l);
                } else if (op < 83) {
                    what = x.v + " force";
                    byte[] twin = twin(key);
                    long r = (Long) x.v.run("force", key, fixture.prefix() + "released");
                    Scripts other = x.v == NEW ? OLD : NEW;
                    other.run("force", twin, fixture.prefix() + "released");
                    assertEquals(hash(twin), hash(key), what);
                    assertTrue(r >= before.live().size(), what);
                    if (x.v == NEW) {
                        assertEquals(shape.entrySet().stream().filter(e -> e.getKey().startsWith("c")
                                && !e.getValue().startsWith("0 0 ")).count(), r, what + ": counts unreleased claims");
                    }
                    what += " -> " + r;
                } else if (op < 88 && x.waiter != null) {
                    what = x.v + " " + x.id + " dequeue " + x.waiter;
                    Object r = x.v.run("dequeue", key, x.waiter, fixture.prefix() + "released");
                    x.waiter = null;
                    what += " -> " + r;
                } else if (op < 94) {
                    // time passes for the tombstones and queue entries: their ends move back (so scrubbing removes
                    // them, and the hash can come back to the fast path's shapes)
                    what = "lapse";
                    long now = fixture.serverMicros();
                    for (Map.Entry<String, String> e : shape.entrySet()) {
                        String f = e.getKey();
                        String v = e.getValue();
                        if (f.startsWith("w")) {
                            admin().hset(key, b(f), b((now - 1_000_000L) + v.substring(v.indexOf(' '))));
                        } else if (f.startsWith("q")) {
                            admin().hset(key, b(f), b(v.substring(0, v.indexOf(' ') + 1) + (now - 1_000_000L)
                                    + v.substring(v.indexOf('\n'))));
                        }
                    }
                    for (Inst i : insts) {
                        i.waiter = null;
                    }
                } else {
                    // a claim dies: its written time moves back past its expiry, its token kept
                    String live = before.liveClaims().isEmpty() ? null : before.liveClaims().get(0).split(" ")[0];
                    what = "age " + live;
                    if (live != null) {
                        Matcher m = CLAIM.matcher(shape.get(live));
                        assertTrue(m.matches());
                        long ts = Long.parseLong(m.group(1));
                        long tok = ts + Long.parseLong(m.group(3));
                        long older = ts - Long.parseLong(m.group(2)) * 1000 - 1_000_000L;
                        admin().hset(key, b(live), b(older + " " + m.group(2) + " " + (tok - older) + " "
                                + m.group(4) + " " + m.group(5)));
                    }
                }
            } catch (AssertionError | RuntimeException e) {
                throw new AssertionError("seed " + seed + " step " + step + " from " + shape + "\n" + String.join("\n",
                        log.subList(Math.max(0, log.size() - 25), log.size())), e);
            }
            log.add(what + "  | " + shape);
            State after = state(key);
            String ctx = "seed " + seed + " step " + step + " " + what + " from " + shape + " to " + hash(key);
            assertTrue(after.live().size() <= 1, ctx);
            if (!what.contains(" acquire ")) {
                assertTrue(before.liveClaims().containsAll(after.liveClaims()), ctx + ": a claim came alive");
            }
            if (maxGranted > 0) {
                assertTrue(after.maxTok() >= maxGranted, ctx + ": the highest token " + maxGranted + " is lost");
            }
            if (after.size() > 0) {
                assertTrue(after.pttl() > 0, ctx + ": a hash without a TTL");
            }
            if (!after.live().isEmpty()) {
                assertTrue(after.pttl() * 1000 + 1000 >= after.remainingMicros(0), ctx + ": the key lapses first");
            }
        }
        return fastOnReleased;
    }
}
