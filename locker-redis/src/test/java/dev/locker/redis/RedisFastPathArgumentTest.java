package dev.locker.redis;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.TemporaryLockingException;
import dev.locker.testkit.RedisServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.args.Rawable;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static dev.locker.redis.RedisWaitingFixture.lock;
import static dev.locker.redis.RedisWaitingFixture.withRid;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The acquire and release scripts' fast paths answer as their general paths would, for the arguments RedisDriver makes.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RedisFastPathArgumentTest {

    private static final String A = "00000000000000aa";
    private static final String B = "00000000000000bb";
    private static final String EXPIRY_MS = "30000";
    /** An hour in microseconds: a tombstone that lives through the test. */
    private static final long HOUR = 3_600_000_000L;

    @RegisterExtension
    static final RedisWaitingFixture fixture = RedisWaitingFixture.ownServer("trust");

    private byte[] key(String name) {
        return new RedisKeys(fixture.prefix()).lockKey(lock(name));
    }

    private byte[] marker(String guardArg) {
        return new RedisKeys(fixture.prefix()).markerKey(b(guardArg));
    }

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** The acquire script as RedisDriver sends it, with the counter argument as given (canonical or not). */
    private List<?> acquire(byte[] key, byte[] marker, String instance, String counter, String guardMs, String check) {
        return acquire(key, marker, instance, counter, guardMs, check, ScriptArgs.keyTtl(b(EXPIRY_MS)));
    }

    private List<?> acquire(byte[] key, byte[] marker, String instance, String counter, String guardMs, String check,
                            byte[] keyTtl) {
        return acquire(key, marker, instance, counter, guardMs, check, keyTtl, "1");
    }

    private List<?> acquire(byte[] key, byte[] marker, String instance, String counter, String guardMs, String check,
                            byte[] keyTtl, String scrub) {
        List<byte[]> args = List.of(b("c" + instance), b(counter), b(EXPIRY_MS), b("=owner " + instance), b(guardMs),
                b(scrub + check), keyTtl);
        int keyCount = marker == null ? 1 : 2;
        Rawable[] call = new Rawable[keyCount + args.size()];
        call[0] = RedisScript.arg(key);
        if (marker != null) {
            call[1] = RedisScript.arg(marker);
        }
        for (int i = 0; i < args.size(); i++) {
            call[keyCount + i] = RedisScript.arg(args.get(i));
        }
        return AcquireReply.of(RedisScript.ACQUIRE.run(fixture.admin(), keyCount, call), fixture.admin(), key,
                b("c" + instance));
    }

    private List<?> acquire(byte[] key, String instance, String counter) {
        return acquire(key, null, instance, counter, "0", "off");
    }

    private long release(byte[] key, String instance, long counter) {
        return (Long) RedisScript.RELEASE.run(fixture.admin(), 1, RedisScript.arg(key),
                RedisScript.arg(b("c" + instance)), RedisScript.arg(b(instance + String.format("%016x", counter))),
                RedisScript.arg(b(fixture.prefix() + "released")));
    }

    private static long code(List<?> reply) {
        return (Long) reply.get(0);
    }

    private long lastSave() {
        return (Long) fixture.admin().eval("return redis.call('LASTSAVE')");
    }

    /** Waits for a server second later than LASTSAVE: only then does admit write a marker. */
    private void awaitSecondAfterLastSave() {
        while (fixture.serverMicros() / 1_000_000 <= lastSave()) {
            RedisServer.sleep(50);
        }
    }

    /** Zeroes the server's command statistics (CONFIG RESETSTAT). */
    private void resetStats() {
        fixture.admin().sendCommand(Protocol.Command.CONFIG, "RESETSTAT");
    }

    /** How many INFO calls the server served since the last CONFIG RESETSTAT (scripts' calls included). */
    private long infoCalls() {
        String stats = fixture.admin().info("commandstats");
        for (String line : stats.split("\r?\n")) {
            if (line.startsWith("cmdstat_info:calls=")) {
                return Long.parseLong(line.substring("cmdstat_info:calls=".length(), line.indexOf(',')));
            }
        }
        return 0;
    }

    /** A lock whose hash holds another locker's live tombstone: its acquires take the general path. */
    private byte[] generalKey(String name) {
        byte[] key = key(name);
        fixture.admin().hset(key, b("w" + B), b((fixture.serverMicros() + HOUR) + " 0000000000000001"));
        return key;
    }

    // ---- admission in the steady state ------------------------------------------------------------------------------

    @Test
    void aGrantOnTheGeneralPathReadsNoInfoWhileThisBootsMarkerSaysUpAndNoEviction() {
        awaitSecondAfterLastSave();
        byte[] marker = marker("0");
        // the full form, as admit keeps INFO's answers: this boot, up since long ago, no eviction
        fixture.admin().psetex(marker, 600_000, b(lastSave() + " 1 1"));
        byte[] key = generalKey("full-marker");
        resetStats();
        assertEquals(1L, code(acquire(key, marker, A, "1", "0", "fail")));
        assertEquals(0L, infoCalls(), "the marker answered for INFO");
    }

    @Test
    void aGrantOnTheGeneralPathReadsNoInfoWhileThisBootsMarkerVouches() {
        awaitSecondAfterLastSave();
        byte[] marker = marker("0");
        fixture.admin().del(marker); // no marker yet: the next grant's admit reads INFO and writes one
        // a grant on a free lock: admit reads INFO once and leaves a marker that vouches for this boot
        assertEquals(1L, code(acquire(key("warm"), marker, A, "1", "0", "fail")));
        assertEquals(Long.toString(lastSave()), new String(fixture.admin().get(marker), StandardCharsets.US_ASCII),
                "a vouching marker");
        fixture.admin().persist(marker); // the steady state, held still: the marker outlives this test
        byte[] key = generalKey("vouched-marker");
        resetStats();
        assertEquals(1L, code(acquire(key, marker, A, "2", "0", "fail")));
        assertEquals(0L, infoCalls(), "the vouching marker answered for INFO, as the full form does");
    }

    /** INFO calls of one hand-over between two lockers of no guard, this boot's marker being {@code marker}. */
    private long infoCallsOfAHandOver(String name, String markerValue) throws Exception {
        RedisLocker holder = fixture.open(withRid(fixture.onTarget(), name + "-holder", Duration.ofSeconds(30)));
        RedisLocker waiter = fixture.open(withRid(fixture.onTarget(), name + "-waiter", Duration.ofSeconds(30)));
        awaitSecondAfterLastSave();
        byte[] marker = marker("0");
        fixture.admin().del(marker);
        try (Lease l = holder.acquire(lock(name + "-warm"), "warm")) {
            assertTrue(l.fencingToken() > 0);
        }
        if (markerValue != null) {
            fixture.admin().set(marker, b(markerValue));
        }
        fixture.admin().persist(marker); // the steady state, held still: the marker outlives this test
        resetStats();
        fixture.handOver(holder, waiter, lock(name), Duration.ofSeconds(30), Duration.ofSeconds(30));
        return infoCalls();
    }

    @Test
    void aHandOverToAQueuedWaiterReadsNoInfoWhileThisBootsMarkerSaysUpAndNoEviction() throws Exception {
        assertEquals(0L, infoCallsOfAHandOver("full-hand-over", lastSave() + " 1 1"));
    }

    @Test
    void aHandOverToAQueuedWaiterReadsNoInfoWhileThisBootsMarkerVouches() throws Exception {
        assertEquals(0L, infoCallsOfAHandOver("vouched-hand-over", null));
    }

    // ---- counters as the client sends them --------------------------------------------------------------------------

    @Test
    void aLateCopyGrantsNothingOverItsReleasedClaimOnEitherPath() {
        byte[] fast = key("late-fast");
        assertEquals(1L, code(acquire(fast, A, "5")));
        assertEquals(1L, release(fast, A, 5));
        assertEquals(-3L, code(acquire(fast, A, "5")), "the same request again");
        assertEquals(-3L, code(acquire(fast, A, "4")), "an earlier one");
        assertEquals(1L, code(acquire(fast, A, "6")), "a later one is granted");

        byte[] general = key("late-general");
        assertEquals(1L, code(acquire(general, A, "5")));
        assertEquals(1L, release(general, A, 5));
        fixture.admin().hset(general, b("w" + B), b((fixture.serverMicros() + HOUR) + " 0000000000000001"));
        assertEquals(-3L, code(acquire(general, A, "5")), "the same request again, the general way");
    }

    // ---- release: how our claim starts as granted, and what it becomes ---------------------------------------------

    /** The release script in its four-argument form, with both client-made values as given. */
    private long releaseAsGranted(byte[] key, String instance, String expectedStart, String releasedValue) {
        return (Long) RedisScript.RELEASE.run(fixture.admin(), 1, RedisScript.arg(key),
                RedisScript.arg(b("c" + instance)), RedisScript.arg(b(fixture.prefix() + "released")),
                RedisScript.arg(b(expectedStart)), RedisScript.arg(b(releasedValue)));
    }

    private String claim(byte[] key, String instance) {
        byte[] v = fixture.admin().hget(key, b("c" + instance));
        return v == null ? null : new String(v, StandardCharsets.US_ASCII);
    }

    // ---- a seeded mix of requests -----------------------------------------------------------------------------------

    /*
     * Three lockers send fresh acquires (scrubbing or not), releases as RedisLocker sends them, withdrawals (of a grant,
     * or of a request not yet arrived), forced releases, and late copies of earlier acquires that their field or their
     * tombstone still covers. Claims live 30 s, longer than the test: a grant while another locker holds is a second
     * holder. Half the runs start with field "t" an hour ahead of the server's clock, the state a clock stepped back
     * leaves, so that tokens carry a delta and releases take their parsing path.
     */
    @Test
    void aSeededMixOfGrantsReleasesWithdrawalsAndLateCopiesKeepsOneHolderAndRisingTokens() {
        for (long seed = 1; seed <= 4; seed++) {
            mix(seed, false);
            mix(seed, true);
        }
    }

    private void mix(long seed, boolean clockBehind) {
        java.util.Random random = new java.util.Random(seed);
        byte[] key = key("mix-" + seed + "-" + clockBehind);
        String[] instances = {A, B, "00000000000000cc"};
        long[] counters = new long[3];
        long[] held = {-1, -1, -1};
        long[] heldToken = new long[3];
        long[] withdrawn = new long[3];
        long last = 0;
        int grants = 0;
        int lateRefused = 0;
        int liveCopies = 0;
        if (clockBehind) {
            last = fixture.serverMicros() + HOUR;
            fixture.admin().hset(key, b("t"), b(Long.toString(last)));
            fixture.admin().pexpire(key, 600_000);
        }
        for (int step = 0; step < 300; step++) {
            String where = "seed " + seed + (clockBehind ? ", clock behind" : "") + ", step " + step;
            int i = random.nextInt(3);
            int op = random.nextInt(10);
            String[] own = ownClaim(key, instances[i]);
            if (op < 3 || op == 3 && held[i] < 0) {
                long c = ++counters[i];
                String scrub = random.nextBoolean() ? "1" : "0";
                List<?> r = acquire(key, null, instances[i], Long.toHexString(c), "0", "off",
                        ScriptArgs.keyTtl(b(EXPIRY_MS)), scrub);
                boolean someoneHolds = held[0] >= 0 || held[1] >= 0 || held[2] >= 0;
                if (code(r) == 1L) {
                    assertFalse(someoneHolds, where + ": granted while the lock is held");
                    long token = (Long) r.get(1);
                    assertTrue(token > last, where + ": token " + token + " not above " + last);
                    last = token;
                    grants++;
                    held[i] = c;
                    heldToken[i] = token;
                } else {
                    assertEquals(0L, code(r), where + ": a fresh acquire is granted or refused, not " + r);
                    assertTrue(someoneHolds, where + ": refused while the lock is free");
                }
            } else if (op == 3) {
                byte[] nonce = b(instances[i] + String.format("%016x", held[i]));
                long r = releaseAsGranted(key, instances[i],
                        new String(ScriptArgs.grantedStart(heldToken[i], b(EXPIRY_MS), nonce), StandardCharsets.US_ASCII),
                        new String(ScriptArgs.releasedValue(heldToken[i], nonce), StandardCharsets.US_ASCII));
                assertEquals(1L, r, where + ": our release");
                held[i] = -1;
            } else if (op == 4) {
                // withdrawn: the held grant, or, holding nothing (a tombstone covers every earlier counter), a request
                // that has not arrived yet (it may, as a late copy)
                long c = held[i] >= 0 ? held[i] : ++counters[i];
                withdraw(key, instances[i], c);
                if (held[i] == c) {
                    held[i] = -1;
                }
                withdrawn[i] = Math.max(withdrawn[i], c);
            } else if (op == 5 && random.nextInt(4) == 0) {
                RedisScript.FORCE.run(fixture.admin(), 1, RedisScript.arg(key),
                        RedisScript.arg(b(fixture.prefix() + "released")));
                held[0] = held[1] = held[2] = -1;
            } else if (op >= 6) {
                long covered = Math.max(withdrawn[i], own == null ? 0 : Long.parseLong(own[3], 16));
                if (covered == 0) {
                    continue;
                }
                long c = 1 + (long) random.nextInt((int) covered);
                List<?> r = acquire(key, null, instances[i], Long.toHexString(c), "0", "off",
                        ScriptArgs.keyTtl(b(EXPIRY_MS)), "1");
                if (held[i] == c) {
                    assertEquals(1L, code(r), where + ": a copy of the live grant is answered again: " + r);
                    assertEquals(heldToken[i], r.get(1), where + ": with its token");
                    liveCopies++;
                } else {
                    assertTrue(code(r) != 1L, where + ": a late copy of counter " + c + " was granted: " + r);
                    lateRefused++;
                }
            }
        }
        // the mix reached every kind of request
        assertTrue(grants > 10 && lateRefused > 0 && liveCopies > 0,
                grants + " grants, " + lateRefused + " late copies refused, " + liveCopies + " copies of a live grant");
    }

    /** The withdraw script as RedisDriver calls it: a tombstone for a minute, our claim of that counter removed. */
    private void withdraw(byte[] key, String instance, long counter) {
        RedisScript.WITHDRAW.run(fixture.admin(), 1, RedisScript.arg(key), RedisScript.arg(b("c" + instance)),
                RedisScript.arg(b(instance + String.format("%016x", counter))), RedisScript.arg(b("60000")),
                RedisScript.arg(b(EXPIRY_MS)), RedisScript.arg(b("1")),
                RedisScript.arg(b(fixture.prefix() + "released")));
    }

    /** Our field's claim split at its spaces (written, expiry, token delta, counter, ...), or null. */
    private String[] ownClaim(byte[] key, String instance) {
        String v = claim(key, instance);
        return v == null ? null : v.split(" ");
    }

    // ---- one marker per guard argument ------------------------------------------------------------------------------

    @Test
    void aMarkerVouchingForNoGuardAdmitsNoLockerWhoseGuardIsNotWaitedOut() throws Exception {
        RedisLocker noGuard = fixture.open(withRid(fixture.onTarget(), "no-guard", Duration.ofSeconds(30)));
        KeyColumn lock = lock("guarded");
        awaitSecondAfterLastSave();
        fixture.admin().del(marker("0")); // no marker yet: the next grant's admit reads INFO and writes one
        try (Lease l = noGuard.acquire(lock("unguarded"), "vouch")) {
            assertTrue(l.fencingToken() > 0);
        }
        assertEquals(Long.toString(lastSave()), new String(fixture.admin().get(marker("0")), StandardCharsets.US_ASCII),
                "the guard-0 locker's marker vouches for this boot");
        // this server started seconds ago: a ten-minute guard is not waited out, whatever the other marker says
        RedisLocker guarded = fixture.open(withRid(fixture.onTarget(), "guarded", Duration.ofSeconds(30))
                .restartGuard(Duration.ofMinutes(10)));
        TemporaryLockingException early = assertThrows(TemporaryLockingException.class,
                () -> guarded.acquire(lock, "too early").close());
        assertTrue(early.getMessage().contains("restartGuard"), early.getMessage());
        assertFalse(guarded.holder(lock).isPresent());
    }
}
