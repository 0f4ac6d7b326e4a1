package dev.locker.engine;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Waits of absurd length end busy or are refused clearly, never overflow. */
class WaitSaturationTest {

    /**
     * A holder whose claim (the longest expiry, 100 years) was written by a host whose clock runs 200 years ahead: the
     * waiter's refusal says the holder expires in ~300 years, above Long.MAX_VALUE nanoseconds (~292 years). A wait
     * of one second must end BUSY (empty), not throw ArithmeticException out of tryAcquire.
     */
    @Test
    void aHolderExpiringBeyondTheNanosecondRangeMakesTheWaitEndBusyNotThrow() {
        InMemoryStore store = new InMemoryStore("wait-saturation");
        VirtualClock ahead = new VirtualClock(Instant.parse("2226-01-01T00:00:00Z")); // the holder's host, skewed
        VirtualClock clock = new VirtualClock();
        KeyColumn lock = KeyColumn.of("k", "c");
        try (Locker holder = ConsistentKeyLocker.builder(store).config(LockerConfig.builder().rid("holder")
                .expiry(LockerConfig.MAX_EXPIRY).timeSource(ahead).build()).build();
             Locker waiter = ConsistentKeyLocker.builder(store).config(LockerConfig.builder().rid("waiter")
                     .timeSource(clock).build()).build()) {
            Lease held = holder.tryAcquire(lock, "hold", Duration.ZERO).orElseThrow();
            assertTrue(held.isValid());
            Optional<Lease> got = waiter.tryAcquire(lock, "wait", Duration.ofSeconds(1)); // threw ArithmeticException
            assertTrue(got.isEmpty(), "the lock is held for centuries: the wait ends without it");
            held.close();
        }
    }

    /**
     * A lockWait of centuries overflows Duration.toNanos. It is refused with a clear IllegalArgumentException before any
     * I/O, as a too-short expiry is, never an ArithmeticException from the locker's constructor.
     */
    @Test
    void aLockWaitOfCenturiesIsRefusedClearly() {
        LockerConfig config = LockerConfig.builder().rid("a").lockWait(Duration.ofSeconds(Long.MAX_VALUE)).build();
        IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
                () -> ConsistentKeyLocker.builder(new InMemoryStore("lock-wait-centuries")).config(config).build());
        assertTrue(refused.getMessage().contains("lockWait"), refused.getMessage());
    }
}
