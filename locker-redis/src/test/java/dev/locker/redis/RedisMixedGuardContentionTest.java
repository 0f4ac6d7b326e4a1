package dev.locker.redis;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockingException;
import dev.locker.api.PermanentLockingException;
import dev.locker.testkit.RedisServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A locker with another guard meets the recorded guard even when it asks only for a lock that is held. */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class RedisMixedGuardContentionTest {

    @RegisterExtension
    final GuardedLockers lockers = new GuardedLockers("contended:");

    private RedisLocker open(RedisServer s, String name, Duration guard) {
        return lockers.open(s, name, guard, guard);
    }

    /**
     * Given A holding a lock under a 4 s guard, B with a 1 s guard asks for that same lock, as a second instance of
     * a service does. B must be refused for its guard, naming both, not only told that the lock is held.
     */
    @Test
    void aLockerWithAnotherGuardAskingForAHeldLockIsRefusedForItsGuard() {
        try (RedisServer server = RedisServer.start()) {
            GuardedLockers.awaitUptime(server, Duration.ofSeconds(4));
            RedisLocker a = open(server, "a", Duration.ofSeconds(4));
            RedisLocker b = open(server, "b", Duration.ofSeconds(1));
            KeyColumn lock = KeyColumn.named("leader");
            try (Lease held = a.acquire(lock, "leader")) {
                PermanentLockingException refused = assertThrows(PermanentLockingException.class,
                        () -> b.acquire(lock, "leader").close(),
                        "B (1 s guard) was told only that the lock is held, never that A records a 4 s guard");
                assertTrue(refused.getMessage().contains("PT4S"), refused.getMessage());
            }
        }
    }

    /**
     * Given A holding a lock under a 4 s guard and B with a 1 s guard asking for it meanwhile, the server restarts
     * without data. B must not be granted the lock while A's lease is valid: B asked while A's claim lived.
     */
    @Test
    void aLockerThatAskedForAHeldLockUnderAnotherGuardIsNotGrantedItAfterARestart() {
        GuardedLockers.untilAskedWhileValid(stretch -> {
            try (RedisServer server = RedisServer.start()) {
                GuardedLockers.awaitUptime(server, Duration.ofSeconds(4L * stretch));
                RedisLocker a = open(server, "a", Duration.ofSeconds(4L * stretch));
                RedisLocker b = open(server, "b", Duration.ofSeconds(stretch));
                KeyColumn lock = KeyColumn.named("leader-" + LockerConfig.randomRid().substring(0, 8));
                // renewed by hand at the test's steps: a holder without keep-alive counts on its deadline alone
                Lease held = a.acquire(lock, "leader").keepAlive(false);
                assertThrows(LockingException.class, () -> b.acquire(lock, "leader").close(), "A holds the lock");
                held.renew();
                server.kill9();
                server.startAgain(); // no data: A's claim and the record are gone, A's lease does not know yet
                return GuardedLockers.askWhileValid(b, lock, held, 100, second -> "B (1 s guard, refused for A's "
                        + "claim before the restart) was granted the lock under A's 4 s guard",
                        GuardedLockers::namesTheGuard);
            }
        });
    }
}
