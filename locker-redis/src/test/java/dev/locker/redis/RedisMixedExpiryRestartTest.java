package dev.locker.redis;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockingException;
import dev.locker.api.PermanentLockingException;
import dev.locker.spi.DeploymentCheck;
import dev.locker.testkit.RedisServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Lockers with different expiries on one server share one restart guard, so a restart never yields two holders. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RedisMixedExpiryRestartTest {

    /** One guard for both lockers, and A's expiry: the longest a restart may need to wait out. */
    private static final Duration GUARD = Duration.ofSeconds(3);

    @RegisterExtension
    final GuardedLockers lockers = new GuardedLockers("mixed:");

    private RedisLockerBuilder builder(RedisServer s, String name, Duration expiry) {
        return lockers.builder(s, name, expiry);
    }

    private RedisLocker open(RedisLockerBuilder b) {
        return lockers.open(b);
    }

    /**
     * Given A holding a lock with a 3 s expiry and B built with a 500 ms expiry, both with one 3 s guard: the server
     * restarts without its data. However often B asks while A's lease is valid, B is refused.
     */
    @Test
    void aLockerWithAShorterExpiryIsNotGrantedALockLostInARestartWhileItsHolderIsValid() {
        try (RedisServer server = RedisServer.start()) {
            RedisLocker a = open(builder(server, "a", GUARD).restartGuard(GUARD));
            KeyColumn lock = KeyColumn.named("nightly-" + LockerConfig.randomRid().substring(0, 8));
            Lease held = awaitGrant(a, lock);
            server.kill9();
            server.startAgain(); // no data: A's claim is gone, A's lease does not know yet
            RedisLocker b = open(builder(server, "b", Duration.ofMillis(500)).restartGuard(GUARD));
            while (held.isValid()) {
                try (Lease second = b.acquire(lock, "takeover")) {
                    assertFalse(held.isValid(), "B was granted the lock (token " + second.fencingToken()
                            + ") while A's lease (token " + held.fencingToken() + ") was still valid: two holders");
                } catch (LockingException refused) {
                    assertTrue(refused.getMessage().contains("restartGuard"), refused.getMessage());
                }
                RedisServer.sleep(100);
            }
        }
    }

    /** Asks until the guard of a fresh server lets the grant through. */
    private static Lease awaitGrant(RedisLocker a, KeyColumn lock) {
        while (true) {
            try {
                return a.acquire(lock, "nightly");
            } catch (LockingException refused) {
                assertTrue(refused.getMessage().contains("restartGuard"), refused.getMessage());
                RedisServer.sleep(200);
            }
        }
    }

    /** Left unset, the guard is the same minute for every expiry, so lockers with different expiries agree on it. */
    @Test
    void theDefaultRestartGuardDoesNotFollowTheExpiry() {
        for (Duration expiry : List.of(Duration.ofMillis(500), Duration.ofSeconds(5), Duration.ofSeconds(60))) {
            RedisLockerBuilder b = RedisLocker.builder().node("127.0.0.1", 1)
                    .config(LockerConfig.builder().expiry(expiry).build());
            assertEquals(Duration.ofSeconds(60), b.restartGuard(), "the default guard for an expiry of " + expiry);
        }
        RedisLockerBuilder set = RedisLocker.builder().node("127.0.0.1", 1)
                .config(LockerConfig.builder().expiry(Duration.ofSeconds(5)).build()).restartGuard(GUARD);
        assertEquals(GUARD, set.restartGuard(), "a guard set is the guard used");
    }

    /** An expiry the guard does not cover would outlive a restart's guard: refused before any I/O. */
    @Test
    void anExpiryLongerThanTheRestartGuardIsRefusedWhenBuilt() {
        RedisLockerBuilder b = RedisLocker.builder().node("127.0.0.1", 1)
                .config(LockerConfig.builder().expiry(Duration.ofMinutes(5)).build());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, b::build);
        assertTrue(e.getMessage().contains("restartGuard") && e.getMessage().contains("expiry"), e.getMessage());
        IllegalArgumentException explicit = assertThrows(IllegalArgumentException.class, () -> RedisLocker.builder()
                .node("127.0.0.1", 1).config(LockerConfig.builder().expiry(Duration.ofSeconds(5)).build())
                .restartGuard(Duration.ofSeconds(2)).build());
        assertTrue(explicit.getMessage().contains("restartGuard"), explicit.getMessage());
    }

    /**
     * Given A granted a lock with a 2 s guard, B with a 1 s guard on the same server and prefix is refused at once,
     * naming both guards, long before a restart could show the difference; the doctor fails B's URI too.
     */
    @Test
    void aLockerWhoseRestartGuardDiffersFromTheOneInUseIsRefused() {
        try (RedisServer server = RedisServer.start()) {
            GuardedLockers.awaitUptime(server, Duration.ofSeconds(2));
            RedisLocker a = open(builder(server, "a", Duration.ofSeconds(1)).restartGuard(Duration.ofSeconds(2)));
            RedisLocker b = open(builder(server, "b", Duration.ofSeconds(1)).restartGuard(Duration.ofSeconds(1)));
            a.acquire(KeyColumn.named("first"), "records the guard").close();
            PermanentLockingException e = assertThrows(PermanentLockingException.class,
                    () -> b.acquire(KeyColumn.named("other"), "a second guard"));
            assertTrue(e.getMessage().contains("restartGuard=PT1S") && e.getMessage().contains("PT2S"),
                    e.getMessage());
            a.acquire(KeyColumn.named("other"), "the guard in use").close();
            DeploymentCheck.Finding doctor = new RedisDoctor().check(server.address() + "?prefix=mixed:&expiry=1s"
                    + "&restartGuard=1s", p -> { }).stream().filter(f -> f.check().equals("restart-guard"))
                    .findFirst().orElseThrow();
            assertEquals(DeploymentCheck.Level.FAIL, doctor.level(), doctor::toString);
        }
    }
}
