package dev.locker.testkit;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.Locker;
import dev.locker.api.TemporaryLockingException;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static dev.locker.testkit.Scenarios.assertContended;
import static dev.locker.testkit.Scenarios.take;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Expiry, renewal in place and fencing tokens: a holder past its expiry loses, and tokens only rise. */
public interface ExpiryAndFencingSection extends ConformanceScenario {

    @Test
    default void ownExpiredClaimFailsTheCheck() throws Exception {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        Object tx = new Object();
        take(a, lock, tx);
        pass(expiry().plusMillis(200));
        assertThrows(ExpiredLockException.class, () -> a.checkLocks(tx));
        assertThrows(ExpiredLockException.class, () -> a.renewLocks(tx));
        a.deleteLocks(tx);
    }

    @Test
    default void anExpiredHolderIsTakenOverWithAGreaterToken() throws Exception {
        Locker a = process("a");
        Locker b = process("b");
        KeyColumn lock = lock("x");
        Object ta = new Object();
        take(a, lock, ta);
        long tokenA = a.fencingToken(lock, ta);
        pass(expiry().plusMillis(300)); // a "crashed" and never released
        Object tb = new Object();
        take(b, lock, tb);
        assertTrue(b.fencingToken(lock, tb) > tokenA, "the new holder's token is greater");
        assertEquals(b.rid(), b.holder(lock).orElseThrow().rid());
    }

    @Test
    default void renewalKeepsSeniorityAndToken() throws Exception {
        Locker a = process("a");
        Locker b = process("b");
        KeyColumn lock = lock("x");
        Object ta = new Object();
        take(a, lock, ta);
        long token = a.fencingToken(lock, ta);
        Duration step = expiry().multipliedBy(6).dividedBy(10);
        pass(step);
        a.renewLocks(ta);
        pass(step); // past the first expiry, within the renewed one
        TemporaryLockingException e = assertContended(b, lock, new Object());
        assertEquals(a.rid(), e.holder().rid());
        a.checkLocks(ta);
        assertEquals(token, a.fencingToken(lock, ta), "renewal keeps the token");
        assertTrue(a.status(lock, ta).orElseThrow().isHeld());
    }

    @Test
    default void fencingTokensStrictlyIncreaseAcrossHolders() throws Exception {
        Locker[] procs = {process("a"), process("b"), process("c")};
        KeyColumn lock = lock("x");
        long last = 0;
        for (int i = 0; i < 9; i++) {
            Locker p = procs[i % procs.length];
            Object tx = new Object();
            take(p, lock, tx);
            long t = p.fencingToken(lock, tx);
            assertTrue(t > last, "token " + t + " after " + last);
            last = t;
            switch (i % 3) {
                case 0:
                    p.deleteLocks(tx);
                    break;
                case 1:
                    procs[(i + 1) % procs.length].forceRelease(lock);
                    p.deleteLocks(tx);
                    break;
                default:
                    pass(expiry().plusMillis(300)); // expire it
                    p.deleteLocks(tx);
                    break;
            }
        }
    }

    @Test
    default void aPausedFormerHoldersWriteIsRefusedByItsFencingToken() throws Exception {
        Locker a = process("a");
        Locker b = process("b");
        KeyColumn lock = lock("x");
        FencedResource resource = new FencedResource();
        Object ta = new Object();
        take(a, lock, ta);
        long tokenA = a.fencingToken(lock, ta);
        assertTrue(resource.write("a", tokenA, "a-before-pause"));
        pass(expiry().plusMillis(300)); // a pauses (GC, partition) past its expiry
        Object tb = new Object();
        take(b, lock, tb);
        assertTrue(resource.write("b", b.fencingToken(lock, tb), "b"));
        assertFalse(resource.write("a", tokenA, "a-after-pause"), "the stale holder's token is refused");
        assertEquals(List.of(), resource.violations());
        assertEquals(List.of("a-before-pause", "b"), resource.accepted());
        assertThrows(ExpiredLockException.class, () -> a.checkLocks(ta), "and a learns it has lost the lock");
    }

    @Test
    default void aFormerHolderCannotReleaseOrRenewTheNewHoldersLock() throws Exception {
        Locker a = process("a");
        Locker b = process("b");
        KeyColumn lock = lock("x");
        Object ta = new Object();
        take(a, lock, ta);
        pass(expiry().plusMillis(300)); // a pauses past its expiry
        Object tb = new Object();
        take(b, lock, tb);
        assertThrows(ExpiredLockException.class, () -> a.renewLocks(ta));
        a.deleteLocks(ta); // must not delete b's claim
        assertEquals(b.rid(), b.holder(lock).orElseThrow().rid());
        assertContended(process("c"), lock, new Object());
        b.checkLocks(tb);
        b.renewLocks(tb);
    }

    @Test
    default void aLoserCannotReleaseTheHoldersLock() {
        Locker a = process("a");
        Locker b = process("b");
        KeyColumn lock = lock("x");
        Object ta = new Object();
        take(a, lock, ta);
        Object tb = new Object();
        assertThrows(TemporaryLockingException.class, () -> {
            b.writeLock(lock, tb);
            b.checkLocks(tb);
        });
        b.renewLocks(tb);
        b.deleteLocks(tb);
        b.deleteLocks(tb);
        assertEquals(a.rid(), a.holder(lock).orElseThrow().rid());
        a.checkLocks(ta);
        a.renewLocks(ta);
    }
}
