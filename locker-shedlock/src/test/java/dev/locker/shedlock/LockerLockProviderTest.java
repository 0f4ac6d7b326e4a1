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
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
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
     * Another grant's scheduled release stalls on its backend: this grant is still given back when its lockAtMostFor
     * has elapsed, and the thread that took both grants locks again at once (its record of its grants asks the
     * stalled one whether it is done, without waiting for it).
     */
    @Test
    void aReleaseStalledOnItsBackendHoldsUpNeitherAnotherGrantsReleaseNorTheNextLock() throws Exception {
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
                assertTrue(releaseThreadHeld.await(30, TimeUnit.SECONDS), "its give-back reached the backend");
                String name = "job-" + UUID.randomUUID();
                p.lock(config(name, Duration.ofMillis(500), Duration.ZERO)).orElseThrow(); // its task never unlocks
                assertEquals(Optional.empty(), p.lock(config(name, Duration.ofMinutes(5), Duration.ZERO)));
                Thread.sleep(1_000); // its lockAtMostFor elapses, and its release runs beside the stalled one
                p.lock(config(name, Duration.ofMinutes(5), Duration.ZERO)).orElseThrow(() -> new AssertionError(
                        "the grant past its lockAtMostFor was not given back while another release stalled"))
                        .unlock();
            } finally {
                letGo.countDown();
            }
        }
    }

    /**
     * A task's unlock gives its grant back on the task's thread, under the grant's monitor, and the backend stalls on
     * it. A lock of the same name is one attempt with no wait: it answers (empty: the claim is still there) at once,
     * and does not wait for the stalled release.
     */
    @Test
    void aLockOfANameAnswersAtOnceWhileAnUnlockOfThatNameStallsOnTheBackend() throws Exception {
        String name = "job-" + UUID.randomUUID();
        CountDownLatch stalled = new CountDownLatch(1);
        CountDownLatch letGo = new CountDownLatch(1);
        LockProbe stallTheUnlock = new LockProbe() {
            @Override
            public void before(Step step, KeyColumn lock, String rid) {
                if (step == Step.RELEASE && lock.legible().equals(name)
                        && Thread.currentThread().getName().equals("unlocking-task")) {
                    stalled.countDown();
                    awaitQuietly(letGo);
                }
            }
        };
        ExecutorService other = Executors.newSingleThreadExecutor();
        try (Locker locker = Lockers.open(STORE, LockerConfig.builder().probe(stallTheUnlock).build());
             LockerLockProvider p = new LockerLockProvider(locker)) {
            try {
                Thread task = new Thread(() -> p.lock(config(name, Duration.ofMinutes(5), Duration.ZERO)).orElseThrow()
                        .unlock(), "unlocking-task");
                task.start();
                assertTrue(stalled.await(30, TimeUnit.SECONDS), "the unlock reached the backend");
                Future<Optional<SimpleLock>> next = other.submit(
                        () -> p.lock(config(name, Duration.ofMinutes(5), Duration.ZERO)));
                Optional<SimpleLock> answer;
                try {
                    answer = next.get(5, TimeUnit.SECONDS);
                } catch (TimeoutException waiting) {
                    throw new AssertionError("the lock has waited 5 s for the stalled release of its name's grant");
                }
                answer.ifPresent(SimpleLock::unlock);
            } finally {
                letGo.countDown();
                other.shutdown();
            }
        }
    }

    /**
     * The backend cannot keep a claim for this lockAtMostFor (2 s on a wait-and-read-back store with a 1 s lock-wait),
     * so this process keeps the grant alive until its scheduled release. The release thread is held up by another
     * grant's release stalled on the backend. The kept grant's lockAtMostFor passes: another process must get its
     * lock within about one locker expiry after that, as it does when this process dies.
     */
    @Test
    void aGrantKeptAliveByThisProcessIsFreeForOthersSoonAfterItsLockAtMostForWhileAnotherReleaseStalls()
            throws Exception {
        String store = "mem:kept-" + UUID.randomUUID() + "?protocol=wait-and-read-back&lockWait=1s&expiry=2500ms";
        String stalling = "stalling-" + UUID.randomUUID();
        String kept = "kept-" + UUID.randomUUID();
        CountDownLatch releaseThreadHeld = new CountDownLatch(1);
        CountDownLatch letGo = new CountDownLatch(1);
        LockProbe stallTheReleaseThread = new LockProbe() {
            @Override
            public void before(Step step, KeyColumn lock, String rid) {
                if (step == Step.RELEASE && lock.legible().equals(stalling)
                        && Thread.currentThread().getName().equals("locker-shedlock-release")) {
                    releaseThreadHeld.countDown();
                    awaitQuietly(letGo);
                }
            }
        };
        try (Locker locker = Lockers.open(store, LockerConfig.builder().probe(stallTheReleaseThread).build());
             LockerLockProvider p = new LockerLockProvider(locker);
             LockerLockProvider elsewhere = LockerLockProvider.open(store)) {
            try {
                p.lock(config(stalling, Duration.ofSeconds(2), Duration.ZERO)).orElseThrow(); // the thread releases it
                assertTrue(releaseThreadHeld.await(30, TimeUnit.SECONDS), "the release thread took its release");
                LockConfiguration keptFor = config(kept, Duration.ofSeconds(2), Duration.ZERO);
                p.lock(keptFor).orElseThrow(); // its task never unlocks
                Instant freeBy = keptFor.getLockAtMostUntil().plusMillis(2500).plusSeconds(3); // an expiry, and slack
                Optional<SimpleLock> taken = Optional.empty();
                while (taken.isEmpty() && Instant.now().isBefore(freeBy)) {
                    taken = elsewhere.lock(config(kept, Duration.ofMinutes(5), Duration.ZERO)); // a second a try
                }
                assertTrue(taken.isPresent(), "another process could not take " + kept + " "
                        + Duration.between(keptFor.getLockAtMostUntil(), Instant.now()).toMillis()
                        + " ms after its lockAtMostUntil: " + elsewhere.locker().holding(elsewhere.lockOf(kept)));
                taken.get().unlock();
            } finally {
                letGo.countDown();
            }
        }
    }

    /**
     * The task extends its grant, and the renewal is slow: the grant's scheduled release falls due meanwhile, and
     * waits for the extension (the release thread looks again shortly, without blocking). Once the extension moved
     * the release, the one that fell due does nothing: the grant stays held, and the moved release gives it back.
     */
    @Test
    void aScheduledReleaseThatFellDueDuringAnExtensionDoesNothingAndTheMovedOneGivesTheGrantBack() throws Exception {
        String name = "job-" + UUID.randomUUID();
        AtomicBoolean overtaken = new AtomicBoolean();
        CountDownLatch givenBack = new CountDownLatch(1);
        LockProbe slowRenewal = new LockProbe() {
            @Override
            public void before(Step step, KeyColumn lock, String rid) {
                if (!lock.legible().equals(name)) {
                    return;
                }
                if (step == Step.RENEW && Thread.currentThread().getName().equals("extending-task")) {
                    try {
                        Thread.sleep(1_000); // the grant's lockAtMostFor (500 ms) passes during the renewal
                        overtaken.set(true);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
            }

            @Override
            public void after(Step step, KeyColumn lock, String rid, RuntimeException failure) {
                if (step == Step.RELEASE && lock.legible().equals(name)
                        && Thread.currentThread().getName().equals("locker-shedlock-release")) {
                    givenBack.countDown();
                }
            }
        };
        try (Locker locker = Lockers.open(STORE, LockerConfig.builder().probe(slowRenewal).build());
             LockerLockProvider p = new LockerLockProvider(locker);
             LockerLockProvider elsewhere = LockerLockProvider.open(STORE)) {
            AtomicReference<Optional<SimpleLock>> extended = new AtomicReference<>();
            Thread task = new Thread(() -> {
                SimpleLock held = p.lock(config(name, Duration.ofMillis(500), Duration.ZERO)).orElseThrow();
                extended.set(held.extend(Duration.ofSeconds(3), Duration.ZERO));
            }, "extending-task");
            task.start();
            task.join(30_000);
            assertTrue(overtaken.get(), "the scheduled release fell due while the extension renewed the claim");
            assertTrue(extended.get() != null && extended.get().isPresent(), "extended: " + extended.get());
            assertEquals(Optional.empty(), elsewhere.lock(config(name, Duration.ofMinutes(5), Duration.ZERO)),
                    "the release that fell due during the extension gave the extended grant back");
            assertTrue(givenBack.await(30, TimeUnit.SECONDS), "the moved release never gave the grant back");
            elsewhere.lock(config(name, Duration.ofMinutes(5), Duration.ZERO)).orElseThrow().unlock();
        }
    }

    /**
     * The provider is closed while a lock is between its grant and its return (application shutdown with the
     * scheduler still running). Refused or empty is fine; granted, the task must hold its claim.
     */
    @Test
    void aLockRacingCloseIsNeverGrantedWithoutItsClaim() throws Exception {
        String name = "job-" + UUID.randomUUID();
        CountDownLatch claimed = new CountDownLatch(1);
        CountDownLatch closed = new CountDownLatch(1);
        LockProbe pauseAtTheGrant = new LockProbe() {
            @Override
            public void acquired(KeyColumn lock, String rid) {
                if (lock.legible().equals(name)) {
                    claimed.countDown();
                    awaitQuietly(closed);
                }
            }
        };
        ExecutorService scheduler = Executors.newSingleThreadExecutor();
        try (Locker locker = Lockers.open(STORE, LockerConfig.builder().probe(pauseAtTheGrant).build())) {
            LockerLockProvider p = new LockerLockProvider(locker);
            Future<Optional<SimpleLock>> locking = scheduler.submit(
                    () -> p.lock(config(name, Duration.ofMinutes(5), Duration.ZERO)));
            assertTrue(claimed.await(30, TimeUnit.SECONDS), "the lock was granted on the backend");
            p.close();
            closed.countDown();
            Optional<SimpleLock> granted;
            try {
                granted = locking.get(30, TimeUnit.SECONDS);
            } catch (ExecutionException refused) {
                granted = Optional.empty();
            }
            if (granted.isPresent()) {
                assertTrue(locker.holder(p.lockOf(name)).isPresent(),
                        "the lock was granted, but its claim is gone: another process may run the task alongside");
            }
        } finally {
            scheduler.shutdown();
        }
    }

    /**
     * A task's extension stalls on the backend (its renewal held at a gate) while the provider closes. Close gives
     * every grant back at once: it must not wait on the grant whose task holds its monitor on the backend, nor keep
     * the other grants' give-backs waiting behind it.
     */
    @Test
    void closeGivesEveryGrantBackWithoutWaitingForATasksExtensionStalledOnTheBackend() throws Exception {
        String stalled = "stalled-" + UUID.randomUUID();
        String other = "other-" + UUID.randomUUID();
        CountDownLatch renewing = new CountDownLatch(1);
        CountDownLatch letGo = new CountDownLatch(1);
        LockProbe holdTheRenewal = new LockProbe() {
            @Override
            public void before(Step step, KeyColumn lock, String rid) {
                if (step == Step.RENEW && lock.legible().equals(stalled)) {
                    renewing.countDown();
                    awaitQuietly(letGo);
                }
            }
        };
        ExecutorService threads = Executors.newCachedThreadPool();
        try (Locker locker = Lockers.open(STORE, LockerConfig.builder().probe(holdTheRenewal).build());
             LockerLockProvider elsewhere = LockerLockProvider.open(STORE)) {
            LockerLockProvider p = new LockerLockProvider(locker);
            try {
                SimpleLock stalledLock = p.lock(config(stalled, Duration.ofMinutes(5), Duration.ZERO)).orElseThrow();
                p.lock(config(other, Duration.ofMinutes(5), Duration.ZERO)).orElseThrow();
                threads.submit(() -> stalledLock.extend(Duration.ofMinutes(10), Duration.ZERO));
                assertTrue(renewing.await(30, TimeUnit.SECONDS), "the extension reached the backend");
                Future<?> closing = threads.submit(p::close);
                try {
                    closing.get(5, TimeUnit.SECONDS);
                } catch (TimeoutException stillClosing) {
                    throw new AssertionError("close() still waits on the extension stalled on the backend");
                }
                elsewhere.lock(config(other, Duration.ofMinutes(5), Duration.ZERO)).orElseThrow(
                        () -> new AssertionError("close returned without giving the other grant back")).unlock();
                letGo.countDown(); // the renewal returns: the task's thread gives its grant back then
                Optional<SimpleLock> after = Optional.empty();
                for (int i = 0; i < 300 && after.isEmpty(); i++) {
                    Thread.sleep(100);
                    after = elsewhere.lock(config(stalled, Duration.ofMinutes(5), Duration.ZERO));
                }
                after.orElseThrow(() -> new AssertionError("the extended grant was never given back after close"))
                        .unlock();
            } finally {
                letGo.countDown();
                p.close();
            }
        } finally {
            threads.shutdown();
        }
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            latch.await(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
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
