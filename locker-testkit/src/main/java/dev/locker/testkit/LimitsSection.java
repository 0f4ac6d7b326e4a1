package dev.locker.testkit;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockInfo;
import dev.locker.api.LockTransaction;
import dev.locker.api.Locker;
import dev.locker.api.TemporaryLockingException;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

import static dev.locker.testkit.Scenarios.assertContended;
import static dev.locker.testkit.Scenarios.hostileNames;
import static dev.locker.testkit.Scenarios.take;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Limits and hostile input: odd names are independent locks, bad input fails before any I/O, absurd expiries are safe. */
public interface LimitsSection extends ConformanceScenario {

    @Test
    default void hostileNamesAreIndependentLocks() {
        Locker a = process("a");
        Locker b = process("b");
        List<KeyColumn> names = hostileNames(prefix());
        for (KeyColumn held : names) {
            Object ta = new Object();
            take(a, held, ta);
            assertEquals(a.rid(), b.holder(held).orElseThrow().rid(), "holder of " + held);
            // contended first, while A's claim is young: taking every other name may outlast its expiry under load
            assertContended(b, held, new Object());
            for (KeyColumn other : names) {
                if (!other.equals(held)) {
                    Object tb = new Object();
                    take(b, other, tb);
                    b.deleteLocks(tb);
                }
            }
            a.deleteLocks(ta);
        }
    }

    @Test
    default void prefixesAndSeparatorsDoNotCollide() {
        Locker a = process("a");
        Locker b = process("b");
        List<KeyColumn> names = List.of(KeyColumn.of(prefix() + "a", ""), KeyColumn.of(prefix() + "a:x", ""),
                KeyColumn.of(prefix() + "a", ":x"), KeyColumn.of(prefix() + "a:", "x"), KeyColumn.of(prefix() + "a", "x"),
                KeyColumn.of(prefix() + "ax", ""));
        Object ta = new Object();
        take(a, names.get(0), ta);
        for (KeyColumn other : names.subList(1, names.size())) {
            take(b, other, new Object());
        }
    }

    @Test
    default void differentColumnsOfOneKeyNeverConflict() {
        Locker a = process("a");
        Locker b = process("b");
        take(a, KeyColumn.of(prefix() + "row", "c1"), new Object());
        take(b, KeyColumn.of(prefix() + "row", "c2"), new Object());
        take(a, KeyColumn.of(prefix() + "row", "c3"), new Object());
    }

    @Test
    default void badInputIsRefusedBeforeAnyIo() {
        Locker a = process("a");
        assertThrows(IllegalArgumentException.class, () -> a.writeLock(null, new Object()));
        assertThrows(IllegalArgumentException.class, () -> a.writeLock(lock("x"), null));
        assertThrows(IllegalArgumentException.class, () -> KeyColumn.of("", "c"));
        assertThrows(IllegalArgumentException.class, () -> KeyColumn.of("lone\uD800surrogate", "c"));
        assertThrows(IllegalArgumentException.class, () -> KeyColumn.of((String) null, "c"));
        KeyColumn huge = KeyColumn.of(new byte[1 << 20], new byte[0]);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> a.writeLock(huge, new Object()));
        assertTrue(e.getMessage().contains("maxKeyBytes"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> a.holder(huge));
        assertThrows(IllegalArgumentException.class, () -> a.forceRelease(huge));
        assertThrows(IllegalArgumentException.class, () -> config("x").expiry(Duration.ofSeconds(-1)));
        assertThrows(IllegalArgumentException.class, () -> config("x").lockWait(Duration.ofSeconds(-1)));
        assertThrows(IllegalArgumentException.class, () -> a.tryAcquire(lock("x"), "w", Duration.ofSeconds(-1)));
        // nothing was lost: the locker works after refusing
        take(a, lock("x"), new Object());
    }

    @Test
    default void oversizedNamesAreRefusedEvenWhenTheBackendIsDown() {
        Assumptions.assumeTrue(fixture().canBreakBackend(), "backend cannot be broken");
        Locker a = process("a");
        KeyColumn huge = KeyColumn.of(new byte[1 << 20], new byte[0]);
        fixture().breakBackend();
        try {
            assertThrows(IllegalArgumentException.class, () -> a.writeLock(huge, new Object()));
        } finally {
            fixture().repairBackend();
        }
    }

    /** 100 years and a day: past the longest expiry a backend may count exactly (Redis: server microseconds in doubles). */
    @Test
    default void anExpiryOfACenturyAndADayIsRefusedUpFrontOrHoldsTheLock() throws Exception {
        assertRefusedUpFrontOrHolds(Duration.ofDays(36_525 + 1), "century");
    }

    /** Long.MAX_VALUE ms (~292 million years): a safety-net TTL of it may overflow and delete a granted lock. */
    @Test
    default void anExpiryOfLongMaxMillisIsRefusedUpFrontOrHoldsTheLock() throws Exception {
        assertRefusedUpFrontOrHolds(Duration.ofMillis(Long.MAX_VALUE), "max-millis");
    }

    /** Long.MAX_VALUE s: not even a whole number of nanoseconds, milliseconds or an Instant past "now" fits it. */
    @Test
    default void anExpiryOfLongMaxSecondsIsRefusedUpFrontOrHoldsTheLock() throws Exception {
        assertRefusedUpFrontOrHolds(Duration.ofSeconds(Long.MAX_VALUE), "max-seconds");
    }

    /** A long but sane expiry is never refused: it holds the lock like any other. */
    @Test
    default void aTenYearExpiryHoldsTheLock() throws Exception {
        Duration tenYears = Duration.ofDays(3_653);
        Locker a = open(config("a").expiry(tenYears).build());
        Locker b = open(config("b").expiry(tenYears).build());
        assertHoldsThenFrees(a, b, lock("ten-years"));
    }

    /**
     * Either the configuration {@code expiry} is refused when a locker is opened with it — an IllegalArgumentException
     * naming the expiry, also when the backend is down (so, before any I/O) — or a lease taken with it holds the lock
     * against a second locker with the same expiry and a third with the scenario's, and a release frees it.
     */
    private void assertRefusedUpFrontOrHolds(Duration expiry, String name) throws Exception {
        Locker a;
        try {
            a = open(config("a").expiry(expiry).build());
        } catch (IllegalArgumentException refused) {
            assertTrue(refused.getMessage().contains("expiry"), "the refusal names the expiry: " + refused.getMessage());
            if (fixture().canBreakBackend()) {
                fixture().breakBackend();
                try {
                    IllegalArgumentException down = assertThrows(IllegalArgumentException.class,
                            () -> open(config("a-down").expiry(expiry).build()), "refused before any I/O");
                    assertTrue(down.getMessage().contains("expiry"), down.getMessage());
                } finally {
                    fixture().repairBackend();
                }
            }
            return;
        }
        Locker b = open(config("b").expiry(expiry).build());
        assertHoldsThenFrees(a, b, lock(name));
    }

    /** a's lease holds {@code lock} against b and a third process, survives time passing and renewal, then frees it. */
    private void assertHoldsThenFrees(Locker a, Locker b, KeyColumn lock) throws Exception {
        Locker c = process("c");
        String scenario = new String(lock("").key(), StandardCharsets.UTF_8);
        long token;
        try (Lease lease = a.acquire(lock, "for ages")) {
            token = lease.fencingToken();
            assertTrue(token > 0, "a held lock has a positive fencing token: " + token);
            assertTrue(lease.isValid(), "the holder's lease is valid");
            assertFalse(lease.remaining().isNegative() || lease.remaining().isZero(), "remaining " + lease.remaining());
            assertEquals(a.rid(), b.holder(lock).orElseThrow().rid(), "b sees a hold it");
            assertThrows(TemporaryLockingException.class, () -> b.acquire(lock, "me too"));
            assertContended(b, lock, new LockTransaction("me too, in three phases"));
            assertContended(c, lock, new LockTransaction("me three"));

            pass(expiry().multipliedBy(2)); // longer than any scenario claim lives: this one must not have died
            assertTrue(lease.isValid(), "the holder's lease is still valid");
            lease.renew();
            assertEquals(token, lease.fencingToken(), "renewal keeps the token");
            assertContended(b, lock, new LockTransaction("after the renewal"));
            assertThrows(TemporaryLockingException.class, () -> c.acquire(lock, "after the renewal"));
            LockInfo listed = c.list(scenario, 10, null).locks().stream()
                    .filter(i -> i.lock().equals(lock)).findFirst().orElseThrow(() -> new AssertionError("not listed"));
            assertEquals(a.rid(), listed.holder().rid());
            assertEquals(token, listed.fencingToken());
            assertTrue(listed.expiresAt().isAfter(clock().now()), "listed as alive: " + listed);
        }
        assertEquals(Optional.empty(), c.holder(lock), "released");
        try (Lease second = b.acquire(lock, "my turn")) {
            assertTrue(second.fencingToken() > token, "the next holder's token " + second.fencingToken()
                    + " is above the first's, " + token);
            assertTrue(second.isValid());
            assertContended(c, lock, new LockTransaction("still not me"));
        }
        try (Lease third = c.acquire(lock, "at last")) {
            assertTrue(third.isValid());
        }
    }
}
