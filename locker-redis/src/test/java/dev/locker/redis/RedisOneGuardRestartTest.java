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
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class RedisOneGuardRestartTest {

    /** The guard every locker of the prefix uses, and their expiry: the tightest setting the builder accepts. */
    private static final Duration GUARD = Duration.ofSeconds(3);

    @RegisterExtension
    final GuardedLockers lockers = new GuardedLockers("oneguard:");

    /** A locker whose guard and expiry are {@link #GUARD} times {@code stretch}. */
    private RedisLocker open(RedisServer s, String name, int stretch) {
        return lockers.open(s, name, GUARD.multipliedBy(stretch), GUARD.multipliedBy(stretch));
    }

    /**
     * Given A granted a lock under the one guard, the server restarts without data before A's first renewal. B, which
     * never saw the old server, asks again and again: it is never granted while A's lease is valid.
     */
    @Test
    void aLockGrantedJustBeforeARestartIsNotGrantedAgainWhileItsLeaseIsValid() {
        GuardedLockers.untilAskedWhileValid(stretch -> {
            try (RedisServer server = RedisServer.start()) {
                awaitGuard(server, stretch);
                RedisLocker a = open(server, "a", stretch);
                KeyColumn lock = KeyColumn.named("nightly-" + LockerConfig.randomRid().substring(0, 8));
                Lease held = a.acquire(lock, "nightly").keepAlive(false);
                server.kill9();
                server.startAgain(); // no data: A's claim and the guard record are gone, A's lease does not know yet
                return askWhileValid(open(server, "b", stretch), lock, held);
            }
        });
    }

    /**
     * Given A renewing a lock under the one guard past the guard record's life, the server restarts without data
     * right after a renewal. B, a locker rebuilt after the restart, is never granted the lock while A's lease is valid.
     */
    @Test
    void aLockRenewedJustBeforeARestartIsNotGrantedAgainWhileItsLeaseIsValid() {
        GuardedLockers.untilAskedWhileValid(stretch -> {
            try (RedisServer server = RedisServer.start()) {
                awaitGuard(server, stretch);
                RedisLocker a = open(server, "a", stretch);
                KeyColumn lock = KeyColumn.named("nightly-" + LockerConfig.randomRid().substring(0, 8));
                Lease held = a.acquire(lock, "nightly").keepAlive(false);
                for (int i = 0; i < 4; i++) {
                    RedisServer.sleep(1_000L * stretch);
                    held.renew(); // within the expiry: the record lives on through renewals alone
                }
                server.kill9();
                server.startAgain();
                return askWhileValid(open(server, "b", stretch), lock, held);
            }
        });
    }

    private static void awaitGuard(RedisServer server, int stretch) {
        GuardedLockers.awaitUptime(server, GUARD.multipliedBy(stretch));
    }

    /** B asks for the lock until A's lease ends, and says whether it did; a grant meanwhile makes two holders. */
    private static boolean askWhileValid(RedisLocker b, KeyColumn lock, Lease held) {
        return GuardedLockers.askWhileValid(b, lock, held, 50, second -> "B was granted the lock under the same guard",
                GuardedLockers::namesTheGuard);
    }
}
