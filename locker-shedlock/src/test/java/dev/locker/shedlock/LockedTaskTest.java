package dev.locker.shedlock;

import dev.locker.api.LockInfo;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.DefaultLockingTaskExecutor;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.LockExtender;
import net.javacrumbs.shedlock.core.LockingTaskExecutor;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A task run by ShedLock's executor reads its lock's fencing token through {@link LockedTask}, and only while held. */
class LockedTaskTest {

    private static LockerLockProvider provider;
    private static LockingTaskExecutor executor;

    @BeforeAll
    static void open() {
        provider = LockerLockProvider.open("mem:locked-task?lockWait=5ms");
        executor = new DefaultLockingTaskExecutor(provider);
    }

    @AfterAll
    static void close() {
        provider.close();
    }

    private static LockConfiguration config(String name, Duration atMost) {
        return new LockConfiguration(ClockProvider.now(), name, atMost, Duration.ZERO);
    }

    private static long tokenSeenByTheBackend(String name) {
        return provider.locker().holding(provider.lockOf(name)).map(LockInfo::fencingToken).orElseThrow();
    }

    @Test
    void aTaskReadsTheFencingTokenTheBackendIssuedForItsLock() {
        String name = "report-" + UUID.randomUUID();
        AtomicLong seen = new AtomicLong();
        AtomicLong issued = new AtomicLong();
        executor.executeWithLock((Runnable) () -> {
            seen.set(LockedTask.fencingToken());
            issued.set(tokenSeenByTheBackend(name));
        }, config(name, Duration.ofMinutes(5)));
        assertTrue(seen.get() > 0, "a token is positive");
        assertEquals(issued.get(), seen.get());
    }

    @Test
    void eachNewRunOfATaskGetsAGreaterToken() {
        String name = "report-" + UUID.randomUUID();
        AtomicLong first = new AtomicLong();
        AtomicLong second = new AtomicLong();
        executor.executeWithLock((Runnable) () -> first.set(LockedTask.fencingToken()), config(name, Duration.ofMinutes(5)));
        executor.executeWithLock((Runnable) () -> second.set(LockedTask.fencingToken()), config(name, Duration.ofMinutes(5)));
        assertTrue(second.get() > first.get(), () -> "second run's token " + second + " after " + first);
    }

    @Test
    void outsideALockedTaskTheTokenIsRefused() {
        assertThrows(IllegalStateException.class, LockedTask::fencingToken);
        executor.executeWithLock((Runnable) LockedTask::fencingToken, config("report-" + UUID.randomUUID(), Duration.ofMinutes(5)));
        assertThrows(IllegalStateException.class, LockedTask::fencingToken, "the task has returned and unlocked");
        assertThrows(IllegalStateException.class, LockedTask::remaining);
    }

    @Test
    void aNestedTaskReadsTheInnerTokenAndEachLockByName() {
        String outer = "outer-" + UUID.randomUUID();
        String inner = "inner-" + UUID.randomUUID();
        AtomicReference<String> failure = new AtomicReference<>();
        executor.executeWithLock((Runnable) () -> {
            long outerToken = LockedTask.fencingToken();
            executor.executeWithLock((Runnable) () -> {
                long innerToken = tokenSeenByTheBackend(inner);
                if (LockedTask.fencingToken() != innerToken || LockedTask.fencingToken(inner) != innerToken
                        || LockedTask.fencingToken(outer) != outerToken) {
                    failure.set("inside: innermost " + LockedTask.fencingToken() + ", inner " + innerToken
                            + ", outer " + LockedTask.fencingToken(outer) + " vs " + outerToken);
                }
            }, config(inner, Duration.ofMinutes(5)));
            if (LockedTask.fencingToken() != outerToken) {
                failure.set("after the inner task the innermost token is " + LockedTask.fencingToken());
            }
            if (failure.get() == null) {
                assertThrows(IllegalStateException.class, () -> LockedTask.fencingToken(inner));
            }
        }, config(outer, Duration.ofMinutes(5)));
        assertEquals(null, failure.get());
    }

    @Test
    void anExtendedLockKeepsItsToken() {
        String name = "report-" + UUID.randomUUID();
        AtomicLong before = new AtomicLong();
        AtomicLong after = new AtomicLong();
        executor.executeWithLock((Runnable) () -> {
            before.set(LockedTask.fencingToken());
            LockExtender.extendActiveLock(Duration.ofMinutes(10), Duration.ZERO);
            after.set(LockedTask.fencingToken());
        }, config(name, Duration.ofMinutes(5)));
        assertEquals(before.get(), after.get());
    }

    @Test
    void aTaskThatOutlivesItsLockAtMostForIsRefusedItsToken() {
        String name = "report-" + UUID.randomUUID();
        AtomicReference<Throwable> refusal = new AtomicReference<>();
        AtomicReference<Duration> left = new AtomicReference<>();
        executor.executeWithLock((Runnable) () -> {
            awaitFree(name);
            left.set(LockedTask.remaining());
            refusal.set(assertThrows(IllegalStateException.class, LockedTask::fencingToken));
        }, config(name, Duration.ofMillis(100)));
        assertEquals(Duration.ZERO, left.get());
        assertTrue(refusal.get().getMessage().contains(name), refusal.get().getMessage());
    }

    /**
     * The claim expired before the grant's lockAtMostUntil (its configuration was made 10 s ahead, so lockAtMostUntil
     * is 12 s away and the claim lives 2 s): the lease is lost. A task is refused its token with the
     * IllegalStateException that {@link LockedTask#fencingToken()} documents for a lost lock.
     */
    @Test
    void aTaskWhoseLeaseWasLostIsRefusedItsTokenWithAnIllegalStateException() {
        String name = "report-" + UUID.randomUUID();
        AtomicReference<Throwable> refusal = new AtomicReference<>();
        executor.executeWithLock((Runnable) () -> {
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (!LockedTask.remaining().isZero() && System.nanoTime() - deadline < 0) {
                sleep(20);
            }
            try {
                LockedTask.fencingToken();
            } catch (RuntimeException e) {
                refusal.set(e);
            }
        }, new LockConfiguration(ClockProvider.now().plusSeconds(10), name, Duration.ofSeconds(2), Duration.ZERO));
        assertTrue(refusal.get() instanceof IllegalStateException, "refused with " + refusal.get());
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /** Waits (up to a generous bound, never asserting how long) until the provider has given the lock back. */
    private static void awaitFree(String name) {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (provider.locker().holder(provider.lockOf(name)).isPresent()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError(name + " was not given back at its lockAtMostFor");
            }
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError(e);
            }
        }
    }
}
