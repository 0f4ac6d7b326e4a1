package dev.locker.testkit;

import dev.locker.api.Acquisition;
import dev.locker.api.GrantedTooLateException;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LeaseOptions;
import dev.locker.api.LockProbe;
import dev.locker.api.Locker;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The late-grant rule: a grant that reaches the caller after the lease's validity ended is withdrawn, and says so. */
public interface LateGrantSection extends ConformanceScenario {

    /**
     * A probe that, once armed, holds up the answer of the backend step that grants the lock until twice the lease's
     * expiry has passed: a slow fsync or a stalled reply, replayed at exactly that point.
     */
    final class SlowGrant implements LockProbe {
        private final ConformanceScenario scenario;
        private final LockProbe.Step granting;
        private final Duration delay;
        private final AtomicBoolean armed = new AtomicBoolean();

        SlowGrant(ConformanceScenario scenario, Duration expiry) {
            this.scenario = scenario;
            this.granting = scenario.fixture().grantingStep();
            this.delay = expiry.multipliedBy(2);
        }

        /** The next grant reaches the caller late; later ones on time. */
        void arm() {
            armed.set(true);
        }

        @Override
        public void after(Step step, KeyColumn lock, String rid, RuntimeException failure) {
            if (step != granting || failure != null || !armed.compareAndSet(true, false)) {
                return;
            }
            try {
                scenario.pass(delay);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Test
    default void aGrantThatReachesUsAfterTheLeaseExpiredIsItsOwnOutcomeAndIsWithdrawn() throws Exception {
        Duration expiry = expiry();
        SlowGrant slow = new SlowGrant(this, expiry);
        Locker a = open(config("a").probe(slow).build());
        Locker b = process("b");
        KeyColumn lock = lock("x");
        LeaseOptions options = LeaseOptions.expiry(expiry).keepAlive(false);

        slow.arm();
        Acquisition late = a.acquireWithin(lock, "job", Duration.ZERO, options);
        assertEquals(Acquisition.Outcome.GRANTED_TOO_LATE, late.outcome(), late::toString);
        GrantedTooLateException e = assertInstanceOf(GrantedTooLateException.class, late.failure().orElseThrow());
        assertTrue(e.getMessage().contains("granted") && e.getMessage().contains("expiry"), e.getMessage());
        assertEquals(lock, e.lock());
        assertTrue(late.lease().isEmpty());
        assertTrue(b.holder(lock).isEmpty(), "the late grant's claim was withdrawn");
        try (Lease next = b.tryAcquire(lock, "next", Duration.ZERO).orElseThrow()) {
            assertTrue(next.isValid(), "the lock is free for the next claimant at once");
        }

        slow.arm();
        assertThrows(GrantedTooLateException.class, () -> a.acquire(lock, "job", options),
                "acquire throws the late grant itself");
        assertTrue(b.holder(lock).isEmpty());

        slow.arm();
        Acquisition retried = a.acquireWithin(lock, "job", expiry.multipliedBy(10), options);
        assertEquals(Acquisition.Outcome.ACQUIRED, retried.outcome(), "a wait retries a late grant: " + retried);
        try (Lease lease = retried.lease().orElseThrow()) {
            assertTrue(lease.isValid());
            assertEquals(a.rid(), b.holder(lock).orElseThrow().rid());
        }
    }
}
