package dev.locker.shedlock;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockInfo;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.Lockers;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import org.junit.jupiter.api.Test;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.UUID;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What ShedLock's suite leaves out: two owners of one backend, durations (also on ShedLock's clock when a scheduled
 * release runs late), the key prefix, close, bad names.
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

    @Test
    void aLockAfterLockAtMostUntilGivesTheGrantBackFirstWhenItsScheduledReleaseRunsLate() {
        try (LockerLockProvider p = LockerLockProvider.open(STORE)) {
            String name = "job-" + UUID.randomUUID();
            p.lock(config(name, Duration.ofMinutes(5), Duration.ZERO)).orElseThrow(); // its task never unlocks
            assertEquals(Optional.empty(), p.lock(config(name, Duration.ofMinutes(5), Duration.ZERO)));
            // ShedLock's clock past lockAtMostUntil; the release scheduled for it is five real minutes away
            ClockProvider.setClock(Clock.offset(Clock.systemUTC(), Duration.ofMinutes(6)));
            try {
                p.lock(config(name, Duration.ofMinutes(5), Duration.ZERO)).orElseThrow().unlock();
            } finally {
                ClockProvider.setClock(Clock.systemUTC());
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
