package dev.locker.hbase;

import dev.locker.api.Acquisition;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LeaseOptions;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A waiter interrupted while its HBase calls run ends its wait with its interrupt flag still set. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class HBaseInterruptedWaiterTest {

    private static final Duration EXPIRY = Duration.ofSeconds(60);

    private final HBaseOptions options = HBaseOptions.builder().table("locker_interrupted_waiter")
            .serverClockSkew(Duration.ZERO).build();
    private HBaseLockers lockers;

    @BeforeAll
    void connect() {
        lockers = new HBaseLockers(options, EXPIRY);
    }

    @AfterAll
    void close() throws Exception {
        lockers.close();
    }

    /**
     * Given a lock held by another locker and a waiter that keeps asking HBase, interrupts sent while it waits (some
     * land inside a call, some in a pause) end the wait unacquired, and the waiter's flag is still set after.
     */
    @Test
    void aWaiterInterruptedDuringItsHBaseCallsStopsWaitingAndKeepsItsFlag() throws Exception {
        Locker a = lockers.open("a");
        Locker b = lockers.open("b");
        KeyColumn lock = KeyColumn.of("interrupted-waiter/" + LockerConfig.randomRid().substring(0, 8), "c");
        try (Lease held = a.acquire(lock, "holder", LeaseOptions.DEFAULTS.keepAlive(false))) {
            AtomicReference<Acquisition> outcome = new AtomicReference<>();
            AtomicBoolean flagKept = new AtomicBoolean();
            AtomicReference<Throwable> failed = new AtomicReference<>();
            Thread waiter = new Thread(() -> {
                try {
                    outcome.set(b.acquireWithin(lock, "waiter", Duration.ofMinutes(10)));
                } catch (Throwable t) {
                    failed.set(t);
                } finally {
                    flagKept.set(Thread.interrupted());
                }
            }, "hbase-waiter");
            waiter.start();
            // interrupts until the wait ends: a wait that loses them all goes on for its full ten minutes
            for (int i = 0; i < 6_000 && waiter.isAlive(); i++) {
                waiter.interrupt();
                waiter.join(10);
            }
            waiter.join(Duration.ofMinutes(1).toMillis());
            assertFalse(waiter.isAlive(), "the interrupted waiter is still waiting");
            assertTrue(flagKept.get(), "the waiter's interrupt is kept: " + outcome.get() + " / " + failed.get());
            if (failed.get() == null) {
                assertNotNull(outcome.get());
                assertFalse(outcome.get().lease().isPresent(), "the lock is held by another: " + outcome.get());
            }
            assertTrue(held.isValid(), "the holder's lease is untouched");
        }
        Acquisition next = b.acquireWithin(lock, "after", Duration.ofSeconds(30));
        assertTrue(next.lease().isPresent(), "the interrupted waiter left no claim behind: " + next);
        next.lease().get().close();
    }
}
