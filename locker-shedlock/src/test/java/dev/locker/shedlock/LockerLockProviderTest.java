package dev.locker.shedlock;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockInfo;
import dev.locker.api.LockProbe;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.Lockers;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What ShedLock's suite leaves out: two owners of one backend, durations (also when a scheduled release runs late),
 * the key prefix, close, bad names.
 */
class LockerLockProviderTest {

    private static final String STORE = "mem:provider-" + UUID.randomUUID() + "?lockWait=5ms";

    private static LockConfiguration config(String name, Duration atMost, Duration atLeast) {
        return new LockConfiguration(ClockProvider.now(), name, atMost, atLeast);
    }

    @Test
    void aLockHeldThroughOneLockerIsRefusedThroughAnother() {
        try (LockerLockProvider a = LockerLockProvider.open(STORE); LockerLockProvider b = LockerLockProvider.open(STORE)) {
            String name = "job-" + UUID.randomUUID();
            SimpleLock held = a.lock(config(name, Duration.ofMinutes(5), Duration.ZERO)).orElseThrow();
            assertEquals(Optional.empty(), b.lock(config(name, Duration.ofMinutes(5), Duration.ZERO)));
            assertEquals(a.locker().rid(), b.locker().holder(b.lockOf(name)).orElseThrow().rid());
            held.unlock();
            b.lock(config(name, Duration.ofMinutes(5), Duration.ZERO)).orElseThrow().unlock();
        }
    }

    @Test
    void aTaskThatUnlocksEarlyKeepsOtherOwnersOutForLockAtLeastForEvenOnceItsProviderClosed() {
        try (LockerLockProvider b = LockerLockProvider.open(STORE)) {
            String name = "job-" + UUID.randomUUID();
            LockerLockProvider a = LockerLockProvider.open(STORE);
            a.lock(config(name, Duration.ofMinutes(5), Duration.ofMinutes(1))).orElseThrow().unlock();
            assertEquals(Optional.empty(), b.lock(config(name, Duration.ofMinutes(5), Duration.ZERO)),
                    "lockAtLeastFor has not passed");
            a.close();
            assertEquals(Optional.empty(), b.lock(config(name, Duration.ofMinutes(5), Duration.ZERO)),
                    "the backend keeps the claim for lockAtLeastFor, not the provider that took it");
        }
    }

    @Test
    void aLockAtMostForBeyondWhatTheBackendKeepsIsKeptByThisProcessInstead() {
        try (LockerLockProvider a = LockerLockProvider.open(STORE); LockerLockProvider b = LockerLockProvider.open(STORE)) {
            String name = "job-" + UUID.randomUUID();
            Duration centuries = LockerConfig.MAX_EXPIRY.multipliedBy(2);
            SimpleLock held = a.lock(config(name, centuries, Duration.ZERO)).orElseThrow();
            Instant expiresAt = b.locker().holding(b.lockOf(name)).orElseThrow().expiresAt();
            assertTrue(expiresAt.isBefore(Instant.now().plus(Duration.ofDays(1))),
                    "the claim has the locker's expiry, kept alive by this process: " + expiresAt);
            assertEquals(Optional.empty(), b.lock(config(name, Duration.ofMinutes(5), Duration.ZERO)));
            held.unlock();
            b.lock(config(name, Duration.ofMinutes(5), Duration.ZERO)).orElseThrow().unlock();
        }
    }

    /**
     * The release thread is held up (a busy host; here, another grant's release stalls on its backend): a lock of a
     * name whose lockAtMostFor has elapsed gives that grant back first, on the caller's thread, and is granted. The
     * stalled release holds up no lock of the thread that took its grant (that release gives back off the grant's
     * monitor, which the thread's record of its grants asks).
     */
    @Test
    void aLockAfterLockAtMostUntilGivesTheGrantBackFirstWhenItsScheduledReleaseRunsLate() throws Exception {
        String stalling = "stalling-" + UUID.randomUUID();
        CountDownLatch releaseThreadHeld = new CountDownLatch(1);
        CountDownLatch letGo = new CountDownLatch(1);
        LockProbe stallTheReleaseThread = new LockProbe() {
            @Override
            public void before(Step step, KeyColumn lock, String rid) {
                if (step == Step.RELEASE && lock.legible().equals(stalling)
                        && Thread.currentThread().getName().equals("locker-shedlock-release")) {
                    releaseThreadHeld.countDown();
                    try {
                        letGo.await(30, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
            }
        };
        try (Locker locker = Lockers.open(STORE, LockerConfig.builder().probe(stallTheReleaseThread).build());
             LockerLockProvider p = new LockerLockProvider(locker)) {
            try {
                p.lock(config(stalling, Duration.ofSeconds(1), Duration.ZERO)).orElseThrow(); // the thread releases it
                assertTrue(releaseThreadHeld.await(30, TimeUnit.SECONDS), "the release thread took its release");
                String name = "job-" + UUID.randomUUID();
                p.lock(config(name, Duration.ofMillis(500), Duration.ZERO)).orElseThrow(); // its task never unlocks
                assertEquals(Optional.empty(), p.lock(config(name, Duration.ofMinutes(5), Duration.ZERO)));
                Thread.sleep(700); // its lockAtMostFor elapses; its scheduled release waits behind the stalled one
                p.lock(config(name, Duration.ofMinutes(5), Duration.ZERO)).orElseThrow(() -> new AssertionError(
                        "the grant past its lockAtMostFor was not given back while the release thread was held up"))
                        .unlock();
            } finally {
                letGo.countDown();
            }
        }
    }

    @Test
    void aKeyPrefixNamesTheLockersLocksAndListsThem() {
        try (Locker locker = Lockers.open(STORE); LockerLockProvider p = new LockerLockProvider(locker, "shedlock:")) {
            String name = "report-" + UUID.randomUUID();
            SimpleLock held = p.lock(config(name, Duration.ofMinutes(5), Duration.ZERO)).orElseThrow();
            assertEquals(KeyColumn.named("shedlock:" + name), p.lockOf(name));
            assertTrue(locker.holder(KeyColumn.named("shedlock:" + name)).isPresent());
            String listed = locker.list("shedlock:", 100, null).locks().stream()
                    .map(LockInfo::lock).map(KeyColumn::legible).collect(Collectors.joining(","));
            assertTrue(listed.contains("shedlock:" + name), listed);
            held.unlock();
        }
    }

    @Test
    void aNameThatCannotBeEncodedIsRefusedBeforeAnyIo() {
        Locker closed = Lockers.open(STORE);
        closed.close(); // any I/O would fail with IllegalStateException instead
        LockerLockProvider p = new LockerLockProvider(closed);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> p.lock(config("half \uD800 surrogate", Duration.ofMinutes(5), Duration.ZERO)));
        assertTrue(e.getMessage().contains("UTF"), e.getMessage());
        p.close();
    }

    @Test
    void aClosedProviderRefusesToLockAndClosesTheLockerItOpened() {
        LockerLockProvider p = LockerLockProvider.open(STORE);
        p.close();
        assertThrows(IllegalStateException.class, () -> p.lock(config("job", Duration.ofMinutes(5), Duration.ZERO)));
        assertThrows(IllegalStateException.class, () -> p.locker().holder(KeyColumn.named("job")));
    }
}
