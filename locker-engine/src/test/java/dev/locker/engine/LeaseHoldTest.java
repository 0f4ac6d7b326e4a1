package dev.locker.engine;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockLost;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LossReason;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A single-lock lease's hold is its own transaction (no record in the locker's map of transactions): close still
 * finds it, live or lost, and it is no transaction for other locks.
 */
class LeaseHoldTest {

    /** How many claims the lock's row holds (its other columns, from 0xff on, are records such as tokens). */
    private static long claims(InMemoryStore store, KeyColumn lock) {
        byte[] end = new byte[64];
        java.util.Arrays.fill(end, (byte) 0xff);
        return store.getSlice(lock.encoded(), new byte[0], end, store.beginTransaction()).stream()
                .filter(e -> e.column().length == 0 || e.column()[0] != (byte) 0xff).count();
    }

    private static Locker locker(InMemoryStore store, VirtualClock clock) {
        return ConsistentKeyLocker.builder(store).config(LockerConfig.builder().rid("a").expiry(Duration.ofSeconds(10))
                .scrubExpired(false).timeSource(clock).build()).build();
    }

    /**
     * Given a lease whose hold was taken over inside this process after its deadline (so it is no longer its lock's
     * mediator entry) and which its holder never closed, closing the locker still deletes its claim.
     */
    @Test
    void closeDeletesTheClaimOfALeaseTakenOverLocally() throws Exception {
        VirtualClock clock = new VirtualClock();
        InMemoryStore store = new InMemoryStore("lease-hold-taken-over");
        KeyColumn lock = KeyColumn.of("k", "c");
        Locker a = locker(store, clock);
        try {
            Lease first = a.acquire(lock, "first").keepAlive(false);
            List<LockLost> told = new CopyOnWriteArrayList<>();
            first.onLost(told::add);
            clock.advance(Duration.ofSeconds(11)); // past its deadline, not renewed
            Lease second = a.acquire(lock, "second"); // takes the mediator entry over: the first is lost
            assertFalse(first.isValid());
            for (int i = 0; i < 200 && told.isEmpty(); i++) {
                Thread.sleep(10); // the listener is told on the locker's notifier thread
            }
            assertEquals(List.of(LossReason.EXPIRED), told.stream().map(LockLost::reason).toList());
            second.close();
            assertEquals(1, claims(store, lock), "the first lease's claim is still in the store (no scrubbing)");
        } finally {
            a.close();
        }
        assertEquals(0, claims(store, lock), "close deleted the claim of the lease that was taken over");
    }

    @Test
    void closeTellsALiveLeaseAndFreesItsLock() throws Exception {
        VirtualClock clock = new VirtualClock();
        InMemoryStore store = new InMemoryStore("lease-hold-close");
        KeyColumn lock = KeyColumn.of("k", "c");
        Locker a = locker(store, clock);
        Lease lease = a.acquire(lock, "job");
        List<LockLost> told = new CopyOnWriteArrayList<>();
        lease.onLost(told::add);
        LocalLockMediator mediator = (LocalLockMediator) a.arbitration();
        assertEquals(1, mediator.size());
        a.close();
        for (int i = 0; i < 200 && told.isEmpty(); i++) {
            Thread.sleep(10);
        }
        assertEquals(1, told.size());
        assertEquals(LossReason.LOCKER_CLOSED, told.get(0).reason());
        assertEquals(0, mediator.size());
        assertEquals(0, claims(store, lock));
        assertFalse(lease.isValid());
        lease.close(); // harmless
    }

    @Test
    void aLeasesTransactionIsNoTransactionForOtherLocks() {
        VirtualClock clock = new VirtualClock();
        try (Locker a = locker(new InMemoryStore("lease-hold-tx"), clock);
             Lease lease = a.acquire(KeyColumn.of("k", "c"), "job")) {
            Object tx = ((LocalLockMediator) a.arbitration()).holder(lease.lock()).orElseThrow();
            assertTrue(tx.toString().contains("job"), tx.toString());
            assertThrows(IllegalArgumentException.class, () -> a.writeLock(KeyColumn.of("k", "other"), tx));
            assertTrue(lease.isValid());
        }
    }
}
