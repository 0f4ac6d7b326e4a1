package dev.locker.api;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ConfigAndOptionsTest {

    @Test
    void defaultsAreTheDocumentedOnes() {
        LockerConfig c = LockerConfig.defaults();
        assertEquals(Duration.ofSeconds(60), c.expiry());
        assertEquals(Duration.ofMillis(100), c.lockWait());
        assertEquals(3, c.retries());
        assertEquals(Duration.ZERO, c.localWait());
        assertTrue(c.scrubExpired());
        assertEquals(4096, c.maxKeyBytes());
        assertEquals(32, c.rid().length());
        assertNotEquals(c.rid(), LockerConfig.defaults().rid(), "each locker gets its own rid");
        assertEquals(ProcessHandle.current().pid(), c.pid());
    }

    @Test
    void badSettingsAreRefusedWithTheirName() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> LockerConfig.builder().expiry(Duration.ofMillis(-1)));
        assertTrue(e.getMessage().contains("expiry"));
        assertThrows(IllegalArgumentException.class, () -> LockerConfig.builder().expiry(Duration.ZERO));
        for (Duration absurd : new Duration[] {LockerConfig.MAX_EXPIRY.plusNanos(1), Duration.ofMillis(Long.MAX_VALUE),
                Duration.ofSeconds(Long.MAX_VALUE)}) {
            IllegalArgumentException tooLong = assertThrows(IllegalArgumentException.class,
                    () -> LockerConfig.builder().expiry(absurd));
            assertTrue(tooLong.getMessage().contains("expiry must be at most 100 years"), tooLong.getMessage());
        }
        assertEquals(LockerConfig.MAX_EXPIRY, LockerConfig.builder().expiry(LockerConfig.MAX_EXPIRY).build().expiry());
        assertThrows(IllegalArgumentException.class, () -> LockerConfig.builder().retries(0));
        assertThrows(IllegalArgumentException.class, () -> LockerConfig.builder().rid(""));
        assertThrows(IllegalArgumentException.class, () -> LockerConfig.builder().maxKeyBytes(0));
        assertThrows(NullPointerException.class, () -> LockerConfig.builder().timeSource(null));
    }

    @Test
    void validateChecksSizeBeforeIo() {
        LockerConfig c = LockerConfig.builder().maxKeyBytes(10).build();
        c.validate(KeyColumn.of("12345", "67890"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> c.validate(KeyColumn.of("12345", "678901")));
        assertTrue(e.getMessage().contains("maxKeyBytes=10"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> c.validate(null));
    }

    @Test
    void unknownSchemeListsTheKnownOnes() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Lockers.open("zookeeper://x"));
        assertTrue(e.getMessage().contains("zookeeper"), e.getMessage());
        assertTrue(e.getMessage().contains("known schemes"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Lockers.open("no-scheme"));
        assertThrows(IllegalArgumentException.class, () -> Lockers.open(""));
    }

    @Test
    void anUnknownSchemeErrorNeverShowsAPassword() {
        for (String uri : new String[]{"zookeeper://admin:s3cret-pw@zk1:2181/locks", "etcd://h?password=s3cret-pw&x=1",
                "foo:user:s3cret-pw@h"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Lockers.open(uri));
            assertFalse(e.getMessage().contains("s3cret-pw"), "passwords are redacted: " + e.getMessage());
        }
    }

    @Test
    void ownerMetadataRoundTrips() {
        LockOwner o = new LockOwner("rid-1", "db7", 99, "worker-3", "vacuum ✓", Instant.parse("2026-01-02T03:04:05.006Z"));
        assertEquals(o, LockOwner.fromBytes(o.toBytes()));
        assertTrue(o.toString().contains("why=\"vacuum ✓\""));
        assertThrows(IllegalArgumentException.class, () -> LockOwner.fromBytes(new byte[]{1, 2}));
    }

    @Test
    void exceptionsNameLockAndHolderAndKeepTheCause() {
        KeyColumn lock = KeyColumn.of("k", "c");
        LockOwner holder = new LockOwner("r", "h", 1, "t", "why", null);
        RuntimeException cause = new RuntimeException("boom");
        TemporaryLockingException e = new TemporaryLockingException("taken", lock, holder, cause);
        assertTrue(e.getMessage().contains("[lock k#c") && e.getMessage().contains("rid=r"), e.getMessage());
        assertEquals(cause, e.getCause());
        assertTrue(e.isTemporary());
        assertFalse(new PermanentLockingException("no", lock).isTemporary());
        assertTrue(new ExpiredLockException("late", lock) instanceof TemporaryLockingException);
    }
}
