package dev.locker.engine;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockLost;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LossReason;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** When a force-released holder learns it: at a step that asks the backend, not at checkLocks of a confirmed claim. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ForcedReleaseNoticeTest {

    private final VirtualClock clock = new VirtualClock();
    private final InMemoryStore shared = new InMemoryStore("forced-notice");
    private final KeyColumn lock = KeyColumn.of("vertex:42", "name");

    private Locker locker(String rid) {
        return ConsistentKeyLocker.builder(shared).config(LockerConfig.builder().rid(rid).expiry(Duration.ofSeconds(30))
                .lockWait(Duration.ofMillis(100)).timeSource(clock).build()).build();
    }

    @Test
    void checkLocksOfAConfirmedClaimDoesNotSeeAForcedReleaseButVerifyLocksDoes() {
        try (Locker a = locker("a"); Locker operator = locker("operator")) {
            Object tx = new Object();
            a.writeLock(lock, tx);
            a.checkLocks(tx);
            assertTrue(operator.forceRelease(lock, "stuck job"));
            a.checkLocks(tx); // confirmed before: no I/O, JanusGraph's economy
            ExpiredLockException lost = assertThrows(ExpiredLockException.class, () -> a.verifyLocks(tx));
            assertEquals(LossReason.FORCE_RELEASED, lost.reason());
            assertThrows(ExpiredLockException.class, () -> a.checkLocks(tx), "once learnt, a loss stays");
            a.deleteLocks(tx);
        }
    }

    @Test
    void aLeaseLearnsAForcedReleaseAtItsNextRenewalAndItsListenersAreTold() throws Exception {
        try (Locker a = locker("a"); Locker operator = locker("operator")) {
            Lease lease = a.acquire(lock, "job").keepAlive(false);
            List<LockLost> told = new CopyOnWriteArrayList<>();
            lease.onLost(told::add);
            assertTrue(operator.forceRelease(lock, "stuck job"));
            assertTrue(lease.isValid(), "no I/O: not learnt yet");
            assertThrows(ExpiredLockException.class, lease::renew);
            assertFalse(lease.isValid());
            for (int i = 0; i < 1_000 && told.isEmpty(); i++) {
                Thread.sleep(10); // told on a notifier thread
            }
            assertEquals(LossReason.FORCE_RELEASED, told.get(0).reason(), told.toString());
            lease.close();
        }
    }
}
