package dev.locker.shedlock;

import dev.locker.testkit.RedisServer;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.support.LockException;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A backend that cannot be reached is a {@link LockException} naming the lock, never a silently skipped run. */
class LockerLockProviderOutageTest {

    @Test
    void anUnreachableBackendIsALockExceptionThatNamesTheLockAndNoSecret() {
        RedisServer redis = RedisServer.start("--requirepass", "s3cret-pw");
        String uri = "redis://:s3cret-pw@127.0.0.1:" + redis.port() + "?restartGuard=0&timeout=500ms";
        try (LockerLockProvider p = LockerLockProvider.open(uri)) {
            p.lock(new LockConfiguration(ClockProvider.now(), "nightly", Duration.ofMinutes(5), Duration.ZERO))
                    .orElseThrow().unlock();
            redis.close();
            LockException e = assertThrows(LockException.class, () -> p.lock(
                    new LockConfiguration(ClockProvider.now(), "nightly", Duration.ofMinutes(5), Duration.ZERO)));
            assertTrue(e.getMessage().contains("nightly"), e.getMessage());
            assertNotNull(e.getCause(), "the backend's failure is kept");
            for (Throwable t = e; t != null; t = t.getCause()) {
                assertFalse(String.valueOf(t.getMessage()).contains("s3cret-pw"), t.toString());
            }
        } finally {
            redis.close();
        }
    }
}
