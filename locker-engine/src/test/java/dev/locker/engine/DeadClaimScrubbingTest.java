package dev.locker.engine;

import dev.locker.api.TemporaryLockingException;
import dev.locker.spi.Entry;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The dead claims a check meets are deleted, by the cleaner or by its token write, and live ones never are. */
class DeadClaimScrubbingTest extends JudgingScenario {

    /**
     * A holds and renews; C wrote a junior claim and crashed. B's check, after C's claim expired, is refused by A: the
     * cleaner deletes C's column, and A still holds.
     */
    @Test
    void aCheckRefusedByALiveHolderHasTheDeadClaimsItMetDeleted() throws InterruptedException {
        ConsistentKeyDriver a = driver("a");
        ConsistentKeyDriver b = driver("b");
        ConsistentKeyDriver c = driver("c");
        ConsistentKeyClaim held = a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
        ConsistentKeyClaim crashed = c.write(lock, owner("c"), EXPIRY, null);
        clock.advance(Duration.ofSeconds(20));
        held = a.renew(lock, held, EXPIRY);
        clock.advance(Duration.ofSeconds(11));
        assertRefused(b);
        assertTrue(awaitGone(crashed.column), "the cleaner left C's dead claim");
        assertTrue(stored(held.column), "A's renewed claim was deleted");
        a.verify(lock, held);
    }

    /**
     * C wrote a claim and crashed, and B saw it dead. NTP sets the clock back an hour, and B takes the lock: C's claim
     * stays dead for B, so B's token write deletes it.
     */
    @Test
    void aClaimJudgedDeadBeforeAStepBackIsDeletedByTheNextGrantAfterIt() {
        ConsistentKeyDriver b = driver("b");
        ConsistentKeyDriver c = driver("c");
        ConsistentKeyClaim crashed = c.write(lock, owner("c"), EXPIRY, null);
        clock.advance(EXPIRY.plusSeconds(1));
        assertTrue(b.readHolder(lock).isEmpty(), "B sees C's claim alive after its expiry");
        clock.stepWallClock(Duration.ofHours(-1));
        clock.advance(Duration.ofSeconds(1));
        b.verify(lock, b.write(lock, owner("b"), EXPIRY, null));
        assertFalse(stored(crashed.column), "C's claim, judged dead, was left after the clock went back an hour");
    }

    private void assertRefused(ConsistentKeyDriver b) {
        ConsistentKeyClaim claim = b.write(lock, owner("b"), EXPIRY, null);
        assertThrows(TemporaryLockingException.class, () -> b.verify(lock, claim));
    }

    private boolean stored(byte[] column) {
        for (Entry e : shared.getSlice(lock.encoded(), new byte[0], new byte[0], shared.beginTransaction())) {
            if (Arrays.equals(e.column(), column)) {
                return true;
            }
        }
        return false;
    }

    /** Waits for the cleaner's thread, which runs on real time, to delete {@code column}. */
    private boolean awaitGone(byte[] column) throws InterruptedException {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (stored(column)) {
            if (System.nanoTime() - until > 0) {
                return false;
            }
            Thread.sleep(1);
        }
        return true;
    }
}
