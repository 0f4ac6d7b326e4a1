package dev.locker.testkit;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.LockProbe;
import dev.locker.api.Locker;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static dev.locker.testkit.Scenarios.take;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** Clock faults: a wall-clock step never stretches what a holder believes about its lock. */
public interface ClockFaultSection extends ConformanceScenario {

    /**
     * A wall-clock step that lands while a claim is being written (NTP, a resumed VM) does not
     * stretch the holder's belief: once the claim's lifetime has passed on the monotonic clock, the holder knows.
     */
    @Test
    default void aWallClockStepDuringTheClaimWriteDoesNotStretchTheHoldersBelief() throws Exception {
        Assumptions.assumeTrue(virtualClock() != null, "needs a virtual clock to step");
        for (Duration step : List.of(Duration.ofHours(1), Duration.ofHours(-1))) {
            VirtualClock vc = virtualClock();
            LockProbe stepper = new LockProbe() {
                @Override
                public void before(Step s, KeyColumn lock, String rid) {
                    if (s == Step.WRITE) {
                        vc.stepWallClock(step);
                    }
                }
            };
            Locker a = open(config("a").probe(stepper).build());
            KeyColumn lock = lock("x" + step.isNegative());
            Object ta = new Object();
            try {
                take(a, lock, ta);
            } catch (ExpiredLockException refused) {
                continue; // the step made our own claim look dead: refused, which is safe
            }
            pass(expiry().plusMillis(300));
            assertThrows(ExpiredLockException.class, () -> a.checkLocks(ta), "after a step of " + step);
            a.deleteLocks(ta);
        }
    }
}
