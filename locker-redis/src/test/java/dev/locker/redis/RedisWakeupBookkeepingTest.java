package dev.locker.redis;

import dev.locker.api.KeyColumn;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.lang.reflect.Field;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static dev.locker.redis.RedisWaitingFixture.awaitTrue;
import static dev.locker.redis.RedisWaitingFixture.configured;
import static dev.locker.redis.RedisWaitingFixture.lock;
import static org.junit.jupiter.api.Assertions.assertFalse;

/** What a locker keeps per lock for its wake-ups ends one linger after the lock's last wait, contended or not. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RedisWakeupBookkeepingTest {

    private static final Duration EXPIRY = Duration.ofMillis(1500);

    @RegisterExtension
    static final RedisWaitingFixture fixture = RedisWaitingFixture.onTarget("rwb");

    private RedisLocker locker(String name, Duration linger) {
        return fixture.open(configured(fixture.onTarget(), name, EXPIRY, linger));
    }

    /** How many lock keys the locker's wake-ups keep an entry for; read through reflection, as nothing exposes it. */
    static int watched(RedisLocker l) {
        try {
            Field driver = RedisLocker.class.getDeclaredField("driver");
            driver.setAccessible(true);
            RedisWaitQueue queue = ((RedisDriver) driver.get(l)).queue();
            Field wakeups = RedisWaitQueue.class.getDeclaredField("wakeups");
            wakeups.setAccessible(true);
            Field watches = RedisWakeups.class.getDeclaredField("watches");
            watches.setAccessible(true);
            return ((Map<?, ?>) watches.get(wakeups.get(queue))).size();
        } catch (ReflectiveOperationException e) {
            throw new AssertionError(e);
        }
    }

    /**
     * A locker waits (up to a minute each) on 500 locks that are all free: each wait is granted at its first attempt.
     * Nothing was ever held, so no channel was subscribed; still, one linger later, no entry per lock is left.
     */
    @Test
    void waitsGrantedAtOnceLeaveNoEntryPerLockOnceTheirLingerEnded() throws Exception {
        RedisLocker l = locker("free", Duration.ofMillis(50));
        int locks = 500;
        for (int i = 0; i < locks; i++) {
            KeyColumn lock = lock("free-" + i);
            l.tryAcquire(lock, "never contended", Duration.ofMinutes(1)).orElseThrow().close();
        }
        assertFalse(l.wakeupsSubscribed(), "no wait found a lock held: no connection was needed");
        awaitTrue(() -> watched(l) == 0, () -> "the locker still keeps " + watched(l) + " of " + locks
                + " lock entries, long after their waits ended and their linger (50 ms) passed");
    }
}
