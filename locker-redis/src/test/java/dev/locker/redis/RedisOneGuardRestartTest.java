package dev.locker.redis;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.testkit.RedisServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** With one guard equal to the expiry, no lock is granted after a restart without data while an older lease is valid. */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class RedisOneGuardRestartTest {

    /** The guard every locker of the prefix uses, and their expiry: the tightest setting the builder accepts. */
    private static final Duration GUARD = Duration.ofSeconds(3);

    @RegisterExtension
    final GuardedLockers lockers = new GuardedLockers("oneguard:");

    private RedisLocker open(RedisServer s, String name) {
        return lockers.open(s, name, GUARD, GUARD);
    }

    /**
     * Given A granted a lock under the one guard, the server restarts without data before A's first renewal. B, which
     * never saw the old server, asks again and again: it is never granted while A's lease is valid.
     */
    @Test
    void aLockGrantedJustBeforeARestartIsNotGrantedAgainWhileItsLeaseIsValid() {
        try (RedisServer server = RedisServer.start()) {
            awaitGuard(server);
            RedisLocker a = open(server, "a");
            KeyColumn lock = KeyColumn.named("nightly-" + LockerConfig.randomRid().substring(0, 8));
            Lease held = a.acquire(lock, "nightly").keepAlive(false);
            server.kill9();
            server.startAgain(); // no data: A's claim and the guard record are gone, A's lease does not know yet
            pollWhileValid(open(server, "b"), lock, held);
        }
    }

    /**
     * Given A renewing a lock under the one guard past the guard record's life, the server restarts without data
     * right after a renewal. B, a locker rebuilt after the restart, is never granted the lock while A's lease is valid.
     */
    @Test
    void aLockRenewedJustBeforeARestartIsNotGrantedAgainWhileItsLeaseIsValid() {
        try (RedisServer server = RedisServer.start()) {
            awaitGuard(server);
            RedisLocker a = open(server, "a");
            KeyColumn lock = KeyColumn.named("nightly-" + LockerConfig.randomRid().substring(0, 8));
            Lease held = a.acquire(lock, "nightly").keepAlive(false);
            for (int i = 0; i < 4; i++) {
                RedisServer.sleep(1_000);
                held.renew(); // within the expiry: the record lives on through renewals alone
            }
            server.kill9();
            server.startAgain();
            pollWhileValid(open(server, "b"), lock, held);
        }
    }

    private static void awaitGuard(RedisServer server) {
        GuardedLockers.awaitUptime(server, GUARD);
    }

    /** B asks for the lock until A's lease ends; a grant while it is valid makes two holders. */
    private static void pollWhileValid(RedisLocker b, KeyColumn lock, Lease held) {
        GuardedLockers.pollWhileValid(b, lock, held, 50, second -> "B was granted the lock under the same guard",
                GuardedLockers::namesTheGuard);
    }
}
