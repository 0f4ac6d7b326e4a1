package dev.locker.springintegration;

import dev.locker.testkit.RedisServer;
import org.junit.jupiter.api.Test;
import org.springframework.dao.CannotAcquireLockException;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.Lock;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;

/** The registry while its backend, a real {@code redis-server}, is down. */
class RedisOutageLockRegistryTest {

    @Test
    void lockThrowsCannotAcquireLockWhenTheBackendIsDown() throws Exception {
        try (RedisServer redis = RedisServer.start();
             LockerLockRegistry registry = LockerLockRegistry.open(redis.uri())) {
            Lock lock = registry.obtain("k");
            redis.stop();
            CompletableFuture<Throwable> outcome = CompletableFuture.supplyAsync(() -> {
                try {
                    lock.lock();
                    lock.unlock();
                    return null;
                } catch (Throwable e) {
                    return e;
                }
            });
            Throwable failure;
            try {
                failure = outcome.get(30, TimeUnit.SECONDS);
            } catch (TimeoutException stillWaiting) {
                failure = stillWaiting;
            } finally {
                redis.startAgain(); // lets a waiter that is still there take the lock and go
            }
            outcome.get(60, TimeUnit.SECONDS);
            assertInstanceOf(CannotAcquireLockException.class, failure, "lock() during an outage");
        }
    }
}
