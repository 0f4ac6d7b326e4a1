package dev.locker.shedlock;

import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.Isolated;

import java.time.Clock;
import java.time.Duration;
import java.util.Optional;
import java.util.UUID;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * ShedLock's clock stepped forward (NTP correcting a clock that lagged, an operator, a resumed VM) while no time
 * passed for the grants: a grant still ends when its durations have elapsed, not at the instant the stepped clock
 * shows. A release that runs late has let the durations elapse; a step has not. ShedLock's clock is global: this
 * class runs alone.
 */
@Isolated
class LockerLockProviderClockStepTest {

    private static final String STORE = "mem:clock-step-" + UUID.randomUUID() + "?lockWait=5ms";

    private static LockConfiguration config(String name, Duration atMost, Duration atLeast) {
        return new LockConfiguration(ClockProvider.now(), name, atMost, atLeast);
    }

    private static void stepShedLocksClock(Duration step) {
        ClockProvider.setClock(Clock.offset(Clock.systemUTC(), step));
    }

    @AfterEach
    void shedLocksClockIsTheSystemClockAgain() {
        ClockProvider.setClock(Clock.systemUTC());
    }

    @Test
    void aRunningTaskKeepsItsLockWhenShedLocksClockStepsPastLockAtMostUntil() {
        try (LockerLockProvider p = LockerLockProvider.open(STORE)) {
            String name = "job-" + UUID.randomUUID();
            SimpleLock running = p.lock(config(name, Duration.ofMinutes(5), Duration.ZERO)).orElseThrow();
            stepShedLocksClock(Duration.ofMinutes(6)); // the task started moments ago, on the monotonic clock
            assertEquals(Optional.empty(), p.lock(config(name, Duration.ofMinutes(5), Duration.ZERO)),
                    "the first run has held the lock for moments of its five minutes: a second run would overlap it");
            running.unlock();
        }
    }

    @Test
    void aLockOfTheSameNameAfterAnEarlyUnlockKeepsLockAtLeastForWhenShedLocksClockStepsForward() {
        try (LockerLockProvider p = LockerLockProvider.open(STORE)) {
            String name = "job-" + UUID.randomUUID();
            SimpleLock first = p.lock(config(name, Duration.ofMinutes(5), Duration.ZERO)).orElseThrow();
            SimpleLock extended = first.extend(Duration.ofMinutes(10), Duration.ofMinutes(5)).orElseThrow();
            extended.unlock(); // early: the grant lasts until lockAtLeastUntil, five minutes from the extension
            stepShedLocksClock(Duration.ofMinutes(6));
            assertEquals(Optional.empty(), p.lock(config(name, Duration.ofMinutes(5), Duration.ZERO)),
                    "moments of the five minutes of lockAtLeastFor have elapsed");
        }
    }

    /**
     * The task asks for more time after the step: whatever extend answers, the grant it holds has run moments of its
     * five minutes, and must not be given back (extend ends it when the stepped clock shows lockAtMostUntil passed).
     */
    @Test
    void aRunningTaskKeepsItsLockWhenItExtendsAfterShedLocksClockSteppedPastLockAtMostUntil() {
        try (LockerLockProvider p = LockerLockProvider.open(STORE)) {
            String name = "job-" + UUID.randomUUID();
            SimpleLock running = p.lock(config(name, Duration.ofMinutes(5), Duration.ZERO)).orElseThrow();
            stepShedLocksClock(Duration.ofMinutes(6));
            running.extend(Duration.ofMinutes(5), Duration.ZERO); // refused or not, the task goes on running
            assertEquals(Optional.empty(), p.lock(config(name, Duration.ofMinutes(5), Duration.ZERO)),
                    "the running task's grant was given back moments into its five minutes");
        }
    }

    /**
     * The step comes before the early unlock of an extended grant: lockAtLeastUntil (five minutes from the extension)
     * has passed on the stepped clock only, and the grant must still keep other runs out.
     */
    @Test
    void anEarlyUnlockAfterShedLocksClockSteppedForwardKeepsLockAtLeastFor() {
        try (LockerLockProvider p = LockerLockProvider.open(STORE)) {
            String name = "job-" + UUID.randomUUID();
            SimpleLock first = p.lock(config(name, Duration.ofMinutes(5), Duration.ZERO)).orElseThrow();
            SimpleLock extended = first.extend(Duration.ofMinutes(10), Duration.ofMinutes(5)).orElseThrow();
            stepShedLocksClock(Duration.ofMinutes(6));
            extended.unlock();
            assertEquals(Optional.empty(), p.lock(config(name, Duration.ofMinutes(5), Duration.ZERO)),
                    "moments of the five minutes of lockAtLeastFor have elapsed");
        }
    }

    /**
     * A grant whose claim expired on the backend before its own lockAtMostUntil (its configuration was made ahead of
     * time), and the next grant of its name: giving the first back when it falls due must leave the second held.
     */
    @Test
    void aDueReleaseOfAGrantWhoseClaimExpiredLeavesTheNextGrantOfItsNameHeld() throws InterruptedException {
        try (LockerLockProvider p = LockerLockProvider.open(STORE)) {
            String name = "job-" + UUID.randomUUID();
            // made 10 s ahead: lockAtMostUntil is 12 s away, the claim (the shortest a backend keeps) expires in 2 s
            p.lock(new LockConfiguration(ClockProvider.now().plusSeconds(10), name, Duration.ofSeconds(2),
                    Duration.ZERO)).orElseThrow();
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            Optional<SimpleLock> next;
            do {
                Thread.sleep(50);
                next = p.lock(config(name, Duration.ofMinutes(5), Duration.ZERO));
            } while (next.isEmpty() && System.nanoTime() - deadline < 0);
            SimpleLock second = next.orElseThrow(() -> new AssertionError("the first claim never expired"));
            stepShedLocksClock(Duration.ofSeconds(13)); // past the first grant's lockAtMostUntil, not the second's
            assertEquals(Optional.empty(), p.lock(config(name, Duration.ofMinutes(5), Duration.ZERO)),
                    "the second grant is still held after the first was given back");
            assertEquals(Optional.empty(), p.lock(config(name, Duration.ofMinutes(5), Duration.ZERO)));
            second.unlock();
        }
    }
}
