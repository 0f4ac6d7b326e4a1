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
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** mem: is found by scheme, grants atomically unless asked for wait-and-read-back, and shares a store by name. */
class MemProviderTest {

    @Test
    void memSchemeIsFoundByServiceLoaderAndGrantsAtomicallyByDefault() {
        assertTrue(Lockers.providers().containsKey("mem"));
        try (Locker l = Lockers.open("mem:")) {
            assertInstanceOf(MemLocker.class, l);
        }
        try (Locker l = Lockers.open("mem:provider-protocol?protocol=wait-and-read-back")) {
            assertInstanceOf(ConsistentKeyLocker.class, l);
        }
    }

    @Test
    void oneNameServesOneProtocol() {
        try (Locker atomic = Lockers.open("mem:provider-one-protocol")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> Lockers.open("mem:provider-one-protocol?protocol=wait-and-read-back"));
            assertTrue(e.getMessage().contains("one name serves one protocol"), e.getMessage());
        }
        try (Locker ck = Lockers.open("mem:provider-one-protocol-ck?protocol=wait-and-read-back")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> Lockers.open("mem:provider-one-protocol-ck?protocol=atomic"));
            assertTrue(e.getMessage().contains("protocol=wait-and-read-back"), e.getMessage());
        }
    }

    @Test
    void anUnknownProtocolIsRefusedNamingTheChoices() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Lockers.open("mem:provider-bad-protocol?protocol=paxos"));
        assertTrue(e.getMessage().contains("atomic or wait-and-read-back"), e.getMessage());
        assertFalse(MemLockerProvider.hasStore("provider-bad-protocol"), "no store was made for a refused URI");
    }

    @Test
    void lockersOnOneNameShareTheStoreAndOthersDoNot() {
        for (String protocol : new String[]{"atomic", "wait-and-read-back"}) {
            lockersOnOneNameShareTheStoreAndOthersDoNot("?protocol=" + protocol + "&lockWait=1ms", protocol);
        }
    }

    private static void lockersOnOneNameShareTheStoreAndOthersDoNot(String options, String protocol) {
        KeyColumn job = KeyColumn.named("nightly-migration");
        try (Locker a = Lockers.open("mem:provider-test-" + protocol + options);
             Locker b = Lockers.open("mem:provider-test-" + protocol + options);
             Locker other = Lockers.open("mem:elsewhere-" + protocol + options)) {
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
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Lockers.open("mem:x?protocol=wait-and-read-back&lockWait=0"));
        assertTrue(e.getMessage().contains("lockWait"), e.getMessage());
    }
}
