package dev.locker.engine;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.Lockers;
import dev.locker.api.TemporaryLockingException;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class MemProviderTest {

    @Test
    void memSchemeIsFoundByServiceLoader() {
        assertTrue(Lockers.providers().containsKey("mem"));
        try (Locker l = Lockers.open("mem:")) {
            assertInstanceOf(ConsistentKeyLocker.class, l);
        }
    }

    @Test
    void lockersOnOneNameShareTheStoreAndOthersDoNot() {
        KeyColumn job = KeyColumn.named("nightly-migration");
        try (Locker a = Lockers.open("mem:provider-test?lockWait=1ms");
             Locker b = Lockers.open("mem:provider-test?lockWait=1ms");
             Locker other = Lockers.open("mem:elsewhere?lockWait=1ms")) {
            try (Lease lease = a.acquire(job, "migrate")) {
                TemporaryLockingException e = assertThrows(TemporaryLockingException.class, () -> b.acquire(job, "me too"));
                assertEquals(a.rid(), e.holder().rid());
                other.acquire(job, "independent store").close();
            }
            b.acquire(job, "after release").close();
        }
    }

    @Test
    void uriOptionsOverrideTheConfig() {
        try (Locker l = Lockers.open("mem:opts?expiry=7s&lockWait=3ms&retries=2", LockerConfig.builder().rid("fixed").build())) {
            assertEquals(Duration.ofSeconds(7), l.config().expiry());
            assertEquals(Duration.ofMillis(3), l.config().lockWait());
            assertEquals(2, l.config().retries());
            assertTrue(l.rid().startsWith("fixed-"), "the rid name is kept, with an instance id of its own: " + l.rid());
        }
        assertThrows(IllegalArgumentException.class, () -> Lockers.open("mem:x?bogus=1"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Lockers.open("mem:x?lockWait=0"));
        assertTrue(e.getMessage().contains("lockWait"), e.getMessage());
    }
}
