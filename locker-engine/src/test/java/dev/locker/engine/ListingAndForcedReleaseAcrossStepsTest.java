package dev.locker.engine;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.LockInfo;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.OptionalLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A listing and a forced release by token judge claims like a check does, across steps of the wall clock. */
class ListingAndForcedReleaseAcrossStepsTest extends JudgingScenario {

    private static final byte[] RECORD = "operator".getBytes(StandardCharsets.UTF_8);

    private List<LockInfo> listed(ConsistentKeyDriver d) {
        return d.list(new byte[0], 100, null).locks();
    }

    /** A holds; NTP steps the clock 60 s forward, and B sees it: B's listing still shows A's lock and token. */
    @Test
    void aListingAfterAForwardStepTheGuardSawShowsTheHolder() {
        ConsistentKeyDriver a = driver("a");
        ConsistentKeyDriver b = driver("b");
        ConsistentKeyClaim held = a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
        clock.advance(Duration.ofSeconds(1));
        b.readHolder(other);
        clock.stepWallClock(Duration.ofSeconds(60));
        b.readHolder(other);
        clock.advance(Duration.ofSeconds(1));
        List<LockInfo> locks = listed(b);
        assertEquals(1, locks.size(), () -> "B lists " + locks + " while A holds");
        assertEquals(held.fencingToken(), locks.get(0).fencingToken());
    }

    /**
     * The same step, then an operator on B force-releases A's lock by A's token: the release finds A's claim, and A's
     * next check learns it lost the lock.
     */
    @Test
    void aForcedReleaseByTokenAfterAForwardStepTheGuardSawFindsTheHolder() {
        ConsistentKeyDriver a = driver("a");
        ConsistentKeyDriver b = driver("b");
        ConsistentKeyClaim held = a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
        clock.advance(Duration.ofSeconds(1));
        b.readHolder(other);
        clock.stepWallClock(Duration.ofSeconds(60));
        b.readHolder(other);
        clock.advance(Duration.ofSeconds(1));
        assertTrue(b.remove(lock, OptionalLong.of(held.fencingToken()), RECORD), "the release missed A's claim");
        assertThrows(ExpiredLockException.class, () -> a.verify(lock, held));
    }

    /**
     * A crashed, and B's listing saw its claim dead. NTP sets the clock back an hour: B neither lists A's claim nor
     * finds it the holder to release by its token.
     */
    @Test
    void aClaimAListingJudgedDeadIsNeitherListedNorReleasedAfterTheClockIsSetBack() {
        ConsistentKeyDriver a = driver("a");
        ConsistentKeyDriver b = driver("b");
        ConsistentKeyClaim held = a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
        clock.advance(EXPIRY.plusSeconds(1));
        assertTrue(listed(b).isEmpty(), "B lists A's claim after its expiry");
        clock.stepWallClock(Duration.ofHours(-1));
        clock.advance(Duration.ofSeconds(1));
        assertTrue(listed(b).isEmpty(), "A's claim, judged dead, is listed again after the clock went back an hour");
        assertFalse(b.remove(lock, OptionalLong.of(held.fencingToken()), RECORD),
                "A's dead claim was released as the holder after the clock went back an hour");
    }
}
