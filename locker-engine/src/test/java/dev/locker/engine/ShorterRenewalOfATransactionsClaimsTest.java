package dev.locker.engine;

import dev.locker.api.KeyColumn;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockingException;
import dev.locker.api.TemporaryLockingException;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.testkit.Interleavings;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** renewLocks to a shorter term whose answer failed leaves no claim of the transaction believed past that term. */
class ShorterRenewalOfATransactionsClaimsTest {

    private static final Duration EXPIRY = Duration.ofSeconds(30);
    private static final Duration SHORTER = Duration.ofSeconds(5);

    private final VirtualClock clock = new VirtualClock();
    private final InMemoryStore shared = new InMemoryStore("shorter-renewal-of-a-transaction");
    private final LandsThenFails store = new LandsThenFails(shared);
    private final List<Locker> lockers = new ArrayList<>();
    private final KeyColumn x = KeyColumn.of("vertex:1", "name");
    private final KeyColumn y = KeyColumn.of("vertex:2", "name");

    @AfterEach
    void tearDown() {
        lockers.forEach(Locker::close);
    }

    private Locker locker(String rid, KeyColumnValueStore through) {
        Locker l = ConsistentKeyLocker.builder(through).config(LockerConfig.builder().rid(rid).expiry(EXPIRY)
                .lockWait(Duration.ofMillis(100)).timeSource(clock).build()).build();
        lockers.add(l);
        return l;
    }

    /** A claim written, not checked yet, renewed for 5 s with its answer lost: its check fails, or C is refused. */
    @Test
    void aShorterRenewalOfAnUncheckedClaimWhoseAnswerWasLostIsNotBelievedPastItsTerm() {
        Locker a = locker("a", store);
        Object ta = new Object();
        a.writeLock(x, ta);
        store.failTheReadAfterTheNextWrite();
        assertThrows(LockingException.class, () -> a.renewLocks(ta, SHORTER));
        try {
            a.checkLocks(ta);
        } catch (LockingException refused) {
            // the claim is not ours any more: the answer wanted
        }
        clock.advance(SHORTER.plusSeconds(1));
        assertOneHolder(a, ta, x);
    }

    /**
     * A transaction holds x and y; renewLocks for 5 s renews x, then y's answer is lost. 6 s later C tries each lock:
     * either C is refused, or A no longer takes itself for its holder.
     */
    @Test
    void aShorterRenewalOfTwoHeldClaimsWhoseSecondAnswerWasLostLeavesNeitherBelievedPastItsTerm() {
        Locker a = locker("a", store);
        Object ta = new Object();
        a.writeLock(x, ta);
        a.writeLock(y, ta);
        a.checkLocks(ta);
        clock.advance(Duration.ofSeconds(1));
        store.failTheReadAfterWrites(1);
        assertThrows(LockingException.class, () -> a.renewLocks(ta, SHORTER));
        clock.advance(SHORTER.plusSeconds(1));
        assertOneHolder(a, ta, x);
        assertOneHolder(a, ta, y);
    }

    private void assertOneHolder(Locker a, Object ta, KeyColumn lock) {
        Locker c = locker("c-" + lockers.size(), shared);
        Object tc = new Object();
        boolean cHolds;
        try {
            Interleavings.take(c, lock, tc);
            cHolds = Interleavings.believesItHolds(c, lock, tc, clock);
        } catch (TemporaryLockingException refused) {
            cHolds = false;
        }
        boolean aHolds = Interleavings.believesItHolds(a, lock, ta, clock);
        assertTrue(!cHolds || !aHolds, () -> "TWO HOLDERS of " + lock + ": C took it while A believes it holds it,"
                + " after A's renewal for " + SHORTER + " failed");
    }
}
