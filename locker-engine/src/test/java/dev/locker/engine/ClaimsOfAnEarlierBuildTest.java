package dev.locker.engine;

import dev.locker.api.LockOwner;
import dev.locker.api.TemporaryLockingException;
import dev.locker.spi.Deadlines;
import dev.locker.spi.Entry;
import dev.locker.spi.StoreTransaction;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.time.Instant;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Lockers of this build and of an earlier build, sharing a store, never judge a claim held by the other dead. */
class ClaimsOfAnEarlierBuildTest extends JudgingScenario {

    /**
     * A runs an earlier build, B this one, on one host. A renews every 10 s for 30 s, and B sees the first renewal
     * but not the second. NTP sets the clock back 15 s, which B sees on another lock, and A's next renewal writes the
     * first renewal's expiry again: the same bytes, as A's build stores no write number. 26 s later A still holds.
     */
    @Test
    void aRenewalOfAnEarlierBuildRepeatingAStateSeenBeforeLivesItsTimeFromTheRenewal() {
        assertRefusedAfterRenewals(Duration.ofSeconds(-15));
    }

    /** The same renewals with the clock never stepped: B is refused. */
    @Test
    void aRenewalOfAnEarlierBuildLivesItsTimeFromTheRenewal() {
        assertRefusedAfterRenewals(Duration.ZERO);
    }

    /**
     * Readers of earlier builds watch a claim's state by its expiry alone. A renews, NTP sets the clock back by the
     * interval, and A renews again: the stored expiry must change, or such a reader keeps the earlier state's deadline.
     */
    @Test
    void aRenewalNeverStoresTheExpiryItReplacesSoThatReadersOfEarlierBuildsSeeItAnew() {
        ConsistentKeyDriver a = driver("a");
        ConsistentKeyClaim held = a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
        clock.advance(Duration.ofSeconds(10));
        held = a.renew(lock, held, EXPIRY);
        Instant replaced = storedExpiry(held);
        clock.stepWallClock(Duration.ofSeconds(-10));
        clock.advance(Duration.ofSeconds(10));
        held = a.renew(lock, held, EXPIRY);
        assertNotEquals(replaced, storedExpiry(held), "the renewal stored the expiry it replaced");
    }

    private Instant storedExpiry(ConsistentKeyClaim claim) {
        for (Entry e : shared.getSlice(lock.encoded(), new byte[0], new byte[0], shared.beginTransaction())) {
            if (java.util.Arrays.equals(e.column(), claim.column)) {
                return ClaimCodec.decode(e.column(), e.value()).expiry;
            }
        }
        throw new AssertionError("the claim is not in the store");
    }

    private void assertRefusedAfterRenewals(Duration step) {
        ConsistentKeyDriver b = driver("b");
        EarlierBuildHolder a = new EarlierBuildHolder();
        a.take();
        clock.advance(Duration.ofSeconds(5));
        a.renew();
        b.readHolder(lock); // B watches the state that expires 35 s after A's first write
        clock.advance(Duration.ofSeconds(10));
        a.renew();
        clock.advance(Duration.ofSeconds(5));
        clock.stepWallClock(step);
        b.readHolder(other); // B reads its clocks after the step back, exactly
        a.renew();
        clock.advance(Duration.ofSeconds(26));
        ConsistentKeyClaim claim = b.write(lock, owner("b"), EXPIRY, null);
        ConsistentKeyClaim granted = null;
        try {
            granted = b.verify(lock, claim);
        } catch (TemporaryLockingException refused) {
            // A holds: the answer this test wants
        }
        assertTrue(clock.nanoTime() - a.deadlineNanos < 0, "A's renewed claim ran out");
        ConsistentKeyClaim grantedToB = granted;
        assertNull(grantedToB, () -> "B was granted token " + grantedToB.fencingToken()
                + " while A, of an earlier build, holds token 1 within its renewed deadline");
    }

    /**
     * A holder of an earlier build, written straight into the store: its claim values end with the owner, and its
     * renewal adds a microsecond only to an expiry equal to the one it replaces. Its deadline is this build's rule.
     */
    private final class EarlierBuildHolder {
        private final LockOwner owner = owner("a").withSince(clock.now());
        private final byte[] column = ClaimCodec.column(clock.now(), "a", 1);
        private Instant expiry;
        long deadlineNanos;

        void take() {
            write();
            mutate(List.of(new Entry(ClaimCodec.tokenColumn(1, column), new byte[0])));
        }

        void renew() {
            write();
        }

        private void write() {
            long started = clock.nanoTime();
            Instant until = clock.now().plus(EXPIRY);
            if (until.equals(expiry)) {
                until = until.plusNanos(1_000);
            }
            expiry = until;
            byte[] o = owner.toBytes();
            byte[] value = ByteBuffer.allocate(17 + o.length).put((byte) 1).putLong(ClaimCodec.micros(until))
                    .putLong(1).put(o).array();
            mutate(List.of(new Entry(column, value)));
            deadlineNanos = Deadlines.of(started, EXPIRY.minus(LOCK_WAIT));
        }

        private void mutate(List<Entry> additions) {
            StoreTransaction tx = shared.beginTransaction();
            shared.mutate(lock.encoded(), additions, List.of(), tx);
            tx.commit();
        }
    }
}
