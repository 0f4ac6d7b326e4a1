package dev.locker.engine;

import dev.locker.api.KeyColumn;
import dev.locker.api.Locker;
import dev.locker.api.Lockers;
import dev.locker.api.TemporaryLockingException;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A transaction's bookkeeping keeps a few holds in a small array and many in a map: both shapes, and the move from
 * one to the other, claim each lock once, find every lock again, and release every one.
 */
class TransactionHoldsTest {

    @Test
    void aTransactionWithManyLocksClaimsFindsAndReleasesEveryOne() {
        try (Locker a = Lockers.open("mem:tx-holds?protocol=wait-and-read-back&lockWait=1ms");
             Locker b = Lockers.open("mem:tx-holds?protocol=wait-and-read-back&lockWait=1ms")) {
            Object tx = new Object(); // a caller's own transaction (compared by identity)
            List<KeyColumn> locks = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                locks.add(KeyColumn.of("row-" + i, "c"));
            }
            for (KeyColumn l : locks) {
                a.writeLock(l, tx);
            }
            for (KeyColumn l : locks) {
                a.writeLock(l, tx); // idempotent in either shape: no second claim
            }
            a.checkLocks(tx);
            for (KeyColumn l : locks) {
                assertTrue(a.status(l, tx).orElseThrow().isHeld(), "held: " + l);
                assertTrue(a.fencingToken(l, tx) > 0);
                Object other = new Object();
                b.writeLock(l, other); // wait-and-read-back: the younger claim learns it at its check
                assertThrows(TemporaryLockingException.class, () -> b.checkLocks(other));
                b.deleteLocks(other);
            }
            a.deleteLocks(tx);
            for (KeyColumn l : locks) {
                assertTrue(a.status(l, tx).isEmpty(), "released: " + l);
                Object next = new Object();
                b.writeLock(l, next);
                b.checkLocks(next);
                b.deleteLocks(next);
            }
            assertEquals(0, ((LockerEngine<?>) a).arbitration() instanceof LocalLockMediator m ? m.size() : -1);
        }
    }
}
