package dev.locker.springintegration;

import dev.locker.testkit.RedisServer;
import org.junit.jupiter.api.Test;
import org.springframework.dao.CannotAcquireLockException;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The registry while its backend, a real {@code redis-server}, is down: a bounded wait says so with
 * CannotAcquireLockException, never a plain false; lock() waits the outage out, as it waits out a holder, and holds
 * the lock once the server is back.
 */
class RedisOutageLockRegistryTest {

    @Test
    void aBoundedWaitReportsTheOutageAndLockWaitsItOut() throws Exception {
        try (RedisServer redis = RedisServer.start();
             LockerLockRegistry registry = LockerLockRegistry.open(redis.uri())) {
            Lock lock = registry.obtain("k");
            redis.stop();
            assertThrows(CannotAcquireLockException.class, lock::tryLock, "tryLock() during an outage");
            assertThrows(CannotAcquireLockException.class, () -> lock.tryLock(200, TimeUnit.MILLISECONDS),
                    "tryLock(200 ms) during an outage");
            CompletableFuture<Boolean> waiting = CompletableFuture.supplyAsync(() -> {
                lock.lock();
                try {
                    return true;
                } finally {
                    lock.unlock();
                }
            });
            Thread.sleep(300);
            assertFalse(waiting.isDone(), "lock() returned while the server was down");
            redis.startAgain();
            assertTrue(waiting.get(60, TimeUnit.SECONDS), "lock() held the lock once the server was back");
        }
    }
}
