package dev.locker.redis;

import dev.locker.testkit.RedisServer;
import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockTransaction;
import dev.locker.api.LockOwner;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockingException;
import dev.locker.api.TemporaryLockingException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.Timeout;
import redis.clients.jedis.UnifiedJedis;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code kill -9} of the server while a lock is held, then a restart on the same port.
 *
 * <p>Without persistence the restarted server has lost the claim, while its holder may still be working. Detecting
 * the restart by {@code run_id} would only protect clients that saw the old run; a client that connects for the
 * first time after the restart cannot tell. So the guard is decided on the server, by uptime: while the server has
 * been up for less than {@code restartGuard} (at least the expiry), the acquire script grants nothing to anyone.
 * With AOF ({@code appendfsync always}) the claim survives the restart, the holder keeps its lock, and the operator
 * may turn the guard off.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class RedisRestartTest {

    private static final Duration EXPIRY = Duration.ofSeconds(2);
    /** How long the guard's admission marker lives after a grant. */
    private static final Duration MARKER_LIFE = Duration.ofSeconds(1);
    @RegisterExtension
    final GuardedLockers lockers = new GuardedLockers("restart:");

    /** A locker whose restart guard is its expiry. */
    private RedisLocker locker(RedisServer s, String name) {
        return locker(s, name, EXPIRY);
    }

    private RedisLocker locker(RedisServer s, String name, Duration restartGuard) {
        return locker(s, name, EXPIRY, restartGuard);
    }

    private RedisLocker locker(RedisServer s, String name, Duration expiry, Duration restartGuard) {
        RedisLockerBuilder b = lockers.builder(s, name, expiry);
        if (restartGuard != null) {
            b.restartGuard(restartGuard);
        }
        return lockers.open(b);
    }

    /**
     * Given A holding a lock when the server restarts without data, B is refused every lock for one expiry, A learns
     * its claim is gone, and B is granted the lock afterwards with a greater token. A restart that outlasts the
     * expiry leaves no guard to see, so the scenario runs again.
     */
    @Test
    void afterARestartWithoutDataNoClaimIsGrantedForOneExpiry() {
        GuardedLockers.rerunUntil("the server restarted within one expiry", stretch -> {
            Duration expiry = EXPIRY.multipliedBy(stretch);
            try (RedisServer server = RedisServer.start()) {
                RedisLocker a = locker(server, "a", expiry, expiry);
                try (UnifiedJedis admin = RedisLocker.builder().node("127.0.0.1", server.port()).newClient(1)) {
                    TemporaryLockingException early = assertThrows(TemporaryLockingException.class,
                            () -> a.acquire(KeyColumn.named("fresh-server"), "too early"));
                    assertTrue(early.getMessage().contains("restartGuard"), early.getMessage());
                    // the refused acquire may have dated the data's start up to a second late, rounded against us
                    RedisTarget.awaitUptime(admin, expiry.plusSeconds(1));
                }
                KeyColumn lock = KeyColumn.named("billing-run");
                KeyColumn other = KeyColumn.named("report-run");
                LockTransaction ta = new LockTransaction("nightly billing");
                a.writeLock(lock, ta);
                a.checkLocks(ta);
                long tokenA = a.fencingToken(lock, ta);

                long killed = System.nanoTime();
                server.kill9();
                server.startAgain(); // same port, no data: a's claim is gone, a does not know yet

                RedisLocker b = locker(server, "b", expiry, expiry); // a process that never saw the old server
                LockingException refused = GuardedLockers.refusal(() -> b.acquire(lock, "takeover"));
                Optional<LockOwner> holder = b.holder(lock);
                LockingException during = GuardedLockers.refusal(() -> b.acquire(other, "any lock, during the guard"));
                ExpiredLockException expired = assertThrows(ExpiredLockException.class, () -> a.renewLocks(ta));
                a.deleteLocks(ta);
                if (System.nanoTime() - killed >= expiry.toNanos() || expired.getMessage().contains("validity ended")) {
                    return false; // the guard, or A's validity, may have ended before the checks below ran
                }
                assertInstanceOf(TemporaryLockingException.class, refused, "B was granted the lock under the guard");
                assertTrue(refused.getMessage().contains("may have lost claims"), refused.getMessage());
                assertEquals(Optional.empty(), holder, "the data is really gone");
                assertInstanceOf(TemporaryLockingException.class, during, "B was granted another lock under the guard");
                assertTrue(expired.getMessage().contains("gone"), expired.getMessage());

                Optional<Lease> later = b.tryAcquire(lock, "takeover", expiry.multipliedBy(4));
                assertTrue(later.isPresent(), "granted once the server has been up for one expiry");
                assertTrue(later.get().fencingToken() > tokenA, "tokens stay monotonic although the data was lost");
                later.get().close();
                return true;
            }
        });
    }

    /**
     * INFO's {@code uptime_in_seconds} is a difference of whole wall-clock seconds: a server started at 10.6 s reports
     * 1 s of uptime at 11.0 s. Given a server restarted half-way through a second (so its start time is truncated by
     * about half a second), probed again and again until it grants: measured on this test's monotonic clock from
     * before the restart (which is at least the server's real uptime, whatever it reports), every refusal must
     * announce at least {@code guard - elapsed} ms left, and the grant may come only once the guard has elapsed.
     */
    @Test
    void theGuardCountsTheServersRealUptimeNotWholeSeconds() {
        Duration guard = Duration.ofSeconds(2);
        try (RedisServer server = RedisServer.start()) {
            server.kill9();
            awaitWallClockMillisBetween(400, 600); // redis-server reads the same wall clock as this JVM
            long beforeRestart = System.nanoTime();
            server.startAgain();
            RedisLocker b = locker(server, "b", guard);
            KeyColumn lock = KeyColumn.named("guarded-" + LockerConfig.randomRid().substring(0, 8));
            int refusals = 0;
            while (true) {
                try (Lease lease = b.acquire(lock, "probe")) {
                    long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - beforeRestart);
                    assertTrue(elapsedMs >= guard.toMillis(), "granted when the server had been up for at most "
                            + elapsedMs + " ms, under the guard of " + guard);
                    break;
                } catch (TemporaryLockingException refused) {
                    long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - beforeRestart);
                    long leftMs = msLeft(refused);
                    assertTrue(leftMs + elapsedMs >= guard.toMillis(), "after at most " + elapsedMs + " ms of "
                            + "uptime the guard announced only " + leftMs + " ms left of " + guard);
                    refusals++;
                }
                RedisServer.sleep(20);
            }
            assertTrue(refusals > 0, "the restarted server refused at first");
        }
    }

    private static final Pattern MS_LEFT = Pattern.compile("for another (\\d+) ms");

    private static long msLeft(TemporaryLockingException e) {
        Matcher m = MS_LEFT.matcher(e.getMessage());
        assertTrue(m.find(), e.getMessage());
        return Long.parseLong(m.group(1));
    }

    private static void awaitWallClockMillisBetween(int from, int to) {
        while (true) {
            long ms = System.currentTimeMillis() % 1000;
            if (ms >= from && ms < to) {
                return;
            }
            RedisServer.sleep(ms < from ? from - ms : 1000 - ms + from);
        }
    }

    @Test
    void withAofTheHolderKeepsItsLockAcrossARestart() {
        GuardedLockers.rerunUntil("the holder renewed within its validity after the restart", stretch -> {
            Duration expiry = EXPIRY.multipliedBy(stretch);
            try (RedisServer server = RedisServer.startPersistent()) {
                // every write is on disk before it is acknowledged: nothing granted is ever lost, so no guard is needed
                RedisLocker a = locker(server, "a", expiry, Duration.ZERO);
                KeyColumn lock = KeyColumn.named("schema-migration");
                LockTransaction ta = new LockTransaction("migrate v42");
                a.writeLock(lock, ta);
                a.checkLocks(ta);
                long tokenA = a.fencingToken(lock, ta);

                server.kill9();
                server.startAgain(); // reloads the AOF

                RedisLocker b = locker(server, "b", expiry, Duration.ZERO);
                LockingException held = GuardedLockers.refusal(() -> b.acquire(lock, "takeover"));
                try {
                    a.renewLocks(ta); // a's pooled connection died with the server: retried on a fresh one
                } catch (ExpiredLockException late) {
                    a.deleteLocks(ta);
                    if (late.getMessage().contains("validity ended")) {
                        return false; // the restart outlasted A's expiry: its claim may have lapsed on its own
                    }
                    throw late;
                }
                assertInstanceOf(TemporaryLockingException.class, held, "B was granted the lock A still held");
                assertEquals(a.rid(), held.holder().rid(), "the claim survived: " + held.getMessage());
                assertEquals("migrate v42", held.holder().why());
                assertEquals(tokenA, a.fencingToken(lock, ta));
                a.deleteLocks(ta);
                try (Lease lease = b.acquire(lock, "next")) {
                    assertTrue(lease.fencingToken() > tokenA);
                }
                return true;
            }
        });
    }

    /**
     * The guard's answer is kept in a marker key for a second (so that a grant does not read INFO). Given a server
     * that persists every write (so the marker survives) and is up past the guard, a grant writes the marker; the
     * server is killed and restarted at once, well within the marker's second. The restarted server has been up for
     * less than the guard: the marker, although reloaded, must not let a grant through (its LASTSAVE is the old one).
     */
    @Test
    void aMarkerReloadedAfterARestartDoesNotSkipTheGuard() {
        GuardedLockers.rerunUntil("B asked within the guard after the restart, the marker written before it",
                this::aMarkerReloadedAfterARestart);
    }

    private boolean aMarkerReloadedAfterARestart(int stretch) {
        Duration guard = Duration.ofSeconds(2L * stretch);
        try (RedisServer server = RedisServer.startPersistent()) {
            RedisLocker a = locker(server, "a", guard);
            try (UnifiedJedis admin = RedisLocker.builder().node("127.0.0.1", server.port()).newClient(1)) {
                RedisTarget.awaitUptime(admin, guard.plusMillis(1100)); // LASTSAVE (boot) a second behind
            }
            KeyColumn lock = KeyColumn.named("marker-" + LockerConfig.randomRid().substring(0, 8));
            long asked = System.nanoTime();
            a.acquire(lock, "writes the marker").close();
            try (UnifiedJedis admin = RedisLocker.builder().node("127.0.0.1", server.port()).newClient(1)) {
                boolean marked = admin.exists("restart:{}guard" + guard.toMillis()); // the marker of this guard
                if (!marked && System.nanoTime() - asked >= MARKER_LIFE.toNanos()) {
                    return false; // the marker may have lapsed before it was looked for
                }
                assertTrue(marked, "the grant kept its admission in the marker");
            }
            long killed = System.nanoTime();
            server.kill9();
            server.startAgain(); // reloads the AOF (the marker is never in it; an RDB snapshot would hold it)
            RedisLocker b = locker(server, "b", guard);
            LockingException refused = GuardedLockers.refusal(() -> b.acquire(lock, "right after the restart"));
            if (System.nanoTime() - killed >= guard.toNanos()) {
                return false; // the guard may have ended before B asked: nothing left to check
            }
            assertInstanceOf(TemporaryLockingException.class, refused, "B was granted the lock under the guard");
            assertTrue(refused.getMessage().contains("may have lost claims"), refused.getMessage());
            return true;
        }
    }
}
